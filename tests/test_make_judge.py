"""``make_judge``: examples drawn from each ``score`` call's own items, a quality given by name, and a
mistyped rule refused before a model loads (real SmolLM2, real BM25, DailyDialog-Zhao items)."""

from __future__ import annotations

import pytest

from judge import load_benchmark, make_judge
from judge.core.errors import InputError, UnknownNameError
from judge.datasets.benchmarks import dataset_info


class ModelLoaded(Exception):
    """Raised by the tripwire: a backend was constructed."""


@pytest.fixture
def no_model(monkeypatch):
    """Every registered backend factory replaced by a tripwire: not a stand-in for a model, a proof that the
    refusal came before one was built (name checks stay real)."""
    from judge.backends.registry import BACKENDS

    def tripwire(*args, **kwargs):
        raise ModelLoaded("a backend was constructed before the input was checked")

    for name in BACKENDS.names():
        monkeypatch.setitem(BACKENDS._entries, name, tripwire)


@pytest.fixture(scope="module")
def zhao(data_dir):
    return load_benchmark("dailydialog-zhao", data_dir)


def _conversations(items, first: int, count: int):
    """The rated items of ``count`` consecutive conversations (groups), starting at the ``first``-th."""
    groups: list[str] = []
    for it in items:
        if it.group not in groups:
            groups.append(it.group)
    keep = set(groups[first:first + count])
    return [it for it in items if it.group in keep and it.human("appropriateness") is not None]


def test_examples_come_from_each_calls_own_items(zhao):
    """Two calls on different conversations: each call's examples are its own items (the second call's
    came from the first call's items before). Which examples are shown is the selector's business, not the
    model's: the mock backend answers here (deterministic, no model), keeping the real BM25 and templates."""
    quality = dataset_info("dailydialog-zhao").quality("appropriateness")
    judge = make_judge(prompt="yesno", selector="bm25-context", k=2, quality=quality, backend="mock")
    first, second = _conversations(zhao, 0, 6), _conversations(zhao, 6, 6)
    assert first and second and not {it.id for it in first} & {it.id for it in second}
    for items in (first, second, first):
        own = {it.id for it in items}
        scores = list(judge.score(items))
        shown = [ex for s in scores for ex in s.examples]
        assert all(s.ok for s in scores) and shown
        assert set(shown) <= own, f"{len(set(shown) - own)} examples from another call's items"
    assert judge.pool is None  # nothing from a call is kept for the next


def test_quality_by_name(zhao):
    """A registered quality's name gives that quality; its examples carry the 1-5 labels (the mock backend
    answers: the quality is resolved before any model, and the examples come from the real selector)."""
    judge = make_judge(prompt="yesno", selector="bm25-context", k=2, quality="appropriateness", backend="mock")
    assert judge.quality == dataset_info("dailydialog-zhao").quality("appropriateness")
    items = _conversations(zhao, 0, 4)
    scores = list(judge.score(items))
    assert all(s.ok and len(s.examples) == 2 for s in scores)


def test_quality_by_name_read_from_the_pool(zhao, data_dir):
    """With a pool, the name is read against the pool's set: FED's turn-level Overall is 0-4."""
    fed = load_benchmark("fed-turn", data_dir)
    judge = make_judge(prompt="fed", selector="manual", k=3, pool=fed, quality="overall")
    assert judge.quality == dataset_info("fed-turn").quality("Overall") and judge.quality.max == 4


@pytest.mark.parametrize("name,parts", [
    ("apropriateness", ["unknown quality 'apropriateness'", "Did you mean: appropriateness", "Quality object"]),
    ("Overall", ["different scales or levels", "fed-turn", "topical-usr", "dataset_info("]),
])
def test_bad_quality_name_is_refused_before_a_model_loads(no_model, name, parts):
    with pytest.raises(InputError) as info:
        make_judge(prompt="yesno", selector="bm25-context", k=2, quality=name)
    assert info.value.field == "quality"
    for part in parts:
        assert part in str(info.value)


def test_mistyped_rule_is_refused_before_a_model_loads(no_model):
    with pytest.raises(UnknownNameError, match=r"unknown scoring rule 'expectd'.*Did you mean: expected"):
        make_judge(prompt="rating", rule="expectd")
    with pytest.raises(ModelLoaded):  # control: a correct rule reaches the (tripwired) backend
        make_judge(prompt="rating", rule="expected")
