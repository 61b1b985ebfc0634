"""Prompt templates: Jinja2 files under ``prompts/`` rendered in a sandbox, with their answer type as data.

A template file starts with a Jinja comment holding TOML metadata::

    {#- judge
    answer = "rating"        # or "yesno"
    quality = "Interesting"  # quality the prompt asks about (optional for yesno)
    level = "turn"           # "turn" or "dialog" (optional: any)
    min = 0                  # rating scale; defaults to the quality's scale
    max = 2
    reads = ["reference"]    # inputs beyond the conversation (optional): "reference", "next_user",
                             # "alternatives"
    family = "fedq-turn"     # prompts written to share all but their last line (optional)
    shared_until = "Question:"  # the family's shared part ends where this text last occurs (optional)
    split_instructions = false  # opt out: evaluate the text before the item with it (default true)
    cue = "Verdict:"         # the answer line's beginning, for a template that places its own rationale
    -#}

A pairwise template (``answer = "pairwise"``) shows two replies to one context side by side and asks which
is better: ``labels = ["A", "B"]`` name the reply shown first and the one shown second (default A and B),
``tie = "tie"`` an allowed tie (optional); each must be a single token of the judge model. It sees
``response_a`` and ``response_b`` besides ``item`` (the context both replies answer; its ``response`` is
the first reply's), and no examples (:mod:`judge.scorers.pairwise`).

Templates see ``item`` (the test item), ``examples`` (list of ``{"item": ..., "label": ...}``),
``quality`` (name, description, min, max) and ``answer`` (``{"kind", "min", "max"}``).
An item is a plain mapping: ``id, level, context, response, dialog, fact``, where turns are
``{"speaker": "user"|"system", "text": ...}``; plus ``references`` only when the template declares
``reads = ["reference"]`` and ``next_user`` (the user's turn after the rated response) only when it
declares ``"next_user"``; ``alternatives`` (the distinct replies to the same context among the items
being scored, its own included, in one fixed order: :mod:`judge.data.alternatives`) only when it declares
``"alternatives"``. The declaration is what reports use to tell reference-based, uses-future and
listwise methods apart, so an undeclared read is an error at render time, not a silent one.

A method with ``reason = N`` has the model write a rationale before it answers
(:meth:`PromptTemplate.render_reasoned`): the prompt's last line is its answer cue (``Answer:``,
``Rating:``), which is replaced by the request for a rationale and an answer line that begins with that
cue (``prompts/_reason.j2``, the one text every such template gets). A template that places the rationale
itself reads ``reason`` (None without it; else ``{"tokens": N, "cue": ...}``) and declares its ``cue``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

from ..core.errors import TemplateError, UnknownNameError
from ..core.sandbox import StrictSandbox, render_error
from ..data.items import SYSTEM, USER, Item, Turn
from ..data.qualities import Quality, find_quality
from .answers import AnswerType, Pairwise, Rating, YesNo

_FRONT = re.compile(r"\A\s*\{#-?\s*judge\s*\n(?P<toml>.*?)-?#\}\s*", re.S)


def short_sha(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``text`` (UTF-8): what a row records of the prompt its model
    read and of the template that rendered it, so that ``judge view`` can tell a prompt rebuilt from an edited
    template from the one the run sent."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def prompts_dir() -> Path:
    """The folder of built-in templates: ``prompts/`` in a checkout, ``judge/_prompts`` when installed."""
    here = Path(__file__).resolve().parents[1]
    for cand in (here.parent / "prompts", here / "_prompts"):
        if cand.is_dir():
            return cand
    raise TemplateError(f"built-in prompts folder not found next to {here}")


@dataclass(frozen=True)
class PromptTemplate:
    """A parsed template with its metadata. ``render`` turns an item (+ examples) into prompt text."""

    name: str
    path: Path
    source: str
    answer: AnswerType
    quality: Quality | None
    level: str | None
    #: Inputs beyond the conversation the template reads (``reference``, ``next_user``, ``alternatives``).
    reads: frozenset[str] = frozenset()
    #: The family of prompts this one was written to share a prefix with (None: none declared).
    family: str | None = None
    #: The text before which the family's shared part ends (its last occurrence in a rendered prompt).
    shared_until: str | None = None
    #: The template's item-independent text is evaluated as batches of its own (``instructions_chars``): on
    #: for every template unless its metadata says ``split_instructions = false``.
    split_instructions: bool = True
    #: The answer line's beginning (``Answer:``) of a template that places its own request for a rationale
    #: (it reads ``reason``); None for the others, whose last line is their cue (:meth:`render_reasoned`).
    cue: str | None = None

    @property
    def sha(self) -> str:
        """The short SHA-256 of the template's source (:func:`short_sha`), which rows record."""
        return short_sha(self.source)

    def shared_chars(self, text: str) -> int:
        """How many leading characters of a rendered prompt its family shares: up to the last occurrence
        of ``shared_until`` (0 when undeclared or absent). The llama.cpp backend evaluates that part as
        batches of its own, so that the family's next prompt reuses it and each answer is the same
        whichever prompt of the family ran before."""
        return max(text.rfind(self.shared_until), 0) if self.shared_until else 0

    def instructions_chars(self, text: str, quality: Quality | None = None, *, level: str | None = None,
                           examples: Sequence[tuple[Item, str]] | None = ()) -> int:
        """How many leading characters of a rendered prompt no item changes (0 with ``split_instructions =
        false``): the template's instructions, and with them the examples when they are the same for every
        item. ``examples`` are the (example, label) pairs the prompt shows when the selector chose them
        without looking at the item (``Selector.fixed_examples``; ``()``: zero-shot), or None when they
        vary from item to item, so that the text no item changes ends before the first of them. The
        llama.cpp backend evaluates that part as batches of its own, so that consecutive items reuse it
        and each answer is the same whichever item ran before. Found by rendering the template for
        sentinel items of the prompt's ``level`` (None: both levels) with those examples (:func:`fixed_head`);
        0 when ``text`` does not begin with that head."""
        if not self.split_instructions:
            return 0
        head = fixed_head(self, quality or self.quality, level, examples)
        return len(head) if head and text.startswith(head) else 0

    @property
    def pairwise(self) -> bool:
        """Whether the template compares two replies (``answer = "pairwise"``)."""
        return isinstance(self.answer, Pairwise)

    def render(self, item: Item, examples: Sequence[tuple[Item, str]] = (), quality: Quality | None = None,
               alternatives: Sequence[str] = (), pair: tuple[str, str] | None = None) -> str:
        """Render the prompt for ``item`` with ``examples`` given as (example item, shown label) and, for a
        template that reads them, the ``alternatives`` replies to its context; a pairwise template gets the
        two replies it compares as ``pair`` (shown as ``response_a`` and ``response_b``)."""
        return self._render(item, examples, quality, alternatives, None, pair)

    def render_reasoned(self, item: Item, examples: Sequence[tuple[Item, str]] = (), quality: Quality | None = None,
                        alternatives: Sequence[str] = (), *, tokens: int) -> tuple[str, str]:
        """The prompt of a judge that writes a rationale of at most ``tokens`` tokens before it answers, and its
        answer cue: (text, cue). The text no item changes stays what :meth:`render` begins with (the same
        instructions, examples and item), so a method's prompts share their prefix with or without reason.

        A template that reads ``reason`` is rendered with it (``{"tokens": N, "cue": cue}``) and placed the
        request itself. Any other has its last line taken as its cue and replaced by the request for a
        rationale and an answer line that begins with the cue (``prompts/_reason.j2``)."""
        if self.cue is not None:
            return self._render(item, examples, quality, alternatives, {"tokens": tokens, "cue": self.cue}), self.cue
        text = self.render(item, examples, quality, alternatives)
        head, _, last = text.rpartition("\n")
        cue = last.strip()
        if not cue or len(cue) > MAX_CUE_CHARS:
            shown = repr(cue[:40] + "...") if len(cue) > MAX_CUE_CHARS else "an empty line"
            raise TemplateError(
                f"{self.path}: with reason set, the prompt's last line is its answer cue (such as 'Answer:'), but "
                f"this prompt ends with {shown}; end the template with its cue, or place the rationale in it: read "
                "'reason' and declare the cue in the metadata (cue = \"Answer:\")")
        request = _reason_request().render({"cue": cue, "answer": _answer_view(self.answer), "tokens": tokens})
        return (head + "\n" if head else "") + request, cue

    def _render(self, item: Item, examples: Sequence[tuple[Item, str]], quality: Quality | None,
                alternatives: Sequence[str], reason: dict[str, Any] | None,
                pair: tuple[str, str] | None = None) -> str:
        q = quality or self.quality
        ctx: dict[str, Any] = {
            "item": item_view(item, self.reads, alternatives),
            "examples": [{"item": item_view(ex, self.reads), "label": label} for ex, label in examples],
            "quality": _quality_view(q),
            "answer": _answer_view(self.answer),
            "reason": reason,
        }
        if pair is not None:
            ctx["response_a"], ctx["response_b"] = pair
        template = _compile(self.path, self.source)
        try:
            return template.render(ctx)
        except Exception as exc:  # the template is untrusted code: whatever it raises is its own fault
            text = render_error(exc)
            hidden = [k for k in TEMPLATE_READS if k not in self.reads and f"'{TEMPLATE_READS[k]}'" in text]
            if hidden:
                text += (f" ({TEMPLATE_READS[hidden[0]]} is shown only to templates that declare it: add "
                         f'reads = ["{hidden[0]}"] to the template\'s metadata block)')
            raise TemplateError(f"{self.path}: {text}") from None

    def example_label(self, example: Item, quality: Quality) -> str:
        """The label an in-context example shows, from its human mean for ``quality``."""
        human = example.human(quality.name)
        if human is None:
            raise TemplateError(f"example {example.id} has no human rating for {quality.name}")
        # The labels shown depend on the human scale: never guess it (InputError when undeclared).
        lo, hi = quality.scale("showing human ratings as example labels")
        if quality.negative:  # the prompt asks for the good direction (not robotic): the example's label too
            human = lo + hi - human
        if isinstance(self.answer, Pairwise):
            raise TemplateError(f"{self.path}: a pairwise template shows no examples")
        if isinstance(self.answer, Rating):
            if (lo, hi) != (self.answer.min, self.answer.max):
                # A generic prompt on another scale: map the human mean linearly onto the prompt's scale.
                frac = (human - lo) / (hi - lo)
                human = self.answer.min + frac * (self.answer.max - self.answer.min)
            return self.answer.format_label(human)
        return self.answer.format_label(human, lo, hi)


