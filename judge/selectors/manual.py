"""``manual``: a fixed, named set of examples per quality, the same for every test item.

A set is stored as references to dataset item ids (never benchmark text), resolved against the
pool (the user's copy of the data) at run time. Shipped sets live in ``prompts/manual/*.toml``
(``fed``: 3 examples per FED quality, turn and dialog level, spanning the rating range; see
``tools/make_manual_sets.py`` for the rule that chose them). Users can name their own file:

* TOML, the shipped schema: ``[turn."Overall"]`` / ``[dialog."Coherent"]`` tables (or a top-level
  table for every quality) with ``examples = ["id", ...]`` and optionally
  ``alternates = [["id", ...], ...]``, one list per example: stand-ins used, in listed order, when
  the test item is that example or (group guard on) shares its group;
* JSONL in the users' item format (docs/data-format.md): the lines themselves are the examples,
  with their ``scores``, for every quality; they need not be in the pool.

The first k examples of the set are used (all of them when k is larger). The file order is the
prompt order under the default "ascending" order (the last listed example is nearest the test
item); "descending" reverses it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import InputError, UnknownNameError
from ..data.items import Item
from ..data.qualities import Quality
from ..datasets import load_items
from ..prompts.templates import prompts_dir
from .base import Selector
from .guard import allowed

_ANY = "*"


@dataclass(frozen=True)
class Entry:
    """The examples of one quality: ids in prompt order, and per example its stand-in ids."""

    examples: tuple[str, ...]
    alternates: tuple[tuple[str, ...], ...] = ()

    def slots(self) -> list[tuple[str, ...]]:
        """Per example: its id followed by its alternates."""
        alts = list(self.alternates) + [()] * (len(self.examples) - len(self.alternates))
        return [(ex, *alt) for ex, alt in zip(self.examples, alts)]

    def ids(self) -> list[str]:
        return [i for slot in self.slots() for i in slot]


@dataclass(frozen=True)
class ManualSet:
    """A parsed manual set: entries per (level, quality) and any inline example items."""

    name: str
    path: Path
    datasets: tuple[str, ...] = ()
    rule: str = ""
    entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    inline: dict[str, Item] = field(default_factory=dict)

    def entry(self, level: str, quality: str) -> Entry:
        """The entry for a quality at a level (falling back to one given for every quality)."""
        for key in ((level, quality.lower()), (_ANY, quality.lower()), (level, _ANY), (_ANY, _ANY)):
            if key in self.entries:
                return self.entries[key]
        have = sorted(f"{lv}/{q}" for lv, q in self.entries)
        raise InputError(f"manual set '{self.name}' has no examples for quality '{quality}' at {level} level; "
                         f"it has: {', '.join(have) or 'none'}", file=str(self.path))


def manual_dir() -> Path:
    """Folder of the shipped manual sets (``prompts/manual``)."""
    return prompts_dir() / "manual"


def shipped_sets() -> dict[str, Path]:
    """Names of the shipped manual sets -> their files."""
    d = manual_dir()
    return {p.stem: p for p in sorted(d.glob("*.toml"))} if d.is_dir() else {}


def load_manual_set(name_or_path: str | Path) -> ManualSet:
    """A shipped set by name (e.g. "fed") or a user's TOML / JSONL file."""
    sets = shipped_sets()
    if isinstance(name_or_path, str) and name_or_path in sets:
        path = sets[name_or_path]
    else:
        path = Path(name_or_path)
        if not path.is_file():
            if path.suffix.lower() not in (".toml", ".jsonl") and len(path.parts) == 1:
                raise UnknownNameError("manual set", str(name_or_path), sets)
            raise InputError("manual set file not found", file=str(path))
    if path.suffix.lower() == ".jsonl":
        items = load_items(path)
        return ManualSet(path.stem, path, entries={(_ANY, _ANY): Entry(tuple(it.id for it in items))},
                         inline={it.id: it for it in items})
    return _parse_toml(path)


def _parse_toml(path: Path) -> ManualSet:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a valid TOML file: {exc}", file=str(path)) from None
    entries: dict[tuple[str, str], Entry] = {}
    if "examples" in data:
        entries[(_ANY, _ANY)] = _entry(data, path, "(top level)")
    for level in ("turn", "dialog", "any"):
        table = data.get(level, {})
        if not isinstance(table, dict):
            raise InputError(f"'{level}' must be a table of quality -> examples", file=str(path), field=level)
        for quality, body in table.items():
            if not isinstance(body, dict):
                raise InputError("expected a table with 'examples'", file=str(path), field=f"{level}.{quality}")
            entries[(_ANY if level == "any" else level, quality.lower())] = _entry(body, path, f"{level}.{quality}")
    if not entries:
        raise InputError("no examples: give 'examples = [ids]' at the top or per quality, e.g. "
                         "[turn.\"Overall\"] examples = [...]", file=str(path))
    datasets = data.get("datasets", [])
    return ManualSet(str(data.get("name", path.stem)), path, tuple(map(str, datasets)), str(data.get("rule", "")),
                     entries)


