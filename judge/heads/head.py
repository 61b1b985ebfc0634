"""A head: a linear map from the judge model's hidden state at the answer position to a score.

The file is small JSON, written by ``judge fit`` and read by the ``head`` method type. Besides the
weights it holds what makes them meaningful, so that they are never applied where they mean nothing:
the model (its file's sha256 and the backend settings the vectors came from), the prompt (name and a
hash of its template's text: the vector is the model's reading of that exact prompt), the training
sets with their item and conversation counts (reports name them) and the content fingerprints of their
conversations (a head refuses any item of a conversation it learned from, whatever file or name it comes
under: :mod:`judge.datasets.identity`), and the cross-validated figures of the fit.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.base import Backend
from ..core.errors import InputError, UnknownNameError
from ..core.io import atomic_write_text
from ..data.items import Item, conversation_of
from ..datasets.identity import may_share
from ..prompts.templates import PromptTemplate

FORMAT = "judge-head"
VERSION = 2
#: Version 1 files lack their training conversations' fingerprints: they are read, and refused for scoring
#: until ``judge fit DATA... --stamp HEAD`` records them.
READABLE = (1, 2)
#: How the ratings were turned into the target, and which vector was read (recorded in the file).
TARGET = "rank within set, scaled to [0, 1] (ties averaged)"
VECTOR = "final hidden state (after the final norm) at the answer position"


#: Heads shipped with judge, one JSON file each, named by the file's stem (``judge models`` lists them).
SHIPPED = Path(__file__).resolve().parent / "shipped"


def shipped_heads() -> dict[str, Path]:
    """The shipped heads by name."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.json"))}


def locate_head(ref: str) -> str:
    """The file a method's ``head`` names: a path (ending in ``.json``, with a directory part, or naming a
    file that exists) as it is, else a shipped head by name (names hold dots: ``...-1.5b``). An unknown
    name lists the shipped ones."""
    path = Path(ref).expanduser()
    if path.suffix == ".json" or len(path.parts) > 1 or path.exists():
        return str(path)
    shipped = shipped_heads()
    if ref not in shipped:
        raise UnknownNameError("head", ref, shipped)
    return str(shipped[ref])


