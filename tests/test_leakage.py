"""The group guard against conversation leakage, checked on every shipped benchmark file.

For each test item T and each candidate E the guard allows as an in-context example (another
group), none of E's shown text may come from T's conversation (T's context + response):

* E's whole context is not a run of consecutive turns of T's conversation;
* E's exchange (its last context turn followed by its response) is not two consecutive turns of it;
* and, the other way round, T's exchange is not two consecutive turns of E's context + response.

A single shared utterance is not counted (nor a one-turn context under 20 letters, which is one):
"thank you ." or a negative sample drawn from another dialogue appear in many unrelated conversations. Before the sliding-window rule of
``assign_groups``, DailyDialog-Zhao broke this for 18 pairs (items _00045-_00053 and
_00297-_00305, one conversation in two 5-turn windows).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from judge.data.items import Item
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import DATASETS
from judge.selectors.guard import allowed

#: Registered sets whose files ../shared/data does not hold; they are checked on their fixtures.
NOT_SHIPPED = ("convai2-grade", "persona-zhao")
SHIPPED = sorted(n for n in DATASETS if n not in NOT_SHIPPED)


def _context(item: Item) -> tuple[str, ...]:
    return tuple(t.text for t in (item.context if item.level == "turn" else item.dialog))


def _exchange(item: Item) -> tuple[str, ...] | None:
    if item.level != "turn" or not item.response or not item.context:
        return None
    return (item.context[-1].text, item.response)


def _runs(turns: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Every run of consecutive turns."""
    return {turns[i:j] for i in range(len(turns)) for j in range(i + 1, len(turns) + 1)}


def leaks(items: list[Item]) -> list[tuple[str, str]]:
    """(test id, example id) pairs the guard allows although the example shows the test's conversation."""
    by_context: dict[tuple[str, ...], list[Item]] = defaultdict(list)
    by_exchange: dict[tuple[str, ...], list[Item]] = defaultdict(list)
    by_pair: dict[tuple[str, ...], list[Item]] = defaultdict(list)
    for it in items:
        if _context(it):
            by_context[_context(it)].append(it)
        if (ex := _exchange(it)) is not None:
            by_exchange[ex].append(it)
        shown = tuple(t.text for t in it.turns)
        for i in range(len(shown) - 1):
            by_pair[shown[i:i + 2]].append(it)
    out = set()
    for test in items:
        runs = _runs(tuple(t.text for t in test.turns))
        # A one-turn context under 20 letters ("Thank you .", a query of PredictiveEngagement's) is said in
        # many conversations: another item's reply that says it shows nothing of the example's conversation.
        suspects = [e for run in runs for e in [*by_context.get(run, ()), *by_exchange.get(run, ())]
                    if len(run) > 1 or len(run[0]) >= 20 or run != _context(e)]
        if (ex := _exchange(test)) is not None:
            suspects += by_pair.get(ex, [])
        out |= {(test.id, e.id) for e in suspects if allowed(test, e)}
    return sorted(out)


@pytest.mark.parametrize("name", SHIPPED)
def test_no_example_shows_the_test_items_conversation(name: str, data_dir: Path) -> None:
    assert leaks(load_benchmark(name, data_dir)) == []


@pytest.mark.parametrize("name", NOT_SHIPPED)
def test_no_example_shows_the_test_items_conversation_in_the_fixtures(name: str) -> None:
    assert leaks(load_benchmark(name, Path(__file__).parent / "fixtures")) == []


def test_every_shipped_file_is_checked(data_dir: Path) -> None:
    """Every registered set is checked: on the shared data, or on its fixture where the data lacks it."""
    missing = [n for n, info in DATASETS.items() if not (data_dir / info.path).is_file()]
    assert sorted(missing) == sorted(NOT_SHIPPED)


def test_zhao_windows_of_one_conversation_share_a_group(data_dir: Path) -> None:
    items = {it.id: it for it in load_benchmark("DZ", data_dir)}
    ids = [f"dailydialog-zhao_{i:05d}" for i in [*range(45, 54), *range(297, 306)]]
    assert len({items[i].group for i in ids}) == 1
    # The check itself catches the old grouping: split the two windows apart again.
    split = list(items.values())
    for it in split:
        if it.id in ids[9:]:
            it.group = "window-2"
    found = leaks(split)
    assert len(found) == 18 and {t for t, _ in found} >= {"dailydialog-zhao_00045", "dailydialog-zhao_00297"}


def test_shared_opening_does_not_merge_conversations(data_dir: Path) -> None:
    """FED's Mitsuku conversations share a canned opening; they stay separate conversations."""
    items = {it.id: it for it in load_benchmark("FT", data_dir)}
    a, b = items["fed-turn_00114"], items["fed-turn_00312"]
    assert [t.text for t in a.turns[1:4]] == [t.text for t in b.turns[1:4]]
    assert a.group != b.group