def _entry(body: dict, path: Path, where: str) -> Entry:
    ex = body.get("examples")
    if not isinstance(ex, list) or not ex or not all(isinstance(i, str) and i.strip() for i in ex):
        raise InputError("'examples' must be a non-empty list of item ids", file=str(path), field=f"{where}.examples")
    alts = body.get("alternates", [])
    if not isinstance(alts, list) or len(alts) > len(ex) or not all(
        isinstance(a, list) and all(isinstance(i, str) for i in a) for a in alts
    ):
        raise InputError("'alternates' must be a list of id lists, at most one per example",
                         file=str(path), field=f"{where}.alternates")
    return Entry(tuple(ex), tuple(tuple(a) for a in alts))


class ManualSelector(Selector):
    """The set's examples for the rated quality and the test item's level (leakage-guarded)."""

    name = "manual"
    fixed_examples = True

    def __init__(self, *, manual_set: str | Path | None = None, seed: int = 0, group_guard: bool = True,
                 order: str = "ascending") -> None:
        super().__init__(seed=seed, group_guard=group_guard, order=order)
        self.manual_set = manual_set
        self._sets: dict[str, ManualSet] = {}
        self._pools: dict[tuple[str, ...], dict[str, Item]] = {}

    def set_for(self, item: Item) -> ManualSet:
        """The named set, or the shipped set that covers the item's dataset."""
        key = str(self.manual_set) if self.manual_set is not None else f"dataset:{item.dataset}"
        if key not in self._sets:
            if self.manual_set is not None:
                self._sets[key] = load_manual_set(self.manual_set)
            else:
                for name in shipped_sets():
                    ms = load_manual_set(name)
                    if item.dataset in ms.datasets:
                        self._sets[key] = ms
                        break
                else:
                    raise InputError(f"no shipped manual set covers dataset '{item.dataset}' (shipped: "
                                     f"{', '.join(shipped_sets()) or 'none'}); name your own set file "
                                     "(--manual-set FILE, see docs/selectors.md)")
        return self._sets[key]

    def _by_id(self, pool: Sequence[Item]) -> dict[str, Item]:
        key = tuple(it.id for it in pool)
        if key not in self._pools:
            self._pools = {key: {it.id: it for it in pool}}  # one pool at a time is the common case
        return self._pools[key]

    def resolve(self, item: Item, pool: Sequence[Item], quality: Quality | None) -> list[list[Item]]:
        """Per example of the entry: the example item then its alternates, resolved against the pool."""
        if quality is None:
            raise InputError("the manual selector needs a quality (--quality) to pick its examples", field="quality")
        ms = self.set_for(item)
        entry = ms.entry(item.level, quality.name)
        by_id = {**self._by_id(pool), **ms.inline}
        missing = [i for i in entry.ids() if i not in by_id]
        if missing:
            raise InputError(
                f"manual set '{ms.name}' ({quality.name}, {item.level} level) refers to items the data does not "
                f"contain: {', '.join(missing)}"
                + (f". The set is made for {', '.join(ms.datasets)}; use that data as the pool" if ms.datasets else ""),
                file=str(ms.path),
            )
        return [[by_id[i] for i in slot] for slot in entry.slots()]

    def check(self, items: Sequence[Item], pool: Sequence[Item], quality: Quality | None) -> None:
        """Every level's entry resolves against the pool (ids the data lacks are named now)."""
        for level in dict.fromkeys(it.level for it in items):
            self.resolve(next(it for it in items if it.level == level), pool, quality)

    def rank(self, item: Item, pool: Sequence[Item], k: int, quality: Quality | None = None) -> list[Item]:
        if k <= 0:
            return []
        chosen: list[Item] = []
        for slot in self.resolve(item, pool, quality)[:k]:
            for cand in slot:
                if allowed(item, cand, self.group_guard) and all(c.id != cand.id for c in chosen):
                    chosen.append(cand)
                    break
        # The set is listed in prompt order, nearest the test item last: that is the least relevant first.
        return chosen[::-1]

    def native_order(self, ranked: list[Item]) -> list[Item]:
        return ranked[::-1]

    def describe(self) -> dict[str, object]:
        out = super().describe()
        out["manual_set"] = str(self.manual_set) if self.manual_set is not None else "(shipped, by dataset)"
        return out


def create(name: str, *, manual_set: str | Path | None = None, seed: int = 0, group_guard: bool = True,
           order: str = "ascending", **_unused: object) -> ManualSelector:
    """Registry factory."""
    return ManualSelector(manual_set=manual_set, seed=seed, group_guard=group_guard, order=order)
