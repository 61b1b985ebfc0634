"""In-context example selection: selectors on hand-made pools, the leakage guard on real data,
shipped manual sets against the real FED data, window fitting and scoring with the real model."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from judge.core.errors import InputError, UnknownNameError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.data.qualities import QUALITY_GROUPS, Quality
from judge.prompts.templates import get_prompt
from judge.selectors import ORDERS, SELECTOR_NAMES, Selector, get_selector
from judge.selectors.bm25 import field_text, tokenize
from judge.selectors.manual import load_manual_set, shipped_sets

ROOT = Path(__file__).resolve().parents[1]
FED_TURN, FED_DIAL = QUALITY_GROUPS["fed-turn"], QUALITY_GROUPS["fed-dial"]


def mk(i: str, ctx: str, resp: str, overall: float = 3.0, group: str | None = None) -> Item:
    return Item(id=i, level="turn", context=(Turn(USER, ctx),), response=resp, group=group,
                annotations={"overall": (overall,)})


# A small pool: two items share group "g1" (two responses to one context), "dup" items have equal texts.
POOL = [
    mk("a", "do you like jazz music", "yes I love jazz, especially Coltrane", 5, "g1"),
    mk("b", "do you like jazz music", "no", 1, "g1"),
    mk("c", "what is the weather like today", "it is raining in Paris", 4, "g2"),
    mk("d", "any tips for cooking pasta", "salt the water well and do not overcook it", 4, "g3"),
    mk("e", "i play the guitar in a jazz band", "cool, which music do you play?", 3, "g4"),
    mk("f", "my cat is sick", "I hope your cat gets better soon", 5, "g5"),
    mk("dup1", "tell me about football", "I like football", 2, "g6"),
    mk("dup2", "tell me about football", "I like football", 2, "g7"),
]
OVERALL = Quality("overall", "turn", 1, 5)
TEST = mk("t", "do you like jazz music", "I like jazz music a lot", 4, "g1")


def direct_bm25(field: str, item: Item, pool: list[Item]) -> list[float]:
    bm = BM25Okapi([tokenize(field_text(p, field)) for p in pool])
    return list(bm.get_scores(tokenize(field_text(item, field))))


# -- names and options ---------------------------------------------------------------------------

def test_every_name_builds_a_selector_with_uniform_options():
    for name in SELECTOR_NAMES:
        sel = get_selector(name, seed=3, group_guard=False, manual_set=None, order="descending")
        assert isinstance(sel, Selector)
        d = sel.describe()
        assert (d["selector"], d["seed"], d["group_guard"], d["order"]) == (name, 3, False, "descending")


def test_unknown_selector_and_order_suggest_close_names():
    with pytest.raises(UnknownNameError, match="bm25-context"):
        get_selector("bm25-contxt")
    with pytest.raises(UnknownNameError, match="ascending"):
        get_selector("random", order="ascendng")


def test_zero_shot_and_k_zero_give_no_examples():
    assert get_selector("none").select(TEST, POOL, 4) == []
    for name in ("random", "bm25-context"):
        assert get_selector(name).select(TEST, POOL, 0) == []


# -- leakage guard --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["random", "bm25-context", "bm25-response", "bm25-context-response"])
def test_guard_excludes_the_item_and_its_group(name):
    pool = POOL + [TEST]
    for seed in range(5):
        got = get_selector(name, seed=seed).select(TEST, pool, len(pool))
        assert {x.id for x in got} == {p.id for p in pool} - {"a", "b", "t"}
        free = get_selector(name, seed=seed, group_guard=False).select(TEST, pool, len(pool))
        assert {x.id for x in free} == {p.id for p in pool} - {"t"}  # never the item itself


def test_guard_on_usr_data_no_example_shares_the_test_context(data_dir):
    from judge.datasets import load_benchmark

    usr = load_benchmark("topical-usr", data_dir)
    tests = usr[::12]  # 30 items, several responses per context in the pool
    shared_without_guard = 0
    for name in ("bm25-context", "random", "bm25-context-response"):
        sel = get_selector(name, seed=1)
        for it in tests:
            ex = sel.select(it, usr, 4)
            assert len(ex) == 4
            for e in ex:
                assert e.id != it.id and e.group != it.group
                assert e.context != it.context
    # Without the guard, BM25 on the context finds the other responses to the same context: the guard matters.
    free = get_selector("bm25-context", group_guard=False)
    for it in tests:
        shared_without_guard += sum(e.context == it.context for e in free.select(it, usr, 4))
    assert shared_without_guard >= len(tests)


# -- random ---------------------------------------------------------------------------------------

def test_random_is_seeded_per_seed_and_item():
    sel = get_selector("random", seed=7)
    allowed = [i for i, p in enumerate(POOL) if p.group != TEST.group]
    expected = [POOL[i] for i in random.Random("7:t").sample(allowed, 3)]
    assert sel.rank(TEST, POOL, 3) == expected
    assert sel.select(TEST, POOL, 3) == expected[::-1]  # ascending: first drawn is nearest the test item
    # Same seed, fresh selector (as on another machine or run): same examples; for an item, the
    # choice does not depend on which other items were scored before.
    other = get_selector("random", seed=7)
    other.select(POOL[3], POOL, 3)
    assert other.select(TEST, POOL, 3) == sel.select(TEST, POOL, 3)
    draws = {tuple(x.id for x in get_selector("random", seed=s).select(TEST, POOL, 3)) for s in range(6)}
    assert len(draws) > 1


def test_random_k_larger_than_pool_returns_all_allowed():
    got = get_selector("random").select(TEST, POOL, 50)
    assert sorted(x.id for x in got) == sorted(p.id for p in POOL if p.group != "g1")


# -- BM25 -----------------------------------------------------------------------------------------

def test_tokenizer_lowercases_and_splits_on_punctuation():
    assert tokenize("Don't STOP-me now, ok?  Café!") == ["don", "t", "stop", "me", "now", "ok", "café"]


@pytest.mark.parametrize("name,field", [("bm25-context", "context"), ("bm25-response", "response"),
                                        ("bm25-context-response", "context-response")])
def test_bm25_ranking_matches_rank_bm25_scores(name, field):
    sel = get_selector(name, order="descending")
    scores = direct_bm25(field, TEST, POOL)
    expected = sorted((i for i, p in enumerate(POOL) if p.group != "g1"), key=lambda i: (-scores[i], i))
    got = sel.select(TEST, POOL, 4)
    assert [x.id for x in got] == [POOL[i].id for i in expected[:4]]
    assert sel.scores(TEST, POOL) == pytest.approx(scores)


def test_bm25_context_picks_the_obvious_neighbour_and_breaks_ties_by_pool_order():
    query = mk("q", "a jazz band", "ok", 3, "gq")
    got = get_selector("bm25-context", order="descending").select(query, POOL, 1)
    assert got[0].id == "e"  # the only context with both "jazz" and "band"
    football = mk("q2", "tell me about football", "sure", 3, "gq")
    top2 = get_selector("bm25-context", order="descending").select(football, POOL, 2)
    assert [x.id for x in top2] == ["dup1", "dup2"]  # equal scores: earlier in the pool first


def test_bm25_index_is_built_once_per_pool():
    sel = get_selector("bm25-context")
    first = sel.index(POOL)
    for it in POOL:
        sel.select(it, POOL, 2)
    assert sel.index(list(POOL)) is first  # same ids in the same order: same index
    assert len(sel._indexes) == 1
    assert sel.index(POOL[:4]) is not first


def test_orders():
    desc = get_selector("bm25-context", order="descending").select(TEST, POOL, 3)
    asc = get_selector("bm25-context", order="ascending").select(TEST, POOL, 3)
    sel = get_selector("bm25-context", order="as-selected").select(TEST, POOL, 3)
    assert asc == desc[::-1] and sel == desc
    assert set(ORDERS) == {"ascending", "descending", "as-selected"}


# -- manual sets ----------------------------------------------------------------------------------

def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_manual_user_toml_with_alternates(tmp_path):
    path = write(tmp_path, "mine.toml", 'examples = ["b", "c", "a"]\nalternates = [["d"], [], ["f", "e"]]\n')
    sel = get_selector("manual", manual_set=str(path))
    far = mk("z", "something else", "fine", 3, "gz")
    assert [x.id for x in sel.select(far, POOL, 3, OVERALL)] == ["b", "c", "a"]  # file order is prompt order
    assert [x.id for x in get_selector("manual", manual_set=str(path),
                                       order="descending").select(far, POOL, 3, OVERALL)] == ["a", "c", "b"]
    assert [x.id for x in sel.select(far, POOL, 2, OVERALL)] == ["b", "c"]
    # TEST shares group g1 with a and b: their alternates stand in (b has d; a has f).
    assert [x.id for x in sel.select(TEST, POOL, 3, OVERALL)] == ["d", "c", "f"]
    # Without the group guard only the item itself is replaced.
    free = get_selector("manual", manual_set=str(path), group_guard=False)
    assert [x.id for x in free.select(POOL[2], POOL, 3, OVERALL)] == ["b", "a"]  # c is the test item, no alternate


def test_manual_missing_ids_are_listed(tmp_path):
    path = write(tmp_path, "mine.toml", '[turn."overall"]\nexamples = ["a", "nope1", "nope2"]\n')
    sel = get_selector("manual", manual_set=str(path))
    with pytest.raises(InputError, match="nope1, nope2") as err:
        sel.select(TEST, POOL, 3, OVERALL)
    assert str(path) in str(err.value)
    with pytest.raises(InputError, match="no examples for quality 'fluent'"):
        get_selector("manual", manual_set=str(path)).select(TEST, POOL, 3, Quality("fluent", "turn", 0, 2))
    with pytest.raises(UnknownNameError, match="fed"):
        get_selector("manual", manual_set="fedd").select(TEST, POOL, 3, OVERALL)
    with pytest.raises(InputError, match="needs a quality"):
        sel.select(TEST, POOL, 3)


def test_manual_inline_jsonl_examples(tmp_path):
    lines = [
        {"id": "ex1", "context": [{"speaker": "user", "text": "hi"}], "response": "go away", "scores": {"overall": 1}},
        {"id": "ex2", "context": [{"speaker": "user", "text": "hello"}], "response": "hello! how are you?",
         "scores": {"overall": 5}},
    ]
    path = write(tmp_path, "mine.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    sel = get_selector("manual", manual_set=str(path))
    got = sel.select(TEST, [], 3, OVERALL)  # inline examples need no pool
    assert [x.id for x in got] == ["ex1", "ex2"] and got[1].human("overall") == 5


def test_shipped_fed_set_resolves_for_every_quality(data_dir):
    from judge.datasets import load_benchmark

    assert "fed" in shipped_sets()
    for dataset, level, qualities in (("fed-turn", "turn", FED_TURN), ("fed-dial", "dialog", FED_DIAL)):
        items = load_benchmark(dataset, data_dir)
        by_id = {it.id: it for it in items}
        for q in qualities:
            sel = get_selector("manual")
            outsider = Item(id="x", level=level, context=(Turn(USER, "hi"),), response="hey",
                            dialog=(Turn(USER, "hi"), Turn(SYSTEM, "hey")), group="x", dataset=dataset)
            ex = sel.select(outsider, items, 3, q)
            assert len(ex) == 3 and len({e.group for e in ex}) == 3
            labels = [e.human(q.name) for e in ex]
            assert labels == sorted(labels) and labels[0] < labels[-1]  # low, middle, high
            # The rule's ends: no rated item is lower than the low example or higher than the high one.
            rated = [it.human(q.name) for it in items if len(it.annotations.get(q.name, ())) >= 3]
            assert labels[0] == min(rated) and labels[-1] == max(rated)
            # Each example as a test item: 3 examples still, never itself or its conversation.
            for e in ex:
                got = sel.select(by_id[e.id], items, 3, q)
                assert len(got) == 3 and all(g.group != e.group and g.id != e.id for g in got)
    # The original release numbers items the same way: the set resolves there too.
    fed = load_benchmark("fed", data_dir)
    fed_overall = next(q for q in FED_TURN if q.name == "Overall")
    assert len(get_selector("manual").select(fed[5], fed, 3, fed_overall)) == 3


def test_shipped_fed_set_is_what_the_documented_rule_gives(data_dir):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import make_manual_sets
    finally:
        sys.path.remove(str(ROOT / "tools"))
    shipped = shipped_sets()["fed"]
    assert make_manual_sets.render(str(data_dir)) == shipped.read_text(encoding="utf-8")
    ms = load_manual_set("fed")
    assert len(ms.entries) == len(FED_TURN) + len(FED_DIAL)


# -- labels ---------------------------------------------------------------------------------------

def test_example_labels_rating_and_yesno_threshold():
    overall = next(q for q in FED_TURN if q.name == "Overall")  # 0..4
    rating = get_prompt("fed-turn-overall")
    lab = lambda tmpl, v, q: tmpl.example_label(Item("x", "turn", annotations={q.name: v}), q)  # noqa: E731
    assert lab(rating, (2.4,), overall) == "2/4"
    assert lab(rating, (2.5,), overall) == "3/4"  # half rounds up
    assert lab(rating, (3.0, 4.0, 4.0), overall) == "4/4"
    yesno = get_prompt("yesno")
    assert yesno.answer.threshold == 0.5
    assert lab(yesno, (2.0,), overall) == "Yes"  # exactly half way up the scale
    assert lab(yesno, (1.9,), overall) == "No"
    overall_1_5 = Quality("overall", "turn", 1, 5, "good the response is overall")
    assert lab(yesno, (3.0,), overall_1_5) == "Yes"  # 1..5 scale: (3-1)/4 = .5
    assert lab(yesno, (2.9,), overall_1_5) == "No"


# -- prompts with the real model ------------------------------------------------------------------

@pytest.mark.slow
def test_end_to_end_bm25_dstc10_yesno_and_manual_fed(data_dir, smollm2):
    from judge.datasets import load_benchmark
    from judge.datasets.benchmarks import dataset_info
    from judge.scorers.llm import LLMJudge

    # DailyDialog-Zhao: a DSTC10 set with short contexts (a cheap 4-shot prompt), ~9 responses per context.
    info = dataset_info("dailydialog-zhao")
    dz = load_benchmark("dailydialog-zhao", data_dir)
    q = info.quality("appropriateness")
    judge = LLMJudge(get_prompt("yesno"), smollm2, quality=q, selector=get_selector("bm25-context"), k=4, pool=dz)
    item = dz[7]
    prompt, shown = judge.build_prompt(item)
    expected = get_selector("bm25-context").select(item, dz, 4)
    assert shown == expected and len(shown) == 4
    assert prompt.text.count("Answer: Yes") + prompt.text.count("Answer: No") == 4
    for ex in shown:
        assert ex.response in prompt.text
        assert f"Answer: {'Yes' if (ex.human('appropriateness') - 1) / 4 >= 0.5 else 'No'}" in prompt.text
    assert prompt.text.rindex(shown[-1].response) < prompt.text.rindex(item.response)
    score = next(judge.score([item]))
    assert score.ok, score.error
    assert score.examples == [ex.id for ex in shown]
    yes, no = score.label_probs["yes"], score.label_probs["no"]
    assert score.value == pytest.approx(yes / (yes + no)) and 0.0 < score.value < 1.0

    fed = load_benchmark("fed-turn", data_dir)
    fq = next(q for q in FED_TURN if q.name == "Overall")
    manual = LLMJudge(get_prompt("fed-turn-overall"), smollm2, quality=fq,
                      selector=get_selector("manual"), k=3, pool=fed)
    item = fed[30]  # a short context: a cheap prompt
    prompt, shown = manual.build_prompt(item)
    # fed[30] shares its conversation with a set example: that example's first alternate from
    # another conversation stands in.
    by_id = {it.id: it for it in fed}
    slots = load_manual_set("fed").entry("turn", "Overall").slots()
    ids = [next(i for i in slot if by_id[i].group != item.group) for slot in slots]
    assert ids != [slot[0] for slot in slots]
    assert [e.id for e in shown] == ids
    for n, ex in enumerate(shown, 1):
        assert f"== Example {n} ==" in prompt.text
        assert f"Rating: {manual.prompt.example_label(ex, fq)}" in prompt.text
    score = next(manual.score([item]))
    assert score.ok, score.error
    assert score.examples == ids and 0.0 <= score.value <= 4.0


@pytest.fixture(scope="module")
def small_ctx():
    """A second real backend with a small window (llama.cpp rounds n_ctx up to a multiple of 256)."""
    from judge.backends import create_backend
    from judge.core.config import GenerateConfig

    backend = create_backend("llamacpp", None, GenerateConfig(threads=2, max_context=512))
    yield backend
    backend.close()


@pytest.mark.slow
def test_window_fitting_drops_least_relevant_first_with_real_model(data_dir, small_ctx):
    from judge import Prompt
    from judge.datasets import load_benchmark
    from judge.datasets.benchmarks import dataset_info
    from judge.scorers.llm import LLMJudge

    dz = load_benchmark("dailydialog-zhao", data_dir)
    q = dataset_info("dailydialog-zhao").quality("appropriateness")
    tmpl, item, k = get_prompt("yesno"), dz[40], 8
    ranked = get_selector("bm25-context").rank(item, dz, k)
    ctx = small_ctx.capabilities.max_context

    def size(n: int) -> int:  # tokens of the prompt showing the n most relevant examples
        shown = ranked[:n][::-1]
        text = tmpl.render(item, [(e, tmpl.example_label(e, q)) for e in shown], q)
        return small_ctx.count_tokens(Prompt(text, chat=True))

    fits = max(n for n in range(k + 1) if size(n) <= ctx - 1)
    assert 0 < fits < k, "the test needs a prompt that fits some but not all examples"
    judges = {}
    for order, expect in (("ascending", ranked[:fits][::-1]), ("descending", ranked[:fits])):
        judge = LLMJudge(tmpl, small_ctx, quality=q, selector=get_selector("bm25-context", order=order), k=k,
                         pool=dz, chat=True)
        prompt, shown = judge.build_prompt(item)
        assert shown == expect  # the least relevant were dropped, whatever the display order
        assert small_ctx.count_tokens(prompt) <= ctx - 1
        judges[order] = judge
    score = next(judges["descending"].score([item]))
    assert score.ok, score.error
    assert score.examples == [e.id for e in ranked[:fits]]  # the count used is len(examples)
    # A test item that does not fit even alone fails visibly; it is never cut.
    long_item = Item(id="long", level="turn", context=(Turn(USER, "word " * (ctx + 50)),), response="ok",
                     group="long")
    score = next(judges["ascending"].score([long_item]))
    assert not score.ok and "nothing was cut" in score.error and score.examples == []


# -- command line ---------------------------------------------------------------------------------

def test_cli_rejects_bad_selection_options_before_loading_a_model(tmp_path, data_dir, capsys):
    from judge.cli import main

    args = ["bench", "--data-dir", str(data_dir), "--dataset", "fed-turn", "--limit", "2"]
    assert main(args + ["--selector", "bm25-contxt", "--k", "2"]) == 2
    assert "bm25-context" in capsys.readouterr().err
    assert main(args + ["--k", "2"]) == 2
    assert "needs an example selector" in capsys.readouterr().err
    bad = write(tmp_path, "set.toml", 'examples = ["fed-turn_00001", "missing_7"]\n')
    assert main(args + ["--selector", "manual", "--k", "2", "--manual-set", str(bad)]) == 2
    assert "missing_7" in capsys.readouterr().err
    assert main(args + ["--selector", "random", "--k", "2", "--seeds", "0,x"]) == 2


@pytest.mark.slow
def test_cli_bench_random_seeds_and_score_records_selection(tmp_path, data_dir):
    # A bare environment (no JUDGE_CACHE: the default cache location is used), but HOME is a temporary
    # folder: the default location lies under ~/.cache/judge, and no test may write to the user's home.
    home = tmp_path / "home"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(home)}
    out = tmp_path / "bench.jsonl"
    res = subprocess.run(
        [sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", "dailydialog-zhao",
         "--limit", "3", "--selector", "random", "--k", "1", "--threads", "2", "--no-group-guard", "-o", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "group guard OFF" in res.stdout and "seeds 0,1,2" in res.stdout
    assert sum(line.startswith("seed ") for line in res.stdout.splitlines()) == 3
    assert "spearman  mean" in res.stdout and "examples  1.00 shown per item" in res.stdout
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 9 and [r["seed"] for r in rows] == [0] * 3 + [1] * 3 + [2] * 3
    assert all(len(r["examples"]) == 1 for r in rows)

    items = tmp_path / "mine.jsonl"
    recs = [{"id": f"i{n}", "context": [{"speaker": "user", "text": t}], "response": r, "scores": {"overall": s},
             "scales": {"overall": [1, 5]}}
            for n, (t, r, s) in enumerate([("do you like jazz", "yes, Coltrane!", 5), ("do you like jazz", "no", 2),
                                           ("any tips for pasta", "salt the water", 4)])]
    items.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    res = subprocess.run(
        [sys.executable, "-m", "judge", "score", str(items), "--selector", "bm25-context", "--k", "2",
         "--threads", "2", "--example-order", "descending", "-o", str(tmp_path / "s.jsonl")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [r["examples"] for r in rows] == [["i2"], ["i2"], ["i0", "i1"]]  # i0/i1 share a context: guarded
    meta = json.loads((tmp_path / "s.meta.json").read_text())
    assert {k: meta["scorer"][k] for k in ("selector", "seed", "group_guard", "order", "field", "k")} == {
        "selector": "bm25-context", "seed": 0, "group_guard": True, "order": "descending", "field": "context", "k": 2}
    assert (home / ".cache" / "judge" / "cache.sqlite").is_file()  # the default cache went to the fake home