#: The longest last line taken as a template's answer cue.
MAX_CUE_CHARS = 40
#: The request for a rationale that replaces a prompt's cue line (:meth:`PromptTemplate.render_reasoned`).
REASON_PARTIAL = "_reason.j2"


@lru_cache(maxsize=1)
def _reason_request() -> jinja2.Template:
    path = prompts_dir() / REASON_PARTIAL
    return _compile(path, path.read_text(encoding="utf-8"))


def _sentinel_items() -> list[tuple[Item, list[str]]]:
    """Items (with alternatives) that differ in every field a template can show: both levels, with and
    without background, turns of either speaker first, other replies, references and next user turns."""
    def turns(*spoken: tuple[str, str]) -> tuple[Turn, ...]:
        return tuple(Turn(who, text) for who, text in spoken)

    return [
        (Item(id="a", level="turn", context=turns((USER, "alpha one"), (SYSTEM, "alpha two")), response="alpha",
              fact="alpha fact", references=("alpha ref",), next_user="alpha next"), ["alpha", "alpha bis"]),
        (Item(id="b", level="turn", context=turns((SYSTEM, "beta one")), response="beta",
              references=("beta ref",), next_user="beta next"), ["beta"]),
        (Item(id="c", level="dialog", dialog=turns((USER, "gamma one"), (SYSTEM, "gamma two")), fact="gamma fact"), []),
        (Item(id="d", level="dialog", dialog=turns((SYSTEM, "delta one"), (USER, "delta two"))), []),
    ]


