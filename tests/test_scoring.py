"""The scoring math on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from judge.core.errors import UnknownNameError
from judge.prompts.answers import Rating, YesNo, candidates
from judge.scorers.rules import (
    RULES,
    ScoringError,
    expected_rating,
    goodness,
    label_probs,
    score_distribution,
    topk_rating,
)


def test_topk_paper_formula_by_hand():
    # p(0)=.1 p(1)=.2 p(2)=.5 p(3)=.15 p(4)=.05 ; top-3 = 2(.5), 1(.2), 3(.15)
    probs = {"0": 0.1, "1": 0.2, "2": 0.5, "3": 0.15, "4": 0.05}
    expected = (2 * 0.5 + 1 * 0.2 + 3 * 0.15) / (0.5 + 0.2 + 0.15)
    assert topk_rating(probs, 3) == pytest.approx(expected)
    assert topk_rating(probs, 1) == 2
    full = sum(int(k) * v for k, v in probs.items()) / sum(probs.values())
    assert topk_rating(probs, 5) == pytest.approx(full)


def test_topk_ties_and_zeros():
    assert topk_rating({"0": 0.0, "1": 0.3, "2": 0.3}, 1) == 1  # tie: lower rating first, deterministic
    assert topk_rating({"0": 0.0, "1": 0.0, "2": 0.4}, 3) == 2  # zero-probability labels ignored
    with pytest.raises(ScoringError):
        topk_rating({"0": 0.0, "1": 0.0}, 3)
    with pytest.raises(ValueError):
        topk_rating({"1": 1.0}, 0)


def test_goodness():
    assert goodness(0.3, 0.1) == pytest.approx(0.75)
    assert goodness(0.0, 0.2) == 0.0
    with pytest.raises(ScoringError):
        goodness(0.0, 0.0)


def test_label_variants_are_summed():
    lp = {"Yes": math.log(0.2), " yes": math.log(0.1), "no": math.log(0.05), " No": math.log(0.15)}
    probs = label_probs(lp, YesNo())
    assert probs["yes"] == pytest.approx(0.3)
    assert probs["no"] == pytest.approx(0.2)
    value, _ = score_distribution(lp, YesNo())
    assert value == pytest.approx(0.3 / 0.5)


def test_rating_leading_space_variants_map_to_rating():
    lp = {"2": math.log(0.2), " 2": math.log(0.3), "0": math.log(0.5)}
    probs = label_probs(lp, Rating(0, 2))
    assert probs == pytest.approx({"0": 0.5, "1": 0.0, "2": 0.5})
    value, _ = score_distribution(lp, Rating(0, 2), top_k=3)
    assert value == pytest.approx(1.0)


def test_missing_candidates_contribute_nothing():
    # A top-N-only backend may see only one label: the score uses what it saw.
    value, probs = score_distribution({" Yes": math.log(0.4)}, YesNo())
    assert value == 1.0 and probs["no"] == 0.0
    with pytest.raises(ScoringError):
        score_distribution({"maybe": -0.1}, YesNo())


def test_candidates_and_example_labels():
    assert candidates(Rating(1, 3)) == ["1", " 1", "2", " 2", "3", " 3"]
    c = candidates(YesNo())
    assert {"yes", "Yes", " yes", " Yes", "no", "No", " no", " No"} <= set(c)
    r = Rating(0, 4)
    assert r.format_label(2.5) == "3/4"  # ties round up
    assert r.format_label(2.49) == "2/4"
    assert r.format_label(9) == "4/4"
    yn = YesNo()
    assert yn.format_label(3.0, 1, 5) == "Yes"  # exactly half way up the scale counts as good
    assert yn.format_label(2.99, 1, 5) == "No"
    assert YesNo(threshold=0.75).format_label(3.5, 1, 5) == "No"


def test_expected_rating_by_hand():
    # p(1)=.4 p(2)=.0 p(3)=.1 p(4)=.1 p(5)=.4: expected = (.4 + .3 + .4 + 2.0) / 1.0 = 3.1,
    # while top-3 keeps only 1(.4), 5(.4), 3(.1): (.4 + 2.0 + .3) / .9 = 3.0.
    probs = {"1": 0.4, "2": 0.0, "3": 0.1, "4": 0.1, "5": 0.4}
    assert expected_rating(probs) == pytest.approx(3.1)
    assert topk_rating(probs, 3) == pytest.approx(2.7 / 0.9)
    # Mass missing from the scale (tokens that are not labels) is renormalised away:
    # p(0)=.1 p(1)=.3 on a 0-2 scale with p(2)=0 -> (0*.1 + 1*.3) / .4 = .75.
    assert expected_rating({"0": 0.1, "1": 0.3, "2": 0.0}) == pytest.approx(0.75)
    # A model torn between the ends scores the middle; top-1 picks an end.
    assert expected_rating({"1": 0.5, "3": 0.0, "5": 0.5}) == pytest.approx(3.0)
    assert topk_rating({"1": 0.5, "3": 0.0, "5": 0.5}, 1) == 1
    with pytest.raises(ScoringError):
        expected_rating({"1": 0.0, "2": 0.0})
    with pytest.raises(ValueError):
        expected_rating({"1": -0.1, "2": 0.5})


def test_score_distribution_rules():
    assert set(RULES) == {"topk", "expected"}
    lp = {"1": math.log(0.4), " 3": math.log(0.1), "4": math.log(0.1), " 5": math.log(0.4)}
    scale = Rating(1, 5)
    default, probs = score_distribution(lp, scale, top_k=3)
    assert default == score_distribution(lp, scale, top_k=3, rule="topk")[0] == pytest.approx(2.7 / 0.9)
    assert score_distribution(lp, scale, top_k=3, rule="expected")[0] == pytest.approx(3.1)
    assert probs["2"] == 0.0  # the unreadable label is part of the scale with probability 0
    # yes/no: both rules give the goodness p(yes) / (p(yes) + p(no)).
    yn = {"Yes": math.log(0.3), " no": math.log(0.1)}
    assert score_distribution(yn, YesNo(), rule="expected")[0] == pytest.approx(0.75)
    assert score_distribution(yn, YesNo(), rule="topk")[0] == pytest.approx(0.75)
    with pytest.raises(UnknownNameError, match=r"scoring rule 'mean'.*expected, topk"):
        score_distribution(lp, scale, rule="mean")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.5])
def test_nan_or_positive_logprob_is_a_scoring_error(bad):
    """A broken backend answer fails the item (ScoringError, turned into an error row) instead of
    becoming a number, even when the other label's log-probability is fine."""
    with pytest.raises(ScoringError, match="invalid log-probability"):
        score_distribution({"Yes": math.log(0.7), " no": bad}, YesNo())
    with pytest.raises(ScoringError, match="invalid log-probability"):
        score_distribution({"1": bad, "2": -1.0}, Rating(1, 5))
    # -inf is probability 0, and a hair above 0 is rounding: both still score.
    assert score_distribution({"Yes": float("-inf"), "No": 1e-7}, YesNo())[0] == 0.0
