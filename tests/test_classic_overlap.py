"""Word-overlap scorers against sacrebleu / rouge-score and hand computation."""

from __future__ import annotations

import math

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from judge.core.errors import InputError
from judge.data.items import Item, Turn
from judge.scorers.classic import create_classic
from judge.scorers.classic.overlap import bleu, meteor, rouge_l, tokenize

CASES = [
    ("the cat sat on the mat today", ["a cat was sitting on the mat", "the cat is on the mat today and"]),
    ("i do not know what you mean", ["i don't know what you mean ."]),
    ("hi", ["hello there"]),
    ("yes yes yes yes", ["yes i think so", "no"]),
    ("well , that is a very long answer to a short question", ["short answer"]),
]


def item(response: str, refs: list[str], i: int = 0) -> Item:
    return Item(f"t{i}", "turn", context=(Turn("user", "hello"),), response=response, references=tuple(refs))


@pytest.mark.parametrize("hyp,refs", CASES)
def test_bleu_matches_sacrebleu(hyp: str, refs: list[str]) -> None:
    # Pre-tokenised text and tokenize='none': both sides see the same tokens; sacrebleu's defaults
    # (exp smoothing, effective order) are what bleu() implements.
    ours = bleu(tokenize(hyp), [tokenize(r) for r in refs])
    theirs = sacrebleu.sentence_bleu(" ".join(tokenize(hyp)), [" ".join(tokenize(r)) for r in refs],
                                     tokenize="none").score / 100
    assert ours == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("hyp,refs", CASES)
def test_rouge_l_matches_rouge_score_lcs(hyp: str, refs: list[str]) -> None:
    # rouge-score reports beta=1 F; its precision/recall give our beta=1.2 F by hand.
    rs = rouge_scorer.RougeScorer(["rougeL"])
    best = 0.0
    for r in refs:
        s = rs.score(r, hyp)["rougeL"]
        if s.precision and s.recall:
            p, rc = s.precision, s.recall
            best = max(best, (1 + 1.44) * p * rc / (rc + 1.44 * p))
    # rouge-score drops punctuation; compare on the words only.
    words = lambda t: [w for w in tokenize(t) if w.isalnum()]  # noqa: E731
    assert rouge_l(words(hyp), [words(r) for r in refs]) == pytest.approx(best, abs=1e-9)


def test_rouge_l_by_hand() -> None:
    # LCS("a b c d", "a c d e") = 3 (a c d): P = 3/4, R = 3/4, F_beta = 3/4 for any beta.
    assert rouge_l(["a", "b", "c", "d"], [["a", "c", "d", "e"]]) == pytest.approx(0.75)
    # LCS = 2, P = 2/2, R = 2/4: F = 2.44 * 1 * .5 / (.5 + 1.44) = 0.628866
    assert rouge_l(["a", "b"], [["a", "x", "b", "y"]]) == pytest.approx(2.44 * 0.5 / (0.5 + 1.44))


def test_identical_response_gets_the_maximum() -> None:
    text = "my favourite food is pizza with extra cheese"
    other = ["i like pasta", "my favourite food is pasta"]
    for name in ("bleu4", "rouge-l", "meteor"):
        scorer = create_classic(name)
        same, diff = [s.value for s in scorer.score([item(text, [text]), item(text, other, 1)])]
        assert same > diff
        if name != "meteor":  # METEOR's fragmentation penalty keeps it just below 1
            assert same == pytest.approx(1.0)
    assert meteor(tokenize(text), [tokenize(text)]) > 0.99


def test_meteor_stem_match_by_hand() -> None:
    # "cats" and "cat" match by Porter stem: 2 of 2 words matched, one chunk:
    # P = R = 1, Fmean = 10PR/(R+9P) = 1, penalty = 0.5 * (1/2)^3, score = 1 - 0.0625.
    assert meteor(["the", "cats"], [["the", "cat"]]) == pytest.approx(1 - 0.5 * (1 / 2) ** 3)
    # No overlap at all: 0.
    assert meteor(["dogs"], [["the", "cat"]]) == 0.0


def test_multiple_references_take_the_best() -> None:
    hyp = tokenize("see you tomorrow")
    assert rouge_l(hyp, [tokenize("no"), tokenize("see you tomorrow")]) == pytest.approx(1.0)
    assert bleu(hyp, [tokenize("no"), tokenize("see you tomorrow")]) == pytest.approx(1.0)


def test_refuses_items_without_references_before_computing(data_dir) -> None:
    from judge.datasets import load_benchmark

    items = load_benchmark("fed-turn", data_dir)[:5]
    for name in ("bleu4", "rouge-l", "meteor", "embedding-reference"):
        with pytest.raises(InputError, match="needs 'reference'") as e:
            next(iter(create_classic(name).score(items)))
        assert e.value.record == items[0].id


def test_overlap_scorers_refuse_a_model() -> None:
    with pytest.raises(InputError, match="uses no model"):
        create_classic("bleu4", model="gpt2")


def test_bleu_zero_without_common_words() -> None:
    assert bleu(["hi"], [["hello", "there"]]) == 0.0
    assert math.isclose(bleu(["a", "b"], [["a", "b"]]), 1.0)