def _sentinel_examples(level_items: list[tuple[Item, list[str]]]) -> list[list[tuple[Item, str]]]:
    """Examples that vary from one sentinel item to the next: each shows the next sentinel, with a label of
    its own, so the text common to all renderings ends before the first example."""
    n = len(level_items)
    return [[(level_items[(i + 1) % n][0], str(i))] for i in range(n)]


def common_head(texts: list[str]) -> str:
    """The longest text every one of ``texts`` begins with, cut back to just after a line break that every
    text follows with a visible character. Tokenizers merge a line break with the text before it (a full
    stop and the break can be one token) and with the breaks after it, not with a word after it: cut
    there, the head tokenizes as a prefix of the prompt (the backend checks it all the same). Empty for
    fewer than two texts."""
    if len(texts) < 2:
        return ""
    # The lexicographically first and last texts differ first where any two of them do.
    first, last = min(texts), max(texts)
    common = first[:next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), len(first))]
    for end in range(len(common), 0, -1):
        if common[end - 1] == "\n" and all(len(t) > end and not t[end].isspace() for t in texts):
            return common[:end]
    return ""


#: Heads found so far, by (template, quality, level, the examples' identities and labels; "varying"), oldest
#: first; each entry holds its example objects, so that no identity in a key can pass to another object.
_HEADS: OrderedDict[tuple[object, ...], tuple[str, tuple[tuple[Item, str], ...]]] = OrderedDict()
_HEADS_MAX = 1024
_HEADS_LOCK = threading.Lock()


