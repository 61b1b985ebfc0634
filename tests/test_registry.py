"""One registry mechanism: a third-party selector and data format, registered by name, work through
the same builder and loader as the built-in ones (real SmolLM2 for the selector)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from judge import GenerateConfig, load_items
from judge.core.errors import UnknownNameError
from judge.core.registry import Registry
from judge.data.items import Item
from judge.data.qualities import Quality
from judge.datasets import FORMAT_LOADERS
from judge.engine import MethodSpec, build_scorer
from judge.selectors import SELECTORS, Selector

ROOT = Path(__file__).resolve().parents[1]


class Newest(Selector):
    """The k last pool items outside the test item's group (the example in docs/extending.md)."""

    name = "newest"

    def rank(self, item: Item, pool: Sequence[Item], k: int, quality: Quality | None = None) -> list[Item]:
        return [c for c in reversed(pool) if c.id != item.id and c.group != item.group][:k]


def test_registry_names_lazy_entries_and_unknown_names():
    reg: Registry = Registry("thing", "judge.test-things")
    reg.register_lazy("dumps", "json:dumps", aliases=("d",))
    assert reg.names() == ["dumps"] and "d" in reg and reg.canonical("d") == "dumps"
    assert reg.get("d")([1]) == "[1]"
    with pytest.raises(UnknownNameError, match="dump"):
        reg.get("dumpz")


def test_third_party_selector_by_name_through_the_builder(monkeypatch):
    monkeypatch.setitem(SELECTORS._entries, "newest",
                        lambda name, **o: Newest(seed=o["seed"], group_guard=o["group_guard"], order=o["order"]))
    items = load_items(ROOT / "examples" / "dialogues.jsonl")
    q = Quality("overall", "turn", 1, 5)
    # The selector is what is tested: the mock backend answers (the real model's k-shot path is tested
    # with the built-in selectors in tests/test_selectors.py).
    judge = build_scorer(MethodSpec(selector="newest", k=2, backend="mock",
                                    generate=GenerateConfig(threads=2, cache=False)), items, q)
    try:
        scores = list(judge.score(items))
    finally:
        judge.backend.close()  # type: ignore[attr-defined]
    groups = {it.id: it.group for it in items}
    assert all(s.ok and len(s.examples) == 2 for s in scores)
    # The last two items outside each item's conversation, shown least relevant first.
    first = scores[0]
    expected = [it.id for it in reversed(items) if it.group != groups[first.item_id]][:2][::-1]
    assert first.examples == expected


def test_third_party_data_format(monkeypatch, tmp_path):
    def tsv(text: str, file: str, name: str) -> list[Item]:
        out = []
        for i, line in enumerate(text.splitlines()):
            ctx, resp = line.split("\t")
            from judge.data.items import USER, Turn

            out.append(Item(id=f"{name}-{i}", level="turn", context=(Turn(USER, ctx),), response=resp))
        return out

    monkeypatch.setitem(FORMAT_LOADERS._entries, "tsv", tsv)
    path = tmp_path / "chat.tsv"
    path.write_text("hi there\thello!\nhow are you?\tfine, thanks\n")
    items = load_items(path, format="tsv")
    assert [it.response for it in items] == ["hello!", "fine, thanks"] and items[0].id == "chat-0"
    with pytest.raises(UnknownNameError, match="format"):
        load_items(path, format="tsvv")