def prompt_hash(prompt: PromptTemplate) -> str:
    """sha256 of the template's text: a head reads the model's state after that exact prompt."""
    return hashlib.sha256(prompt.source.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TrainingSet:
    """One set a head learned from: its name, quality, half (None: all of it), and its counts."""

    name: str
    quality: str
    split: str | None
    items: int
    conversations: int
    #: The file's resolved path for a set given by path (None: a registered set under the data dir).
    path: str | None = None
    #: The content fingerprints (``Item.conversation``) of every conversation of the set, both halves whichever
    #: it learned from, sorted: what the head refuses to score (a head fitted on one half of a set is
    #: supervised on that set, not a judge of its other half). None in a version 1 file, written before
    #: heads recorded them.
    conversation_fingerprints: tuple[str, ...] | None = None
    #: The resolved labels file whose ratings it learned instead of the set's own, and that file's sha256 when
    #: read (labels files grow: the hash says which labels), for a head fitted with ``judge fit --labels``.
    labels: str | None = None
    labels_sha256: str | None = None


@dataclass(frozen=True)
class Head:
    """Standardize with ``mean``/``scale``, then ``weights`` and ``bias``: ``predict`` gives the score.

    ``with_answer``: the prompt's own answer (its score by the prompt's rule) is the last feature,
    after the vector's ``dim`` values."""

    model: str
    backend: str
    settings: Mapping[str, Any]
    prompt: str
    prompt_sha256: str
    quality: str | None
    dim: int
    with_answer: bool
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    alpha: float
    trained_on: tuple[TrainingSet, ...]
    cv: Mapping[str, Any] = field(default_factory=dict)
    created: str = ""

    def features(self, vector: Sequence[float], answer: float | None) -> np.ndarray:
        """The head's input for one item: the vector, and the answer's score when the head reads it."""
        x = np.asarray(vector, dtype=np.float64)
        if self.with_answer:
            x = np.append(x, np.nan if answer is None else answer)
        return x

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``x`` (n x features)."""
        z = (np.atleast_2d(x) - np.asarray(self.mean)) / np.asarray(self.scale)
        return np.asarray(z @ np.asarray(self.weights) + self.bias)

    def check_compatible(self, backend: Backend, prompt: PromptTemplate) -> None:
        """Refuse a head on another model, model file, backend or prompt: its vectors would mean nothing."""
        settings = backend.settings()
        wanted: dict[str, tuple[object, object]] = {"model": (self.model, backend.model_id), "backend": (self.backend, backend.name),
                  "prompt": (self.prompt, prompt.name), "prompt_sha256": (self.prompt_sha256, prompt_hash(prompt))}
        if "sha256" in self.settings or "sha256" in settings:
            wanted["model file sha256"] = (self.settings.get("sha256"), settings.get("sha256"))
        for what, (head_value, here) in wanted.items():
            if head_value != here:
                raise InputError(f"the head was fitted with {what} {head_value!r}, this method has {here!r}: a head "
                                 "reads one model's hidden state after one prompt; fit one for this setup "
                                 "with judge fit", field="head")

    def describe(self) -> dict[str, Any]:
        """What reports show of the head: the sets it learned from and its cross-validated figure."""
        return {"trained_on": [f"{t.name}:{t.split or 'all'}" for t in self.trained_on], "cv": dict(self.cv)}

    def check_not_trained_on(self, items: Sequence[Item], where: str = "head") -> None:
        """Refuse items of any conversation of a set the head learned from (by content fingerprint, both halves
        of it; among the sets that can share one, :func:`judge.datasets.identity.may_share`), saying which sets
        and how many of the items' conversations; a head file that does not record its training conversations
        (version 1) is refused too, as nothing could be checked."""
        if any(t.conversation_fingerprints is None for t in self.trained_on):
            raise InputError("the head file does not record the conversations it learned from (written by an "
                             "older judge), so nothing can keep it off them: record them with judge fit DATA... "
                             "--stamp HEAD, giving the sets it learned from", file=where, field="head")
        learned = [(t, set(t.conversation_fingerprints or ())) for t in self.trained_on]
        hit = [it for it in items if any(conversation_of(it) in fps and may_share(t.name, it.dataset)
                                         for t, fps in learned)]
        if not hit:
            return
        conversations, overlap = {conversation_of(it) for it in items}, {conversation_of(it) for it in hit}
        sets = [f"{t.name} ({t.split or 'all of it'})" for t, fps in learned if overlap & fps]
        names = sorted({it.dataset for it in hit if it.dataset})
        raise InputError(f"the head learned from {', '.join(sets)}, which hold{'s' if len(sets) == 1 else ''} "
                         f"{len(overlap)} of the {len(conversations)} conversations of the scored items ({len(hit)} "
                         f"of {len(items)} items{' of ' + ', '.join(names) if names else ''}): score them with a "
                         "head that never saw them (judge fit --without-each)", file=where, field="head")

    def to_json(self) -> str:
        data = {"format": FORMAT, "version": VERSION, "target": TARGET, "vector": VECTOR, **asdict(self)}
        return json.dumps(data, indent=1, sort_keys=False) + "\n"

    def write(self, path: str | Path) -> None:
        """Write the head atomically (a crash leaves the old file or the new one, never half of one)."""
        atomic_write_text(path, self.to_json())


def _need(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], file: str) -> Any:
    if key not in data:
        raise InputError("missing", file=file, field=key)
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError(f"expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}", file=file, field=key)
    return value


def _floats(data: Mapping[str, Any], key: str, n: int, file: str) -> tuple[float, ...]:
    values = _need(data, key, list, file)
    if len(values) != n or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                                   for v in values):
        raise InputError(f"expected {n} finite numbers", file=file, field=key)
    return tuple(float(v) for v in values)


def read_head(path: str | Path) -> Head:
    """Read and check a head file; every problem names the file and the field."""
    file = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("head file not found", file=file) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a readable head file: {exc}", file=file) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not a head file (no \"format\": \"{FORMAT}\")", file=file, field="format")
    if data.get("version") not in READABLE:
        raise InputError(f"head file version {data.get('version')!r}; this judge reads versions "
                         f"{', '.join(map(str, READABLE))}", file=file, field="version")
    dim = _need(data, "dim", int, file)
    with_answer = _need(data, "with_answer", bool, file)
    n = dim + (1 if with_answer else 0)
    scale = _floats(data, "scale", n, file)
    if any(s <= 0 for s in scale):
        raise InputError("scales must be positive", file=file, field="scale")
    sets = []
    for i, t in enumerate(_need(data, "trained_on", list, file)):
        try:
            fps = t.get("conversation_fingerprints") if isinstance(t, dict) else None
            if fps is not None and not (isinstance(fps, list) and all(isinstance(f, str) for f in fps)):
                raise TypeError("conversation_fingerprints must be a list of strings")
            sets.append(TrainingSet(**{**t, "conversation_fingerprints": None if fps is None else tuple(fps)}))
        except TypeError as exc:
            raise InputError(f"not a training set: {exc}", file=file, field=f"trained_on[{i}]") from None
    quality = data.get("quality")
    return Head(
        model=_need(data, "model", str, file), backend=_need(data, "backend", str, file),
        settings=_need(data, "settings", dict, file), prompt=_need(data, "prompt", str, file),
        prompt_sha256=_need(data, "prompt_sha256", str, file), quality=quality if isinstance(quality, str) else None,
        dim=dim, with_answer=with_answer, mean=_floats(data, "mean", n, file), scale=scale,
        weights=_floats(data, "weights", n, file), bias=float(_need(data, "bias", (int, float), file)),
        alpha=float(_need(data, "alpha", (int, float), file)), trained_on=tuple(sets),
        cv=_need(data, "cv", dict, file), created=str(data.get("created", "")))