def fixed_head(template: PromptTemplate, quality: Quality | None, level: str | None,
               examples: Sequence[tuple[Item, str]] | None = ()) -> str:
    """The text every rendering of ``template`` begins with, whatever the item: the common head
    (:func:`common_head`) of its renderings for the sentinel items of ``level`` (None: both levels; those
    it cannot render are left out) with ``examples`` (the same for every item), or with examples that vary
    from sentinel to sentinel when ``examples`` is None. Kept per template, quality, level and examples
    (a manual set's few variants), so a run renders the sentinels once per variant, not once per item."""
    shown = None if examples is None else tuple(examples)
    key = (template, quality, level, "varying" if shown is None else tuple((id(ex), label) for ex, label in shown))
    with _HEADS_LOCK:
        if key in _HEADS:
            _HEADS.move_to_end(key)
            return _HEADS[key][0]
    items = [(it, alts) for it, alts in _sentinel_items() if level is None or it.level == level]
    per_item = _sentinel_examples(items) if shown is None else [list(shown)] * len(items)
    texts = []
    for (item, alternatives), exs in zip(items, per_item, strict=True):
        # A pairwise template compares two replies: each sentinel brings two of its own.
        pair = (item.response or "", f"{item.response} bis") if template.pairwise and item.level == "turn" else None
        with contextlib.suppress(TemplateError):
            texts.append(template.render(item, exs, quality, alternatives, pair))
    head = common_head(texts)
    with _HEADS_LOCK:
        _HEADS[key] = (head, shown or ())
        if len(_HEADS) > _HEADS_MAX:
            _HEADS.popitem(last=False)
    return head


#: Inputs a template may declare under ``reads``, and the item field each one shows.
TEMPLATE_READS = {"reference": "references", "next_user": "next_user", "alternatives": "alternatives"}


def item_view(item: Item, reads: frozenset[str] = frozenset(), alternatives: Sequence[str] = ()) -> dict[str, Any]:
    """A plain mapping of an item for templates (no Python objects reach the sandbox). References, the
    next user turn and the alternatives are shown only when ``reads`` declares them."""
    view: dict[str, Any] = {"id": item.id, "level": item.level,
                            "context": [{"speaker": t.speaker, "text": t.text} for t in item.context],
                            "response": item.response,
                            "dialog": [{"speaker": t.speaker, "text": t.text} for t in item.dialog], "fact": item.fact}
    if "reference" in reads:
        view["references"] = list(item.references)
    if "next_user" in reads:
        view["next_user"] = item.next_user
    if "alternatives" in reads:
        view["alternatives"] = list(alternatives)
    return view


def _quality_view(q: Quality | None) -> dict[str, Any] | None:
    if q is None:
        return None
    lo, hi = (q.min, q.max) if q.has_scale else (None, None)
    return {"name": q.name, "description": q.description, "min": lo, "max": hi, "level": q.level}


def _answer_view(a: AnswerType) -> dict[str, Any]:
    if isinstance(a, Rating):
        return {"kind": "rating", "min": a.min, "max": a.max}
    if isinstance(a, Pairwise):
        return {"kind": "pairwise", "first": a.first, "second": a.second, "tie": a.tie}
    return {"kind": "yesno"}


class _Loader(jinja2.BaseLoader):
    """Resolves ``{% include %}`` against the built-in folder and the including template's folder."""

    def __init__(self, extra: Path | None) -> None:
        self.dirs = [d for d in (extra, prompts_dir()) if d is not None]

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        for d in self.dirs:
            p = (d / template).resolve()
            if p.is_file() and d.resolve() in p.parents:
                src = p.read_text(encoding="utf-8")
                return src, str(p), lambda: True
        raise jinja2.TemplateNotFound(template)


def _environment(path: Path) -> jinja2.Environment:
    """The sandbox a template of ``path`` renders in (its includes resolved beside it, then built-in)."""
    return StrictSandbox(loader=_Loader(path.parent), undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
                         autoescape=False)


