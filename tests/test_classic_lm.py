"""Causal-LM scorers on the packaged SmolLM2 (real model; loaded once per session through judge.scorers.classic.hf's
cache, from a safetensors copy of the GGUF made once per machine): each score is recomputed here
independently, one unpadded sequence at a time, from the model's own logits or loss."""

from __future__ import annotations

import numpy as np
import pytest

from judge.core.errors import InputError, UnknownNameError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.scorers.classic import create_classic, hf
from judge.scorers.classic.fed_metric import conversation_text, followups

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")

MODEL = "smollm2"
ITEMS = [
    Item("a", "turn", context=(Turn(USER, "How are you today?"),), response="I am fine, thanks."),
    Item("b", "turn", context=(Turn(USER, "Hi!"), Turn(SYSTEM, "Hello."), Turn(USER, "What do you do for work?")),
         response="Banana."),
]
DIALOG = Item("d", "dialog", dialog=(Turn(USER, "Hi!"), Turn(SYSTEM, "Hello, how are you?"),
                                     Turn(USER, "Good. I went hiking."), Turn(SYSTEM, "Nice, where did you go?")))


@pytest.fixture(scope="module")
def lm():
    return hf.load(MODEL, "causal-lm", "test")


def manual_token_probs(lm, prefix: str, target: str) -> tuple[np.ndarray, np.ndarray]:
    """P(actual token) and max P at each target position, from one unpadded forward pass."""
    tok, net = lm
    p = tok(prefix, add_special_tokens=False)["input_ids"] or [tok.bos_token_id or tok.eos_token_id]
    t = tok(target, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        probs = torch.softmax(net(torch.tensor([p + t])).logits[0].double(), -1)
    rows = probs[len(p) - 1: len(p) - 1 + len(t)]
    return rows[torch.arange(len(t)), torch.tensor(t)].numpy(), rows.max(-1).values.numpy()


def test_lm_likelihood_equals_manual_computation(lm) -> None:
    # Batched (left padding, two lengths) vs one sequence at a time.
    got = [s.value for s in create_classic("lm-likelihood", model=MODEL, batch_size=2).score(ITEMS)]
    for it, value in zip(ITEMS, got):
        prefix = "".join(t.text + "\n" for t in it.context)
        assert value == pytest.approx(manual_token_probs(lm, prefix, it.response)[0].mean(), abs=1e-5)


def test_maxprob_and_dialog_sum(lm) -> None:
    got = [s.value for s in create_classic("lm-maxprob", model=MODEL).score(ITEMS + [DIALOG])]
    prefix = "".join(t.text + "\n" for t in ITEMS[0].context)
    # 5e-5: the scorer runs a padded batch, the check one unpadded sequence (fp32 sums in another order).
    assert got[0] == pytest.approx(manual_token_probs(lm, prefix, ITEMS[0].response)[1].mean(), abs=5e-5)
    # u-avg-d-sum: a dialog is the sum of its system utterances' averages.
    d = [t.text for t in DIALOG.dialog]
    expected = sum(manual_token_probs(lm, "".join(x + "\n" for x in d[:i]), d[i])[1].mean() for i in (1, 3))
    assert got[2] == pytest.approx(expected, abs=5e-5)
    assert all(0 < v < 1 for v in got[:2])


def test_dialog_opinion_pair_vs_full_context(lm) -> None:
    tok, _ = lm
    eos = tok.eos_token
    full, pair = (next(iter(create_classic("dialog-opinion", model=MODEL, context=c).score([ITEMS[1]]))).value
                  for c in ("full", "pair"))
    ctx = [t.text for t in ITEMS[1].context]
    assert full == pytest.approx(manual_token_probs(lm, "".join(x + eos for x in ctx), "Banana.")[0].mean(), abs=1e-5)
    assert pair == pytest.approx(manual_token_probs(lm, ctx[-1] + eos, "Banana.")[0].mean(), abs=1e-5)
    assert full != pytest.approx(pair, abs=1e-6)


def test_max_softmax_and_likelihood_ratio(lm) -> None:
    ms = next(iter(create_classic("max-softmax", model=MODEL).score(ITEMS[:1]))).value
    prefix = "".join(t.text + "\n" for t in ITEMS[0].context)
    assert ms == pytest.approx(manual_token_probs(lm, prefix, ITEMS[0].response)[1].min(), abs=1e-5)
    # A model against itself as background: log-ratio exactly 0.
    lr = list(create_classic("likelihood-ratio", model=MODEL, background=MODEL).score(ITEMS))
    assert [s.value for s in lr] == pytest.approx([0.0, 0.0], abs=1e-9)


def nll(lm, text: str, n_conv: int | None = None) -> float:
    """Mean token NLL of ``text`` (the model's own loss), or of its tokens after the first ``n_conv``."""
    tok, net = lm
    ids = tok(text, add_special_tokens=False)["input_ids"]
    x = torch.tensor([ids])
    with torch.no_grad():
        out = net(x, labels=x)
    if n_conv is None:
        return float(out.loss)
    lp = torch.log_softmax(out.logits[0].double(), -1)
    return -float(np.mean([lp[j - 1, ids[j]] for j in range(n_conv, len(ids))]))


@pytest.mark.parametrize("loss", ["whole", "followup"])
def test_fed_metric_is_negative_minus_positive_loss(lm, loss: str) -> None:
    tok, _ = lm
    eos = tok.eos_token
    conv = conversation_text([t.text for t in DIALOG.dialog], eos)
    n_conv = len(tok(conv, add_special_tokens=False)["input_ids"])
    utts = followups()["dialog"]["likeable"]

    def mean_loss(side: str) -> float:
        return float(np.mean([nll(lm, f"{conv} {eos} {u}", None if loss == "whole" else n_conv) for u in utts[side]]))

    scorer = create_classic("fed-metric", model=MODEL, quality="Likeable", loss=loss, batch_size=2)
    value = next(iter(scorer.score([DIALOG]))).value
    assert value == pytest.approx(mean_loss("negative") - mean_loss("positive"), abs=1e-4)
    assert scorer.describe()["loss"] == loss


def test_fed_metric_overall_is_mean_of_qualities_and_turn_level(lm) -> None:
    from judge.data.qualities import QUALITY_GROUPS
    from judge.scorers.classic.fed_metric import followup_losses, quality_score

    tok, net = lm
    eos = tok.eos_token
    item = ITEMS[0]
    overall = next(iter(create_classic("fed-metric", model=MODEL, quality=QUALITY_GROUPS["fed-turn"][-1]).score([item]))).value
    # Recomputed from the per-text losses (checked against the model's own loss above), quality by quality.
    table = followups()["turn"]
    texts = sorted({u for q in table.values() for side in q.values() for u in side})
    conv = conversation_text([t.text for t in item.turns], eos)
    losses = dict(zip(texts, followup_losses(tok, net, conv, [f" {eos} {u}" for u in texts])))
    per_q = {q: quality_score(utts, losses) for q, utts in table.items()}
    assert overall == pytest.approx(np.mean(list(per_q.values())), abs=1e-6)
    # "relevant" has no positive follow-ups: its score is the negatives' mean loss (positive term 0).
    assert per_q["relevant"] == pytest.approx(np.mean([losses[u] for u in table["relevant"]["negative"]]))


def test_fed_metric_quality_errors() -> None:
    with pytest.raises(UnknownNameError, match="likeable"):
        create_classic("fed-metric", model=MODEL, quality="likable")
    with pytest.raises(InputError, match="not a turn-level quality"):
        list(create_classic("fed-metric", model=MODEL, quality="likeable").score(ITEMS))


def test_fed_followups_file_matches_the_paper_counts() -> None:
    table = followups()
    assert len(table["turn"]) == 8 and len(table["dialog"]) == 10
    assert table["dialog"]["likeable"]["positive"][0] == "I like you!"
    assert table["turn"]["relevant"]["positive"] == []


def test_fed_metric_quality_object_without_followups_means_overall() -> None:
    from judge.data.qualities import QUALITY_GROUPS

    scorer = create_classic("fed-metric", model=MODEL, quality=QUALITY_GROUPS["zhao"][-1])  # "appropriateness"
    assert scorer.describe()["quality"] == "overall"
    with pytest.raises(UnknownNameError):
        create_classic("fed-metric", model=MODEL, quality="appropriateness")
