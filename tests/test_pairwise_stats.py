"""Statistics of pairwise judgements (judge/stats/pairwise.py) on hand-made pair rows whose answers are known:
Bradley-Terry strengths, win rates with ties as half, position consistency and bias, agreement with the
human preference beside a pointwise method's, length bias and system-level Kendall tau; every interval
resamples conversations."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from judge.records.pair_rows import PairOrder, PairRow
from judge.stats.pairwise import BT_PRIOR, bradley_terry, summarise_pairs


def row(a: str, b: str, pref: float, winner: str, *, group: str, orders: tuple[float, ...] = (), ha: float | None = None,
        hb: float | None = None, la: int = 10, lb: int = 10, item_a: str = "", item_b: str = "",
        consistent: bool | None = None) -> PairRow:
    """A pair row as judge.engine.compare writes it. ``orders``: p(a) per order, ab first then ba (default: both
    equal to ``pref``)."""
    ps = orders or (pref, pref)
    return PairRow(id=f"{item_a or a}-{item_b or b}-{group}", method="m", quality=None, context=group, group=group,
                   system_a=a, system_b=b, item_a=item_a or f"{a}@{group}", item_b=item_b or f"{b}@{group}",
                   human_a=ha, human_b=hb, preference=pref, winner=winner,
                   consistent=consistent if consistent is not None else winner != "tie", tie=None,
                   orders=tuple(PairOrder(o, p, winner, {}) for o, p in zip(("ab", "ba"), ps)), length_a=la,
                   length_b=lb, flags=(), estimated=False, complete=True, error=None, n_prompt_tokens=0)


def test_bradley_terry_matches_the_closed_form_of_two_systems():
    first, second, score = np.array([0, 0, 0, 0]), np.array([1, 1, 1, 1]), np.array([1, 1, 1, 0.0])
    strength = bradley_terry(first, second, score, 2)
    # p(0 beats 1) = (3 + prior) / (4 + 2 prior) at the maximum: the log-odds split around the centre
    expected = math.log((3 + BT_PRIOR) / (1 + BT_PRIOR)) / 2
    assert strength == pytest.approx([expected, -expected])
    # a tie is half a win to each side
    tied = bradley_terry(np.array([0, 0]), np.array([1, 1]), np.array([1, 0.5]), 2)
    assert tied[0] == pytest.approx(math.log((1.5 + BT_PRIOR) / (0.5 + BT_PRIOR)) / 2)


def test_bradley_terry_orders_a_chain_keeps_a_clean_sweep_finite_and_marks_the_unseen():
    first, second, score = np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([1.0, 1.0, 1.0])
    s = bradley_terry(first, second, score, 4)
    assert s[0] > s[1] > s[2] and np.all(np.isfinite(s[:3])) and math.isnan(s[3])
    assert s[:3].sum() == pytest.approx(0.0)


def test_win_rates_count_ties_as_half_with_intervals_over_conversations():
    rows = [row("x", "y", 0.9, "a", group="g1"), row("x", "y", 0.8, "a", group="g1"), row("x", "y", 0.5, "tie", group="g2"),
            row("y", "x", 0.2, "b", group="g3")]  # the last: y as a, x wins
    rows += [row("x", "y", 0.9, "a", group=f"g{i}") for i in range(4, 8)]  # seven conversations: the floor
    s = summarise_pairs(rows, n_boot=200, seed=1)
    (w,) = s["win_rates"]
    assert (w["a"], w["b"], w["wins"], w["ties"], w["losses"], w["n"]) == ("x", "y", 7, 1, 0, 8)
    assert w["value"] == pytest.approx(7.5 / 8)
    assert s["n_conversations"] == 7 and s["bootstrap"]["n_units"] == 7 and s["bootstrap"]["unit"] == "group"
    assert 0.5 <= w["low"] <= w["value"] <= w["high"] <= 1.0 and w["n_conversations"] == 7 and "too_few" not in w
    assert [r["system"] for r in s["ranking"]] == ["x", "y"] and s["ranking"][0]["value"] > 0
    assert s == summarise_pairs(rows, n_boot=200, seed=1)  # seeded: the same rows give the same figures


def test_position_consistency_and_bias_toward_the_first_reply():
    # every pair: p(a) .9 when a is shown first, .3 when second: the first position gains .3 on average
    rows = [row("x", "y", 0.6, "tie", group=f"g{i}", orders=(0.9, 0.3), consistent=False) for i in range(6)]
    rows += [row("x", "y", 0.9, "a", group=f"h{i}", orders=(0.9, 0.9), consistent=True) for i in range(2)]
    pos = summarise_pairs(rows, n_boot=300)["position"]
    assert pos["consistency"]["value"] == pytest.approx(2 / 8) and pos["consistency"]["n"] == 8
    assert pos["bias"]["value"] == pytest.approx((6 * 0.3 + 2 * 0.0) / 8)
    assert pos["bias"]["p"] is not None and pos["bias"]["p"] < 0.05


def test_agreement_with_humans_beside_the_pointwise_method_on_the_same_pairs():
    rows = [row("x", "y", 0.8, "a", group="g1", ha=4, hb=2), row("x", "y", 0.3, "b", group="g2", ha=4, hb=2),
            row("x", "y", 0.5, "tie", group="g3", ha=1, hb=3), row("x", "y", 0.9, "a", group="g4", ha=3, hb=3),
            row("x", "y", 0.7, "a", group="g5")]  # equal humans and no ratings: left out
    point = {("x", "x@g1"): 0.2, ("y", "y@g1"): 0.1, ("x", "x@g2"): 0.9, ("y", "y@g2"): 0.1,
             ("x", "x@g3"): 0.3, ("y", "y@g3"): 0.3}
    h = summarise_pairs(rows, pointwise=point, pointwise_name="criteria", n_boot=200)["humans"]
    assert h["n_pairs"] == 3 and h["n_tied_humans"] == 1
    assert h["judge"]["value"] == pytest.approx((1 + 0 + 0.5) / 3)  # a preference of exactly .5 counts half
    assert h["pointwise"]["value"] == pytest.approx((1 + 1 + 0.5) / 3) and h["pointwise"]["method"] == "criteria"
    assert h["difference"]["value"] == pytest.approx((1.5 - 2.5) / 3) and h["difference"]["n"] == 3


def test_length_bias_for_the_judge_and_for_the_humans():
    rows = [row("x", "y", 0.8, "a", group="g1", la=50, lb=10, ha=2, hb=4),
            row("x", "y", 0.3, "b", group="g2", la=5, lb=40, ha=2, hb=4),
            row("x", "y", 0.6, "a", group="g3", la=20, lb=20)]
    ln = summarise_pairs(rows, n_boot=100)["length"]
    assert ln["judge"]["value"] == 1.0 and ln["judge"]["n"] == 2  # equal lengths left out
    assert ln["humans"]["value"] == 0.5 and ln["humans"]["n"] == 2


def test_system_level_kendall_tau_of_strengths_and_human_means():
    rows = []
    systems = ["s1", "s2", "s3", "s4"]
    for i, a in enumerate(systems):
        for j, b in enumerate(systems[i + 1:], i + 1):
            for g in range(3):  # the earlier system always wins, and is rated higher
                rows.append(row(a, b, 0.9, "a", group=f"g{g}", ha=5 - i, hb=5 - j, item_a=f"{a}{g}", item_b=f"{b}{g}"))
    point = {(s, f"{s}{g}"): float(-k) for k, s in enumerate(systems) for g in range(3)}
    sl = summarise_pairs(rows, pointwise=point, pointwise_name="p", n_boot=100)["system_level"]
    assert sl["n_systems"] == 4 and sl["kendall"] == pytest.approx(1.0)
    assert sl["pointwise"]["kendall"] == pytest.approx(1.0)
    assert summarise_pairs(rows[:3], n_boot=10)["system_level"] is None  # two systems: no tau


def test_failed_pairs_are_counted_and_left_out():
    rows = [row("x", "y", 0.8, "a", group="g1"), replace(row("x", "y", 0.8, "a", group="g2"), error="boom", preference=None)]
    s = summarise_pairs(rows, n_boot=50)
    assert (s["n_pairs"], s["n_failed"]) == (2, 1) and s["win_rates"][0]["n"] == 1
