"""NSP and GLUE-proxy mechanics on tiny randomly initialised BERT models built from a config with a
locally built WordPiece tokenizer (no BERT weights can be downloaded here: the numbers are meaningless,
the mechanics - pairing, batching, label choice, aggregation, cross-validation - are what is tested).
The regression's leakage guard is tested without models, on synthetic features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judge.core.errors import InputError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.scorers.classic import create_classic
from judge.scorers.classic.regression import cross_validated_predictions, group_folds

WORDS = ["hi", "hello", "how", "are", "you", "good", "fine", "thanks", "what", "do", "like", "football", "tennis", "i", "am", "the", "a", "is", "not"]


def tiny_bert(tmp: Path, kind: str, num_labels: int = 2, seed: int = 0) -> str:
    torch = pytest.importorskip("torch")
    import transformers as tf

    torch.manual_seed(seed)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "?", "!", ".", ",", *WORDS]
    (tmp / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = tf.BertTokenizerFast(vocab_file=str(tmp / "vocab.txt"), do_lower_case=True)
    cfg = tf.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=num_labels)
    net = tf.BertForNextSentencePrediction(cfg) if kind == "nsp" else tf.BertForSequenceClassification(cfg)
    net.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    return str(tmp)


def manual_probs(path: str, kind: str, first: str | None, second: str) -> np.ndarray:
    import torch
    import transformers as tf

    tok = tf.AutoTokenizer.from_pretrained(path)
    auto = tf.AutoModelForNextSentencePrediction if kind == "nsp" else tf.AutoModelForSequenceClassification
    net = auto.from_pretrained(path).eval()
    enc = tok(second, return_tensors="pt") if first is None else tok(first, second, return_tensors="pt")
    with torch.no_grad():
        logits = net(**enc).logits[0]
    return logits.numpy() if logits.shape[-1] == 1 else torch.softmax(logits, -1).numpy()


TURNS = [
    Item("a", "turn", context=(Turn(USER, "how are you ?"),), response="i am fine , thanks"),
    Item("b", "turn", context=(Turn(USER, "hi"), Turn(SYSTEM, "hello"), Turn(USER, "what do you like ?")),
         response="football is good !"),
]


@pytest.mark.slow
def test_nsp_is_p_isnext_and_dialog_sums_pairs(tmp_path: Path) -> None:
    path = tiny_bert(tmp_path, "nsp")
    scorer = create_classic("bert-nsp", model=path, batch_size=1)
    got = [s.value for s in scorer.score(TURNS)]
    assert got[0] == pytest.approx(manual_probs(path, "nsp", "how are you ?", "i am fine , thanks")[0], abs=1e-5)
    assert got[1] == pytest.approx(manual_probs(path, "nsp", "what do you like ?", "football is good !")[0], abs=1e-5)
    d = Item("d", "dialog", dialog=(Turn(USER, "hi"), Turn(SYSTEM, "hello"), Turn(USER, "how are you ?"),
                                    Turn(SYSTEM, "good")))
    value = next(iter(create_classic("bert-nsp", model=path).score([d]))).value
    expected = manual_probs(path, "nsp", "hi", "hello")[0] + manual_probs(path, "nsp", "how are you ?", "good")[0]
    assert value == pytest.approx(expected, abs=1e-5)


def test_nsp_needs_context() -> None:
    with pytest.raises(InputError, match="context"):
        list(create_classic("bert-nsp", model="unused").score([Item("x", "turn", response="hi")]))


def labelled(n_groups: int = 10, per: int = 3) -> list[Item]:
    rng = np.random.default_rng(0)
    items = []
    for g in range(n_groups):
        for j in range(per):
            items.append(Item(f"g{g}-{j}", "turn", context=(Turn(USER, WORDS[(g + j) % len(WORDS)]),),
                              response=" ".join(rng.choice(WORDS, 4)), fact="the football" if j else None,
                              group=f"g{g}", annotations={"Overall": (float(rng.integers(1, 6)),)}))
    return items


def test_glue_proxy_features_and_cross_validation(tmp_path: Path) -> None:
    (tmp_path / "cls").mkdir()
    (tmp_path / "sts").mkdir()
    cls = tiny_bert(tmp_path / "cls", "cls")
    sts = tiny_bert(tmp_path / "sts", "cls", num_labels=1, seed=1)  # one output, like STS-B
    items = labelled()
    fits: list[tuple[list[int], list[int]]] = []
    scorer = create_classic("glue-proxy", classifiers=[f"{cls}@response#0", f"{sts}@context+fact"],
                            quality="Overall", folds=5, on_fit=lambda tr, te: fits.append((tr, te)))
    x = scorer.features(items)
    # Feature columns: P(label 0 | response); STS output on (context, response); on (fact, response).
    it = items[1]
    assert x[1, 0] == pytest.approx(manual_probs(cls, "cls", None, it.response)[0], abs=1e-5)
    assert x[1, 1] == pytest.approx(manual_probs(sts, "cls", it.context[-1].text, it.response)[0], abs=1e-5)
    assert x[1, 2] == pytest.approx(manual_probs(sts, "cls", it.fact, it.response)[0], abs=1e-5)
    assert np.isnan(x[0, 2])  # no fact: missing, imputed inside each fold
    scores = list(scorer.score(items))
    assert all(s.ok for s in scores) and len(fits) == 5
    groups = [i.group for i in items]
    for train, test in fits:
        assert not set(train) & set(test)
        assert not {groups[i] for i in train} & {groups[i] for i in test}
    assert sorted(i for _, te in fits for i in te) == list(range(len(items)))


def test_glue_proxy_needs_labels() -> None:
    items = labelled()
    with pytest.raises(InputError, match="quality"):
        list(create_classic("glue-proxy", classifiers=["x"]).score(items))
    with pytest.raises(InputError, match="labels"):
        list(create_classic("glue-proxy", classifiers=["x"], quality="Missing").score(items))
    with pytest.raises(InputError, match="classifier spec"):
        create_classic("glue-proxy", classifiers=["m@nonsense"], quality="Overall")


def test_regression_never_sees_the_test_fold() -> None:
    rng = np.random.default_rng(1)
    n = 40
    x = rng.normal(size=(n, 3))
    y = list(x @ [1.0, -2.0, 0.5] + rng.normal(scale=0.1, size=n))
    groups = [f"g{i // 2}" for i in range(n)]
    base = cross_validated_predictions(x, y, groups, k=5)
    assert np.corrcoef(base, y)[0, 1] > 0.9  # it does learn the relation out of fold
    folds = group_folds(groups, 5)
    fold_of = {i: f for f, rows in enumerate(folds) for i in rows}
    # Changing one item's label changes no prediction in its own fold (its fold never trains on it),
    # but does change the other folds' predictions.
    j = 7
    y2 = list(y)
    y2[j] += 100.0
    moved = cross_validated_predictions(x, y2, groups, k=5)
    same_fold = [i for i in range(n) if fold_of[i] == fold_of[j]]
    other = [i for i in range(n) if fold_of[i] != fold_of[j]]
    assert np.allclose(moved[same_fold], base[same_fold])
    assert not np.allclose(moved[other], base[other])


def test_regression_unlabelled_items_are_predicted_not_trained_on() -> None:
    x = np.arange(20, dtype=float)[:, None]
    y: list[float | None] = [2 * v for v in range(20)]
    y[3] = None
    seen: list[int] = []
    pred = cross_validated_predictions(x, y, [str(i) for i in range(20)], k=4,
                                       on_fit=lambda tr, te: seen.extend(tr))
    assert 3 not in seen
    assert pred[3] == pytest.approx(6.0)
