"""How far raters of one labels file agree: Krippendorff's alpha per quality over the items at least two
raters labelled (each rater's latest label of an item counts), with a bootstrap interval that resamples the
conversations those items belong to, as every interval of judge does (one confused exchange makes raters
disagree on several of its replies). A labels file does not say which conversation an item belongs to: the
input the labels rate does (:func:`input_conversations`); without it there is no interval."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..data.items import conversation_of
from ..datasets.source import source_items
from ..records.labels import Label, latest_labels
from ..stats.agreement import krippendorff_alpha
from ..stats.correlation import boot_samples, percentiles
from ..stats.floor import MIN_CONVERSATIONS


@dataclass(frozen=True)
class Agreement:
    """One quality's agreement: ``n_items`` rated by two raters or more (the pairable units alpha reads),
    ``n_raters`` who rated any of them, ``n_labels`` their labels; alpha at the interval and ordinal levels,
    and the interval alpha's 95% percentile interval over ``n_boot`` resamples of the ``n_conversations`` those
    items belong to (None without the input that says which, and below :data:`judge.stats.floor.MIN_CONVERSATIONS`
    conversations, where an interval means nothing)."""

    quality: str
    n_items: int
    n_raters: int
    n_labels: int
    alpha_interval: float
    alpha_ordinal: float
    low: float | None
    high: float | None
    n_boot: int
    n_conversations: int | None = None


def input_conversations(source: str, data_dir: str | None = None) -> dict[str, str]:
    """Item id -> conversation (:func:`judge.data.items.conversation_of`) of the input the labels rate: a file,
    or a registered set's name under ``data_dir``, read as every command reads its input (rated or not)."""
    return {it.id: conversation_of(it) for it in source_items(source, data_dir)}


def agreement(labels: Sequence[Label], conversations: Mapping[str, str] | None = None, n_boot: int = 1000,
              seed: int = 0, file: str = "labels") -> list[Agreement]:
    """Per quality named in ``labels`` (first-seen order), the raters' agreement on the items they share, its
    interval resampling ``conversations`` (item id -> conversation; None: no interval). A labelled item the
    conversations do not name is an InputError naming ``file`` (labels of another input)."""
    by_quality: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for (item_id, rater), label in latest_labels(list(labels)).items():
        if rater is None:
            continue
        for quality, value in label.scores.items():
            by_quality[quality][item_id][rater] = value
    out = []
    for quality, items in by_quality.items():
        shared = {item: ratings for item, ratings in items.items() if len(ratings) >= 2}
        units = [list(r.values()) for r in shared.values()]
        convs = None if conversations is None else [_conversation(conversations, item, file) for item in shared]
        low = high = None
        if convs is not None and len(set(convs)) >= MIN_CONVERSATIONS:
            low, high = _interval(units, convs, n_boot, seed)
        out.append(Agreement(quality, len(units), len({r for u in shared.values() for r in u}), sum(map(len, units)),
                             krippendorff_alpha(units, "interval"), krippendorff_alpha(units, "ordinal"), low, high,
                             n_boot, None if convs is None else len(set(convs))))
    return out


def _conversation(conversations: Mapping[str, str], item: str, file: str) -> str:
    if item not in conversations:
        raise InputError(f"labelled item {item!r} is not in the input: labels of another input?", file=file,
                         record=item, field="id")
    return conversations[item]


def _interval(units: list[list[float]], convs: list[str], n_boot: int, seed: int) -> tuple[float | None, float | None]:
    """The 95% percentile interval of the interval alpha over resamples of whole conversations (with one item
    per conversation, the items' own resamples)."""
    draws = np.array([krippendorff_alpha([units[i] for i in sample], "interval")
                      for sample in boot_samples(len(units), convs, n_boot, seed)])
    finite = draws[np.isfinite(draws)]
    return percentiles(finite, 0.95) if len(finite) else (None, None)


def agreement_text(rows: Sequence[Agreement], path: str) -> str:
    """The report ``judge label --agreement`` prints."""
    if not rows:
        return f"{path}: no labels with a rater"
    lines = [f"agreement of the raters of {path} (each rater's latest label of an item; items rated by 2 or more)"]
    for a in rows:
        head = f"{a.quality}: {a.n_items} items rated by >= 2 of {a.n_raters} raters ({a.n_labels} labels)"
        if a.n_items == 0:
            lines.append(f"{head}: no item shared, no agreement to measure")
            continue
        ci = (f"95% CI [{a.low:.3f}, {a.high:.3f}] ({a.n_boot} bootstrap resamples of their {a.n_conversations} "
              "conversations)" if a.low is not None and a.high is not None
              else "no interval: name the input the labels rate (judge label INPUT --agreement LABELS), whose "
              "conversations an interval resamples" if a.n_conversations is None
              else f"no interval below {MIN_CONVERSATIONS} conversations ({a.n_conversations})")
        lines.append(f"{head}: Krippendorff's alpha {_num(a.alpha_interval)} (interval), "
                     f"{_num(a.alpha_ordinal)} (ordinal); {ci}")
    return "\n".join(lines)


def _num(x: float) -> str:
    return "nan (no variation)" if not math.isfinite(x) else f"{x:.3f}"