@lru_cache(maxsize=256)
def _compile(path: Path, source: str) -> jinja2.Template:
    env = _environment(path)
    try:
        return env.from_string(_FRONT.sub("", source, count=1))
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"{path}: template syntax error on line {exc.lineno}: {exc.message}") from None


def parse_metadata(path: Path, source: str) -> dict[str, Any]:
    """Read the TOML front matter of a template (empty dict if there is none)."""
    m = _FRONT.match(source)
    if not m:
        return {}
    try:
        return tomllib.loads(m.group("toml"))
    except tomllib.TOMLDecodeError as exc:
        raise TemplateError(f"{path}: bad metadata block: {exc}") from None


def load_template(path: str | Path, *, name: str | None = None, quality: Quality | None = None) -> PromptTemplate:
    """Load a template file (built-in or a user's own) and validate its metadata and syntax."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TemplateError(f"{path}: template file not found") from None
    except IsADirectoryError:
        raise TemplateError(f"{path}: is a directory, expected a template file") from None
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read template: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TemplateError(f"{path}: template is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    meta = parse_metadata(path, source)
    allowed = {"answer", "quality", "level", "min", "max", "threshold", "description", "reads", "family",
               "shared_until", "split_instructions", "cue", "labels", "tie"}
    unknown = set(meta) - allowed
    if unknown:
        raise TemplateError(f"{path}: unknown metadata keys {sorted(unknown)}; allowed: {sorted(allowed)}")
    for key in ("min", "max", "threshold"):
        if key in meta and (isinstance(meta[key], bool) or not isinstance(meta[key], (int, float))
                             or not math.isfinite(meta[key])):
            raise TemplateError(f"{path}: metadata '{key}' must be a finite number, not {meta[key]!r}")
    for key in ("answer", "quality", "level", "description", "family", "shared_until", "cue"):
        if key in meta and not isinstance(meta[key], str):
            raise TemplateError(f"{path}: metadata '{key}' must be a string, not {meta[key]!r}")
    if not isinstance(meta.get("split_instructions", False), bool):
        raise TemplateError(f"{path}: metadata 'split_instructions' must be true or false, not {meta['split_instructions']!r}")
    if not 0 < meta.get("threshold", 0.5) < 1:
        raise TemplateError(f"{path}: metadata 'threshold' must be between 0 and 1, not {meta['threshold']!r}")
    reads = meta.get("reads", [])
    if not isinstance(reads, list) or any(r not in TEMPLATE_READS for r in reads):
        raise TemplateError(f"{path}: metadata 'reads' must be a list of {sorted(TEMPLATE_READS)}, not {reads!r}")
    level = meta.get("level")
    if level not in (None, "turn", "dialog"):
        raise TemplateError(f"{path}: metadata 'level' must be 'turn' or 'dialog', not {level!r}")
    q = quality
    if q is None and "quality" in meta:
        q = find_quality(str(meta["quality"]), level)
        if q is None:
            lo, hi = meta.get("min"), meta.get("max")
            if lo is None or hi is None:
                raise TemplateError(f"{path}: unknown quality {meta['quality']!r}: give its 'min' and 'max'")
            q = Quality(str(meta["quality"]), level or "turn", lo, hi, str(meta.get("description", "")))
    kind = meta.get("answer", "yesno")
    if kind == "rating":
        scaled = q if q is not None and q.has_scale else None
        lo = meta.get("min", scaled.min if scaled else None)
        hi = meta.get("max", scaled.max if scaled else None)
        if lo is None or hi is None:
            raise TemplateError(f"{path}: a rating template needs 'min' and 'max' or a known 'quality'")
        if int(lo) != lo or int(hi) != hi or hi <= lo:
            raise TemplateError(f"{path}: rating scale must be integers with min < max, got {lo}..{hi}")
        answer: AnswerType = Rating(int(lo), int(hi))
    elif kind == "yesno":
        answer = YesNo(threshold=float(meta.get("threshold", 0.5)))
    elif kind == "pairwise":
        answer = _pairwise_answer(path, meta)
    else:
        raise TemplateError(f"{path}: metadata 'answer' must be 'rating', 'yesno' or 'pairwise', not {kind!r}")
    for key in ("labels", "tie"):
        if key in meta and kind != "pairwise":
            raise TemplateError(f"{path}: metadata '{key}' belongs to pairwise templates (answer = \"pairwise\")")
    _compile(path, source)  # syntax errors surface at load time, not mid-run
    family = meta.get("family")
    if "shared_until" in meta and (not family or not meta["shared_until"]):
        raise TemplateError(f"{path}: metadata 'shared_until' needs a 'family' and a non-empty text")
    return PromptTemplate(name or path.stem, path, source, answer, q, level, frozenset(reads),
                          str(family) if family else None, meta.get("shared_until"),
                          meta.get("split_instructions", True), _reason_cue(path, meta, source))


def _reason_cue(path: Path, meta: dict[str, Any], source: str) -> str | None:
    """The declared ``cue`` of a template whose own text reads ``reason`` (it places the request for a
    rationale itself); a template that reads it without a cue, or declares a cue without reading it, is
    refused: the cue says where the answer is read, and only such a template moves it."""
    env = _environment(path)
    reads = "reason" in jinja2.meta.find_undeclared_variables(env.parse(_FRONT.sub("", source, count=1)))
    cue = meta.get("cue")
    if reads and not (cue and cue.strip()):
        raise TemplateError(f"{path}: the template reads 'reason' (it places the request for a rationale itself), so "
                            "it must declare where the answer line begins: cue = \"Answer:\" in its metadata")
    if cue is not None and not reads:
        raise TemplateError(f"{path}: metadata 'cue' is for a template that places its own request for a rationale "
                            "(it reads 'reason'); without it, the prompt's last line is the cue")
    return cue.strip() if cue else None


def _pairwise_answer(path: Path, meta: dict[str, Any]) -> Pairwise:
    """A pairwise template's labels: ``labels`` (the first reply's and the second's, default A and B) and an
    optional ``tie``, all distinct non-empty texts; pairwise templates compare replies to one context."""
    labels = meta.get("labels", ["A", "B"])
    tie = meta.get("tie")
    if not (isinstance(labels, list) and len(labels) == 2 and all(isinstance(x, str) and x.strip() for x in labels)):
        raise TemplateError(f"{path}: metadata 'labels' must be two non-empty texts (first reply, second reply), "
                            f"not {labels!r}")
    if tie is not None and not (isinstance(tie, str) and tie.strip()):
        raise TemplateError(f"{path}: metadata 'tie' must be a non-empty text, not {tie!r}")
    if len({*labels, *([tie] if tie else [])}) != len(labels) + (1 if tie else 0):
        raise TemplateError(f"{path}: metadata 'labels' and 'tie' must be distinct, got {labels!r} and {tie!r}")
    if meta.get("level") == "dialog":
        raise TemplateError(f"{path}: a pairwise template compares replies to one context: its level is 'turn'")
    return Pairwise(labels[0], labels[1], tie)


def builtin_prompts() -> dict[str, Path]:
    """Names of the built-in prompts (file stems; files starting with '_' are partials)."""
    return {p.stem: p for p in sorted(prompts_dir().glob("*.j2")) if not p.name.startswith("_")}


def get_prompt(name: str) -> PromptTemplate:
    """A built-in prompt by name (e.g. ``yesno``, ``fed-turn-interesting``, ``rating``)."""
    prompts = builtin_prompts()
    if name not in prompts:
        raise UnknownNameError("prompt", name, prompts)
    return load_template(prompts[name], name=name)


#: Prompt names that stand for one built-in prompt per FED quality: the paper's (``fed``) and the
#: shared-prefix family (``fedq``: conversation first, the quality's question last).
PER_QUALITY_PROMPTS = ("fed", "fedq")


def is_template_path(prompt: str) -> bool:
    """A prompt given as a file (``.j2``, or any path) rather than a built-in name."""
    return prompt.endswith(".j2") or "/" in prompt or "\\" in prompt or Path(prompt).is_file()


def per_quality_prompts(family: str) -> list[str]:
    """The built-in prompts of a per-quality family (``fed``, ``fedq``: one prompt per FED quality and
    level), as :func:`fed_prompt_name` names them."""
    return [name for name in builtin_prompts() if name.startswith(f"{family}-")]


def fed_prompt_name(level: str, quality: str, family: str = "fed") -> str:
    """Built-in rating prompt for a FED quality, e.g. ('turn', 'Semantically appropriate') ->
    ``fed-turn-semantically-appropriate``; ``family="fedq"`` gives the shared-prefix family's."""
    prefix = f"{family}-turn" if level == "turn" else f"{family}-dial"
    return f"{prefix}-{quality.lower().replace(' ', '-')}"
