"""Pairwise judging (docs/pairwise.md): templates, pairs, the pairwise judge as a lane of the unit of work,
``judge compare`` on a DSTC10 set and on two user files, ``[[compare]]`` cells of ``judge run``, and the
refusals that keep a pairwise method out of the entry points that score one item. The engine, harness and
CLI logic run on the mock backend; one test runs SmolLM2 end to end, with both orders evaluating the
conversation once, and the slow suite runs the documented commands as written."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from judge.backends.base import LabelDist
from judge.cli import main
from judge.core.config import GenerateConfig
from judge.core.errors import InputError, MissingInputError, TemplateError
from judge.data.items import Item, Turn
from judge.data.pairs import pairs_between, pairs_within, sample_contexts
from judge.datasets import load_benchmark, load_items
from judge.datasets.benchmarks import dataset_info
from judge.engine import BackendPool, MethodSpec, build, prepare
from judge.engine.compare import PAIR_ROW_KEYS, compare_rows, prepare_pairs
from judge.harness.config import parse_experiment
from judge.prompts.answers import Pairwise
from judge.prompts.templates import common_head, get_prompt, load_template, short_sha
from judge.records.pair_rows import PairRow, read_pair_rows
from judge.scorers.pairwise import AB, BA, PairwiseJudge

ROOT = Path(__file__).resolve().parents[1]
V1, V2 = ROOT / "examples" / "bot_v1.jsonl", ROOT / "examples" / "bot_v2.jsonl"


def turn(i: str, context: str, response: str, system: str | None, score: float | None = None, fact: str | None = None
         ) -> Item:
    return Item(id=i, level="turn", context=(Turn("user", context),), response=response, system=system, fact=fact,
                annotations={"overall": (score,)} if score is not None else {})


def mock_judge(prompt: str = "pairwise", orders: str = "both", seed: int = 0) -> PairwiseJudge:
    spec = MethodSpec(type="pairwise", prompt=prompt, orders=orders, seeds=(seed,), backend="mock",
                      generate=GenerateConfig(cache=False))
    judge = build(prepare_pairs(spec, [], None), BackendPool())
    assert isinstance(judge, PairwiseJudge)
    return judge


# -- templates ----------------------------------------------------------------------------------------
def test_pairwise_templates_show_both_replies_and_share_everything_before_the_first():
    q = dataset_info("TU").quality("Overall")
    a = turn("a", "Any tips for Kyoto?", "Go early to Fushimi Inari.", "x", fact="Kyoto has many shrines.")
    b = turn("b", "Any tips for Kyoto?", "No.", "y", fact="Kyoto has many shrines.")
    for name, labels in (("pairwise", ("A", "B")), ("pairwise-tie", ("A", "B", "equal"))):
        t = get_prompt(name)
        assert isinstance(t.answer, Pairwise) and t.answer.labels == labels and t.level == "turn"
        ab, ba = t.render(a, [], q, (), ("Go early to Fushimi Inari.", "No.")), t.render(b, [], q, (), ("No.", "Go early to Fushimi Inari."))
        assert ab.index("Reply A: Go early") < ab.index("Reply B: No.") and ab.endswith("Answer:")
        assert "good the response is overall" in ab  # the quality says what "better" means
        assert "You judge chatbot replies. A good reply fits the conversation" in ab  # the criteria wording
        head = common_head([ab, ba])
        assert head.endswith("User: Any tips for Kyoto?\n") and "Background: Kyoto has many shrines." in head
        # the item-independent head (instructions) ends before the conversation
        fixed = t.instructions_chars(ab, q, level="turn")
        assert 0 < fixed < len(head) and not ab[:fixed].count("Kyoto")


def test_pairwise_labels_are_single_tokens_of_smollm2_and_read_from_it(smollm2):
    from judge.prompts.answers import check_labels, unreadable_labels

    for name in ("pairwise", "pairwise-tie"):
        answer = get_prompt(name).answer
        check_labels(answer, smollm2, template=name)
        assert unreadable_labels(answer, smollm2.single_token) == []


@pytest.mark.parametrize("meta, message", [
    ('answer = "pairwise"\nlabels = ["A"]', "must be two non-empty texts"),
    ('answer = "pairwise"\nlabels = ["A", "B"]\ntie = "A"', "must be distinct"),
    ('answer = "pairwise"\nlevel = "dialog"', "its level is 'turn'"),
    ('answer = "yesno"\ntie = "equal"', "belongs to pairwise templates"),
])
def test_pairwise_metadata_is_checked(tmp_path, meta, message):
    path = tmp_path / "t.j2"
    path.write_text("{#- judge\n" + meta + "\n-#}\n{{ response_a }} {{ response_b }}\nAnswer:")
    with pytest.raises(TemplateError, match=message):
        load_template(path)


def test_a_pairwise_template_is_not_an_llm_method_and_a_pointwise_one_not_a_pairwise_method():
    with pytest.raises(InputError, match="compares two replies"):
        prepare(MethodSpec(prompt="pairwise", backend="mock"), [turn("a", "hi", "yo", "x")])
    with pytest.raises(InputError, match="asks about one reply"):
        prepare_pairs(MethodSpec(type="pairwise", prompt="yesno-criteria", backend="mock"), [], None)
    # the spec-wide default prompt, named on purpose, is refused rather than replaced by the pairwise default
    with pytest.raises(InputError, match=r"compare\[0\]\.prompt: prompt 'yesno' asks about one reply"):
        parse_experiment({"datasets": ["TU"], "compare": [{"prompt": "yesno"}]})
    assert main(["compare", str(V1), str(V2), "--prompt", "yesno", "--backend", "mock"]) == 2


# -- pairs ----------------------------------------------------------------------------------------------
def test_pairs_within_a_file_pair_every_two_systems_of_a_context():
    items = [turn("1", "c1", "r1", "x"), turn("2", "c1", "r2", "y"), turn("3", "c1", "r3", "z"),
             turn("4", "c2", "r4", "y"), turn("5", "c2", "r5", "x"), turn("6", "c3", "r6", "x")]
    found = pairs_within(items, file="f.jsonl")
    assert [(p.a.id, p.b.id) for p in found.pairs] == [("1", "2"), ("1", "3"), ("2", "3"), ("5", "4")]  # x before y
    assert found.systems == ["x", "y", "z"] and found.single == 1 and "1 context left out" in found.notes[0]
    base = pairs_within(items, file="f.jsonl", baseline="x")
    assert [(p.system_a, p.system_b) for p in base.pairs] == [("y", "x"), ("z", "x"), ("y", "x")]
    only = pairs_within(items, file="f.jsonl", systems=["y", "z"])
    assert [(p.a.id, p.b.id) for p in only.pairs] == [("2", "3")]
    # same turns, another background fact: another context
    facts = [turn("1", "c", "r1", "x", fact="f1"), turn("2", "c", "r2", "y", fact="f2")]
    with pytest.raises(MissingInputError, match="one system per context"):
        pairs_within(facts, file="f.jsonl")


def test_bad_pairing_names_the_file_and_the_record():
    with pytest.raises(InputError, match=r"f\.jsonl, record 2, field 'system'"):
        pairs_within([turn("1", "c", "r", "x"), turn("2", "c", "r2", None)], file="f.jsonl")
    with pytest.raises(InputError, match=r"no item of the file is by system 'w'"):
        pairs_within([turn("1", "c", "r", "x"), turn("2", "c", "r2", "y")], file="f.jsonl", baseline="w")
    with pytest.raises(InputError, match=r"b\.jsonl has no item with this id"):
        pairs_between([turn("1", "c", "r", None), turn("2", "d", "r", None)], [turn("1", "c", "s", None)],
                      file_a="a.jsonl", file_b="b.jsonl")
    with pytest.raises(InputError, match=r"a\.jsonl, record 1, field 'context': the item with this id"):
        pairs_between([turn("1", "c", "r", None)], [turn("1", "d", "s", None)], file_a="a.jsonl", file_b="b.jsonl")
    with pytest.raises(InputError, match=r"no item answering this context"):
        pairs_between([turn("1", "c", "r", None)], [turn("9", "d", "s", None)], file_a="a.jsonl", file_b="b.jsonl")


def test_two_files_pair_by_id_else_by_context():
    a, b = load_items(V1), load_items(V2)
    by_id = pairs_between(a, b, file_a=str(V1), file_b=str(V2))
    assert [p.a.id for p in by_id.pairs] == [p.b.id for p in by_id.pairs] and len(by_id.pairs) == 8 and by_id.systems == ["bot-v1", "bot-v2"]
    renamed = [Item(**{**{f: getattr(it, f) for f in it.__slots__}, "id": "n" + it.id}) for it in b]  # type: ignore[attr-defined]
    by_context = pairs_between(a, renamed, file_a=str(V1), file_b=str(V2))
    assert [p.b.id for p in by_context.pairs] == ["n" + it.id for it in a]


def test_seeded_contexts_keep_whole_contexts_in_order(data_dir):
    pairs = pairs_within(load_benchmark("dailydialog-zhao", str(data_dir)), file="DZ").pairs
    few = sample_contexts(pairs, 3, 7)
    assert len({p.context for p in few}) == 3 and len(few) == 3 * 36
    assert few == sample_contexts(pairs, 3, 7) and few != sample_contexts(pairs, 3, 8)
    assert [pairs.index(p) for p in few] == sorted(pairs.index(p) for p in few)


# -- the judge: both orders, one unit of work ------------------------------------------------------------
def test_both_orders_are_one_item_of_work_with_two_requests_sharing_the_conversation():
    judge = mock_judge()
    p = pairs_within([turn("1", "Any tips for Kyoto?", "Go early.", "x"), turn("2", "Any tips for Kyoto?", "No.", "y")],
                     file="f").pairs[0]
    work = judge.work(p)
    assert len(work.requests) == 2 and {r.kind for r in work.requests} == {"label"}
    ab, ba = (r.prompt for r in work.requests)
    assert "Reply A: Go early." in ab.text and "Reply A: No." in ba.text
    assert ab.shared == ba.shared == ab.text.index("Reply A:") and ab.text[:ab.shared] == ba.text[:ba.shared]
    assert 0 < ab.instructions < ab.shared
    assert work.requests[0].candidates == ("A", " A", "B", " B")


def dist(**probs: float) -> LabelDist:
    return LabelDist({k: math.log(v) for k, v in probs.items()})


def test_the_preference_is_the_mean_of_p_a_over_both_orders_and_disagreeing_orders_are_a_tie():
    judge = mock_judge()
    p = pairs_within([turn("1", "c", "r1", "x"), turn("2", "c", "r2", "y")], file="f").pairs[0]
    # order ab: A (system a) .8; order ba: A (now system b) .6, so p(a) .4 there
    s = judge.to_score(p, (AB, BA), [dist(A=0.4, B=0.1), dist(A=0.3, B=0.2)])
    assert s.value == pytest.approx((0.8 + 0.4) / 2) and s.winner == "tie" and s.consistent is False
    assert [o.winner for o in s.orders] == ["a", "b"]
    agree = judge.to_score(p, (AB, BA), [dist(A=0.4, B=0.1), dist(A=0.1, B=0.3)])
    assert agree.winner == "a" and agree.consistent is True and agree.value == pytest.approx((0.8 + 0.75) / 2)
    failed = judge.to_score(p, (AB, BA), [dist(A=0.4, B=0.1), LabelDist({})])
    assert failed.value is None and "order ba" in str(failed.error) and "no probability" in str(failed.error)


def test_a_tie_label_counts_half_to_each_side():
    judge = mock_judge("pairwise-tie")
    p = pairs_within([turn("1", "c", "r1", "x"), turn("2", "c", "r2", "y")], file="f").pairs[0]
    s = judge.to_score(p, (AB, BA), [dist(A=0.2, B=0.2, equal=0.6), dist(A=0.2, B=0.2, equal=0.6)])
    assert s.value == pytest.approx(0.5) and s.tie == pytest.approx(0.6) and s.winner == "tie"


def test_one_order_is_drawn_per_pair_by_a_seed():
    items = load_items(V1) + load_items(V2)
    pairs = pairs_within(items, file="two").pairs
    orders = [mock_judge(orders="one", seed=0).orders_of(p) for p in pairs]
    assert all(len(o) == 1 for o in orders) and {o[0] for o in orders} == {AB, BA}
    assert orders == [mock_judge(orders="one", seed=0).orders_of(p) for p in pairs]
    assert orders != [mock_judge(orders="one", seed=1).orders_of(p) for p in pairs]
    rows: list[dict] = []
    compare_rows(mock_judge(orders="one"), pairs, "one", "overall", lambda r: rows.append(r.to_dict()))
    assert all(len(r["orders"]) == 1 and r["consistent"] is None for r in rows)


def test_pair_rows_follow_the_schema():
    pairs = pairs_between(load_items(V1), load_items(V2), file_a=str(V1), file_b=str(V2)).pairs
    rows: list[dict] = []
    assert compare_rows(mock_judge(), pairs, "pw", "overall", lambda r: rows.append(r.to_dict())) == 0
    assert [list(r) for r in rows] == [list(PAIR_ROW_KEYS)] * len(pairs)
    r = rows[0]
    assert (r["id"], r["system_a"], r["system_b"], r["human_a"], r["human_b"]) == ("c01", "bot-v1", "bot-v2", 2.0, 5.0)
    assert [o["order"] for o in r["orders"]] == ["ab", "ba"] and set(r["orders"][0]["label_probs"]) == {"A", "B"}
    assert r["length_b"] > r["length_a"] and r["n_prompt_tokens"] > 0


def test_pair_rows_record_the_hashes_of_their_prompts_and_template_and_old_rows_still_read(tmp_path):
    pairs = pairs_between(load_items(V1), load_items(V2), file_a=str(V1), file_b=str(V2)).pairs
    judge = mock_judge()
    rows: list[PairRow] = []
    compare_rows(judge, pairs, "pw", "overall", rows.append)
    texts = [judge.render(pairs[0], o) for o in (AB, BA)]
    assert rows[0].prompt_sha == short_sha("\x1f".join(texts)) and rows[0].template_sha == judge.prompt.sha
    assert len({r.prompt_sha for r in rows}) == len(pairs)
    old = {k: v for k, v in rows[0].to_dict().items() if k not in ("prompt_sha", "template_sha")}
    (tmp_path / "pairs.jsonl").write_text(json.dumps(old) + "\n")
    assert read_pair_rows(tmp_path / "pairs.jsonl")[0].prompt_sha is None


# -- refusals: a pairwise method scores no item alone ---------------------------------------------------
def test_entry_points_that_score_items_refuse_a_pairwise_method(tmp_path, capsys):
    methods = tmp_path / "m.toml"
    methods.write_text('[[methods]]\nname = "pw"\ntype = "pairwise"\nbackend = "mock"\n')
    assert main(["score", str(V1), "--method", "pw", "--methods-file", str(methods)]) == 2
    assert "compares two replies to one context and scores no item alone" in capsys.readouterr().err
    with pytest.raises(InputError, match=r"methods\[0\]\.type: a pairwise method compares two replies"):
        parse_experiment({"datasets": ["TU"], "methods": [{"type": "pairwise"}]})
    with pytest.raises(InputError, match="compares two replies"):
        prepare(MethodSpec(type="ensemble", members=(MethodSpec(type="pairwise", backend="mock"),
                                                     MethodSpec(backend="mock"))), [turn("a", "c", "r", "x")])
    # judge compare with a pointwise method: refused the other way round
    assert main(["compare", str(V1), str(V2), "--method", "criteria", "--backend", "mock"]) == 2
    assert "scores one reply at a time" in capsys.readouterr().err


# -- judge compare -------------------------------------------------------------------------------------
def test_compare_two_user_files_prints_win_rates_ranking_position_and_human_agreement(tmp_path, capsys):
    out = tmp_path / "pairs.jsonl"
    assert main(["compare", str(V1), str(V2), "--backend", "mock", "--no-progress", "-o", str(out),
                 "--cache-path", str(tmp_path / "c.sqlite")]) == 0
    text = capsys.readouterr().out
    for expected in ("compared  8 pairs of 2 systems in 8 contexts (8 conversations), quality overall, both orders",
                     "win rates row over column", "ranking   Bradley-Terry", "position  both orders agree on",
                     "humans    agreement with the human preference on 7 pairs whose human means differ: pairwise",
                     "criteria score differences", "length    the longer reply wins"):
        assert expected in text, text
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 8 and rows[0]["method"] == "pairwise"
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["humans"]["pointwise"]["method"] == "criteria" and summary["n_pairs"] == 8


def test_compare_a_dstc10_set_with_systems_baseline_and_limit(data_dir, capsys):
    assert main(["compare", "--dataset", "TU", "--data-dir", str(data_dir), "--backend", "mock", "--limit", "2",
                 "--baseline", "Original Ground Truth", "--no-progress", "--against", "none", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "10 pairs of 6 systems in 2 contexts" in text and "humans    agreement" in text and "criteria" not in text
    assert "systems   Kendall tau of the Bradley-Terry ranking" in text
    assert main(["compare", "--dataset", "DGR", "--data-dir", str(data_dir), "--backend", "mock", "--limit", "3",
                 "--systems", "nobody,transformer_ranker", "--no-progress"]) == 2
    assert "field '--systems': no item of the file is by system 'nobody'" in capsys.readouterr().err


def test_compare_check_counts_both_lanes_without_loading_a_model(data_dir, capsys):
    assert main(["compare", "--dataset", "DGR", "--data-dir", str(data_dir), "--backend", "mock", "--limit", "3",
                 "--check"]) == 0
    out = capsys.readouterr().out
    assert "pairwise (3 pairs)" in out and "criteria (6 items)" in out


def test_compare_bad_input_exits_2_naming_file_and_record(tmp_path, capsys):
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps({"id": f"i{k}", "context": [{"speaker": "user", "text": f"q{k}"}],
                                       "response": "r", "system": "s"}) + "\n" for k in range(3)))
    assert main(["compare", str(one), "--backend", "mock"]) == 2
    assert "one.jsonl, record i0, field 'system': no context has replies of two systems" in capsys.readouterr().err
    assert main(["compare", str(V1), str(one), "--backend", "mock"]) == 2
    assert "one.jsonl has no item answering this context" in capsys.readouterr().err


# -- [[compare]] cells of judge run ----------------------------------------------------------------------
CONFIG = """
name = "pw"
data_dir = "{data}"
datasets = ["TU", "DGR", "FD"]
split = "dev"
limit = 6

[[methods]]
name = "mock-criteria"
prompt = "yesno-criteria"
backend = "mock"

[[compare]]
name = "mock-pairwise"
backend = "mock"
against = "mock-criteria"
contexts = {{ TU = 2, DGR = 5 }}
"""


@pytest.mark.slow
def test_compare_cells_run_resume_and_report(data_dir, tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.format(data=data_dir))
    out = tmp_path / "out"
    assert main(["run", str(config), "-o", str(out), "--no-progress"]) == 0
    assert "skipped: mock-pairwise on fed-dial Overall: only dialog-level items" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    entries = {e["abbrev"]: e for e in summary["pairwise"]}
    assert set(entries) == {"TU", "DGR"} and entries["TU"]["n_pairs"] == 30 and entries["DGR"]["n_pairs"] == 5
    assert entries["TU"]["humans"]["pointwise"]["method"] == "mock-criteria"
    pairs_file = out / "compare" / "mock-pairwise" / "topical-usr" / "Overall" / "pairs.jsonl"
    before = pairs_file.read_bytes()
    board = (out / "leaderboard.md").read_text()
    assert "## Pairwise comparisons" in board and "| mock-pairwise | TU | 30 |" in board
    assert "Pairwise comparisons" in (out / "leaderboard.html").read_text()
    assert "win_rate" in (out / "pairwise.csv").read_text()
    # a killed run resumes: cut the file mid-line, run again, the same bytes
    pairs_file.write_bytes(before[: len(before) // 2])
    assert main(["run", str(config), "-o", str(out), "--no-progress"]) == 0
    assert pairs_file.read_bytes() == before
    assert main(["run", str(config), "-o", str(out), "--check"]) == 0
    printed = capsys.readouterr().out
    assert "mock-pairwise\ttopical-usr\tOverall\t30 pairs" in printed and "mock-pairwise TU Overall (pairs)" in printed


@pytest.mark.parametrize("table, message", [
    ({"contexts": 0}, r"compare\[0\]\.contexts: must be an integer >= 1"),
    ({"contexts": {"XX": 2}}, r"compare\[0\]\.contexts: 'XX' is not one of the config's sets"),
    ({"against": "nothing-like-it"}, r"compare\[0\]\.against: neither a \[\[methods\]\] entry nor a shipped preset"),
    ({"prmopt": "pairwise"}, r"compare\[0\]\.prmopt: unknown key; did you mean 'prompt'"),
    ({"orders": "three"}, r"compare\[0\]\.orders: must be one of both, one"),
    ({"type": "llm"}, r"compare\[0\]\.type: a \[\[compare\]\] table holds a pairwise method"),
])
def test_compare_tables_are_checked_naming_the_key(table, message):
    with pytest.raises(InputError, match=message):
        parse_experiment({"datasets": ["TU"], "compare": [{"name": "pw", **table}]})


def test_a_config_of_compare_cells_only_and_method_pairs_beside_them():
    exp = parse_experiment({"datasets": ["TU", "PU"], "defaults": {"model": "m.gguf"},
                            "compare": [{"name": "pw", "contexts": {"TU": 3}}, {"name": "pw2", "prompt": "pairwise-tie",
                                                                               "datasets": ["PU"], "against": "none"}]})
    assert exp.methods == () and [c.name for c in exp.compare_cells] == ["pw", "pw2"]
    pw, pw2 = exp.compare_cells
    assert pw.method.model == "m.gguf" and pw.against is not None and pw.against.settings.prompt == "yesno-criteria"
    assert pw.against.model == "m.gguf" and pw.contexts_for("topical-usr") == 3 and pw.contexts_for("persona-usr") is None
    assert pw2.against is None and pw2.datasets == ("persona-usr",)
    mixed = parse_experiment({"datasets": ["TU"], "methods": [{"name": "a"}, {"name": "b", "prompt": "rating"}],
                              "compare": [["a", "b"], {"name": "pw"}]})
    assert mixed.compare == (("a", "b"),) and [c.name for c in mixed.compare_cells] == ["pw"]


# -- SmolLM2, end to end: both orders cost the conversation once ---------------------------------------
@pytest.mark.slow  # two SmolLM2 loads and 9 prompts of DGR (10-20 s on 2 shared cores)
def test_smollm2_compares_in_both_orders_and_evaluates_the_conversation_once(data_dir):
    """The real judge on three DGR pairs: the second order of a pair reuses the first's KV prefix up to the
    first reply, so both orders cost far less than twice one; SmolLM2 favours the first position (most of
    its mass on "A"), which both orders cancel out of the preference."""
    items = load_benchmark("dailydialog-grade", str(data_dir))
    pairs = sample_contexts(pairs_within(items, file="DGR").pairs, 3, 0)
    q = dataset_info("DGR").quality("relevance")
    tokens = {}
    rows = {}
    for orders in ("one", "both"):
        spec = MethodSpec(type="pairwise", orders=orders, generate=GenerateConfig(threads=2, cache=False))
        pool = BackendPool()
        try:
            out: list[dict] = []
            assert compare_rows(build(prepare_pairs(spec, pairs, q), pool), pairs, spec.name, q.name,
                                lambda r, out=out: out.append(r.to_dict())) == 0
            tokens[orders] = pool.counters()["tokens_evaluated"]
            rows[orders] = out
        finally:
            pool.close()
    assert tokens["both"] < 1.6 * tokens["one"], tokens
    both = rows["both"]
    assert all(len(r["orders"]) == 2 and 0 <= r["preference"] <= 1 for r in both)
    firsts = [o["p_a"] if o["order"] == "ab" else 1 - o["p_a"] for r in both for o in r["orders"]]
    assert sum(firsts) / len(firsts) > 0.5  # position bias of a small judge, measured per order
    for r in both:  # the one-order rows read the same prompts: the same probability for the order they read
        one = next(x for x in rows["one"] if x["id"] == r["id"])
        o = one["orders"][0]
        assert o["p_a"] == pytest.approx(next(x["p_a"] for x in r["orders"] if x["order"] == o["order"]), abs=1e-6)



# -- POST /v1/compare ------------------------------------------------------------------------------------
def test_serve_compares_pairs_on_loopback(tmp_path):
    """The real service on 127.0.0.1 (mock backend): a pair's row is the row the engine writes for it (as judge
    compare does); a batch of pairs, and pairs that answer two contexts (422 naming the record and field)."""
    from judge.core.io import dumps
    from tests.test_serve import call, start_server

    records = [json.loads(x) for x in V1.read_text().splitlines()[:2]]
    better = [json.loads(x) for x in V2.read_text().splitlines()[:2]]
    for r in better:
        r["id"] = "v2-" + r["id"]
    srv = start_server(tmp_path, "--backend", "mock", "--compare-prompt", "pairwise-tie",
                       env={"JUDGE_CACHE": str(tmp_path / "cache.sqlite")})
    try:
        status, body = call(srv, "POST", "/v1/compare", {"a": records[0], "b": better[0]})
        assert status == 200, body
        row = json.loads(body)
        pair = pairs_between(load_items(V1)[:1], [Item(**{**{f: getattr(it, f) for f in it.__slots__}, "id": "v2-c01"})  # type: ignore[attr-defined]
                                                  for it in load_items(V2)[:1]], file_a="a", file_b="b").pairs
        expected: list[dict] = []
        compare_rows(mock_judge("pairwise-tie"), pair, "pairwise-tie", None, lambda r: expected.append(r.to_dict()))
        assert body.decode() == dumps(expected[0])
        assert (row["system_a"], row["system_b"], row["human_b"]) == ("bot-v1", "bot-v2", None) and row["tie"] is not None
        status, body = call(srv, "POST", "/v1/compare", {"pairs": [{"a": records[0], "b": better[0]},
                                                                   {"a": records[1], "b": better[1]}]})
        assert status == 200 and [r["id"] for r in json.loads(body)["rows"]] == ["c01 vs v2-c01", "c02 vs v2-c02"]
        status, body = call(srv, "POST", "/v1/compare", {"pairs": [{"a": records[0], "b": better[1]}]})
        assert status == 422 and json.loads(body)["record"] == "pairs[0]" and json.loads(body)["field"] == "context"
        status, body = call(srv, "POST", "/v1/compare", {"a": records[0]})
        assert status == 422 and "exactly the keys" in json.loads(body)["error"]
        info = json.loads(call(srv, "GET", "/v1/info")[1])
        assert info["compare"]["prompt"] == "pairwise-tie" and info["compare"]["orders"] == "both"
        assert "/v1/compare" in call(srv, "GET", "/metrics")[1].decode()
    finally:
        srv.stop()


def _compare_lines(text: str) -> list[list[str]]:
    """Each ``judge compare ...`` line of ``text`` as arguments (after ``judge``; comments dropped)."""
    import shlex

    return [shlex.split(line.split("#", 1)[0])[1:] for line in text.splitlines() if line.startswith("judge compare")]


def _documented_compare_commands() -> list[list[str]]:
    """docs/pairwise.md's first bash block's ``judge compare`` commands."""
    text = (ROOT / "docs" / "pairwise.md").read_text(encoding="utf-8")
    return _compare_lines(text.split("```bash\n", 1)[1].split("```", 1)[0])


@pytest.mark.slow  # SmolLM2 on 10 pairs (both orders) and their 20 items for the criteria prompt beside
def test_documented_commands_run_as_written(tmp_path, data_dir, monkeypatch, capsys):
    """docs/pairwise.md's ``judge compare`` commands (the README prints the same ones) and its Python block, as
    written, on one fresh cache: the example files with the embedded SmolLM2, every figure printed, nothing
    failed; the registered set's command with the mock backend added (what it adds is the set, --limit and
    --baseline, and the system-level line; SmolLM2 reads a DSTC10 set's pairs in
    test_smollm2_compares_in_both_orders_and_evaluates_the_conversation_once); the Python block with SmolLM2
    (the first command's pairs, read back from the cache)."""
    import subprocess
    import sys

    commands = _documented_compare_commands()
    assert [c[1] for c in commands] == ["examples/bot_v1.jsonl", "examples/dialogues.jsonl", "--dataset"]
    readme = _compare_lines((ROOT / "README.md").read_text(encoding="utf-8"))
    assert all(args in commands for args in readme), readme  # the README shows some of them, or none
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    for args in commands[:2]:
        assert main([*args, "--no-progress"]) == 0
        out, err = capsys.readouterr()
        for label in ("compared ", "win rates ", "ranking ", "position ", "humans ", "length "):
            assert any(line.startswith(label) for line in out.splitlines()), (args, label, out)
        assert "failed" not in err, err
    assert "2 dialog-level items left out" in err and "contexts left out" in err
    dataset = [str(data_dir) if a == "../shared/data" else a for a in commands[2]]
    assert main([*dataset, "--backend", "mock", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "25 pairs of 6 systems in 5 contexts" in out and "systems   Kendall tau" in out, out
    text = (ROOT / "docs" / "pairwise.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    import os

    proc = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "JUDGE_CACHE": str(tmp_path / "cache.sqlite")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    value, ranking = proc.stdout.split(" ", 1)
    assert 0 <= float(value) <= 1 and "bot-v1" in ranking and "bot-v2" in ranking


def test_results_page_shows_collected_pairwise_cells(data_dir, tmp_path):
    """``judge results collect`` keeps a pairwise cell's figures (a mock run, allowed for the test only) and
    ``render`` shows them in the page's pairwise section, with the mean over the cell's sets."""
    from judge.harness import load_experiment
    from judge.report import results_page as page

    config = tmp_path / "c.toml"
    config.write_text(CONFIG.format(data=data_dir))
    out = tmp_path / "out"
    assert main(["run", str(config), "-o", str(out), "--no-progress"]) == 0
    with pytest.raises(InputError, match="mock backend"):
        page.collect(out, "pw", load_config=load_experiment, root=ROOT)
    collected = page.collect(out, "pw", load_config=load_experiment, root=ROOT, allow_mock=True)
    summary = json.loads((out / "summary.json").read_text())
    assert [(e["name"], e["abbrev"]) for e in collected["pairwise"]] == [("mock-pairwise", "TU"), ("mock-pairwise", "DGR")]
    tu = collected["pairwise"][0]
    assert tu["humans"] == summary["pairwise"][0]["humans"] and tu["n_systems"] == 6 and tu["n_boot"] == 1000
    assert collected["pairwise_methods"]["mock-pairwise"]["kind"] == "reference-free"
    text = page.render_page([collected])
    section = text.split("## Pairwise: which of two replies is better")[1]
    assert "| mock-pairwise | mean of 2 sets | 35 |" in section and "| mock-pairwise | TU | 30 |" in section
    assert "(mock-criteria)" in section
    # the mean over the two sets: a joint bootstrap over TU's 2 and DGR's 5 conversations, 3 x 126 distinct
    # resamples, below the floor; TU alone (2 conversations) has no interval either
    (mean,) = collected["pairwise_means"]
    assert mean["sets"] == ["TU", "DGR"] and mean["judge"]["strata"] == [2, 5] and mean["judge"]["p"] is None
    assert "too few conversations (2 + 5)" in section.split("| mock-pairwise | mean of 2 sets |")[1].split("\n")[0]
    assert "too few conversations (2)" in section.split("| mock-pairwise | TU | 30 |")[1].split("\n")[0]


def test_a_hosted_api_is_read_in_its_top_tokens_or_estimated_from_samples(monkeypatch):
    """Against tests/fault_server.py (an OpenAI-compatible server on 127.0.0.1 answering A and B): with
    log-probabilities the labels are read among the top tokens; without, ``--sampling-fallback`` estimates
    them from sampled answers (A, A, A, B per prompt: p(first) .75 in each order) and rows say estimated."""
    from tests.fault_server import FaultServer

    monkeypatch.setenv("JUDGE_FAULT_KEY", "not-a-real-key")
    pairs = pairs_between(load_items(V1)[:2], load_items(V2)[:2], file_a="v1", file_b="v2").pairs
    for logprobs in (True, False):
        with FaultServer(logprobs=logprobs, labels=("A", "B")) as srv:
            options = {"base_url": srv.base_url, "api_key_env": "JUDGE_FAULT_KEY", "sampling_fallback": 8}
            spec = MethodSpec(type="pairwise", backend="openai", model="fault", options=options,
                              generate=GenerateConfig(cache=False, max_retries=1))
            rows: list[dict] = []
            assert compare_rows(build(prepare_pairs(spec, pairs, None), BackendPool()), pairs, "api", None,
                                lambda r, rows=rows: rows.append(r.to_dict())) == 0
        assert all(r["estimated"] is not logprobs for r in rows)
        if not logprobs:  # the first position wins 6 of 8 samples in each order: p(a) .75 then .25
            assert all([o["p_a"] for o in r["orders"]] == [0.75, 0.25] and r["preference"] == 0.5 for r in rows)


def test_round_9_candidates_are_committed_and_prepare_on_every_set(data_dir):
    """Round 9's dev file (docs/journal.md): the two templates, both orders, the criteria prompt beside them on
    the same pairs, reference-free, every cell prepared against its set's dev-half pairs (no model loads)."""
    from judge.engine.kinds import method_kinds
    from judge.harness.compare_cells import plan_compares
    from judge.harness.config import load_experiment
    from judge.harness.runner import load_sets

    exp = load_experiment(ROOT / "benchmarks" / "configs" / "pairwise_dev_q15.toml").with_overrides(data_dir=str(data_dir))
    assert exp.split == "dev" and exp.methods == ()
    assert [(c.name, c.method.settings.prompt, c.method.settings.orders) for c in exp.compare_cells] == [
        ("q15-pairwise", "pairwise", "both"), ("q15-pairwise-tie", "pairwise-tie", "both")]
    for c in exp.compare_cells:
        assert c.method.model == "qwen2.5-coder-1.5b" and c.against is not None
        assert c.against.settings.prompt == "yesno-criteria" and c.against.model == c.method.model
        assert method_kinds(c.method).kind == "reference-free"
    cells, skipped = plan_compares(exp, load_sets(exp))
    assert not skipped and len(cells) == 12
    assert {(c.abbrev, len({p.context for p in c.pairs})) for c in cells} == {
        ("TU", 3), ("PU", 3), ("DZ", 2), ("DGU", 4), ("DGR", 20), ("EG", 20)}



def test_round_9_test_file_reads_the_dev_choice_by_the_committed_rule():
    """Round 9's test file holds one cell: the dev candidate whose mean agreement with the human preference
    over the six sets (the committed dev summary) is the higher, a tie going to ``pairwise``; the same prompt,
    orders, pointwise method beside it and sample sizes as on dev, read on the test half."""
    from judge.harness.config import load_experiment

    configs = ROOT / "benchmarks" / "configs"
    dev = load_experiment(configs / "pairwise_dev_q15.toml")
    test = load_experiment(configs / "pairwise_test_q15.toml")
    assert (dev.split, test.split) == ("dev", "test") and test.methods == ()
    assert (dev.datasets, dev.limit, dev.limit_seed, dev.split_seed) == (test.datasets, test.limit, test.limit_seed, test.split_seed)
    summary = json.loads((ROOT / "benchmarks" / "results" / "pairwise-dev-q15.json").read_text())
    agreement: dict[str, list[float]] = {}
    for e in summary["pairwise"]:
        agreement.setdefault(e["name"], []).append(e["humans"]["judge"]["value"])
    assert {k: len(v) for k, v in agreement.items()} == {c.name: 6 for c in dev.compare_cells}
    means = {k: sum(v) / len(v) for k, v in agreement.items()}
    choice = "q15-pairwise" if means["q15-pairwise"] >= means["q15-pairwise-tie"] else "q15-pairwise-tie"
    [cell] = test.compare_cells
    chosen = next(c for c in dev.compare_cells if c.name == choice)
    assert cell.name == choice
    assert (cell.method, cell.against, cell.contexts) == (chosen.method, chosen.against, chosen.contexts)

# -- hosted APIs: priced, capped and batched like every other method --------------------------------------
def hosted_compare(srv, tmp: Path, *extra: str, cache: str = "c.sqlite") -> int:
    return main(["compare", str(V1), str(V2), "--backend", "openai", "--model", "fault-model", "--base-url",
                 srv.base_url, "--prices", str(tmp / "p.toml"), "--cache-path", str(tmp / cache), "--against", "none",
                 "--no-progress", *extra])


def test_a_hosted_comparison_is_priced_capped_and_batched(tmp_path, capsys):
    """judge compare on an OpenAI-compatible server (tests/fault_server.py answering A and B): --check prices
    both orders of every pair without contacting it, --max-cost refuses a comparison estimated above the cap
    before anything is sent, and --batch answers every pair's requests through one batch, with the rows of
    the synchronous run."""
    from tests.fault_server import FaultServer
    from tests.test_money import PRICES

    (tmp_path / "p.toml").write_text(PRICES)
    with FaultServer(labels=("A", "B")) as srv:
        assert hosted_compare(srv, tmp_path, "--check") == 0
        out = capsys.readouterr().out
        row = re.search(r"^pairwise \(8 pairs\)\s+8\s+0\s+16\s+[\d,]+\s+\$(\d+\.\d+)\s+\$(\d+\.\d+)$", out, re.M)
        assert row and float(row[2]) < float(row[1]), out  # 16 requests: both orders of 8 pairs, batch cheaper
        assert hosted_compare(srv, tmp_path, "--max-cost", "0.001") == 2
        assert "is above --max-cost" in capsys.readouterr().err
        assert not srv.requests and not srv.batches
        assert hosted_compare(srv, tmp_path, "-o", str(tmp_path / "sync.jsonl"), cache="sync.sqlite") == 0
        sent = len(srv.requests)
        assert sent == 16
        assert hosted_compare(srv, tmp_path, "--batch", "--backend-option", "batch_poll=0.05",
                              "-o", str(tmp_path / "batch.jsonl")) == 0
        assert len(srv.batches) == 1 and len(srv.requests) == sent  # nothing went one by one
        assert next(iter(srv.batches.values()))["request_counts"]["total"] == 16
    err = capsys.readouterr().err
    assert "judge: batch of fault-model: 16 requests the cache lacked, 16 answered through 1 batch(es)" in err
    assert (tmp_path / "batch.jsonl").read_bytes() == (tmp_path / "sync.jsonl").read_bytes()


HOSTED_CONFIG = """
name = "pw-hosted"
data_dir = "{data}"
datasets = ["DGR"]
split = "dev"
output = "{out}"

[[compare]]
name = "api-pairwise"
backend = "openai"
model = "fault-model"
options = {{ base_url = "{url}"{extra} }}
generate = {{ cache_path = "{cache}" }}
against = "none"
contexts = {{ DGR = 3 }}
"""


def test_compare_cells_are_priced_and_batched_with_the_run(data_dir, tmp_path, capsys):
    """A [[compare]] cell on a hosted API: judge run --check prices its pairs, and a run with batch = true sends
    its requests through one batch before anything goes one by one, with the pair rows of the synchronous run."""
    from tests.fault_server import FaultServer

    def config(name: str, srv, extra: str = "") -> str:
        path = tmp_path / f"{name}.toml"
        path.write_text(HOSTED_CONFIG.format(data=data_dir, out=tmp_path / name, url=srv.base_url,
                                             cache=tmp_path / f"{name}.sqlite", extra=extra))
        return str(path)

    with FaultServer(labels=("A", "B")) as srv:
        assert main(["run", config("sync", srv), "--check"]) == 0
        assert re.search(r"^api-pairwise DGR relevance \(pairs\)\s+3\s+0\s+6\s+[\d,]+\s+n/a \(no price\)", capsys.readouterr().out,
                         re.M) and not srv.requests
        assert main(["run", config("sync", srv), "--no-progress"]) == 0
        sent = len(srv.requests)
        assert sent == 6  # both orders of the 3 pairs of 3 contexts of two replies
        assert main(["run", config("batch", srv, ", batch = true, batch_poll = 0.05"), "--no-progress"]) == 0
        assert len(srv.batches) == 1 and len(srv.requests) == sent
    part = Path("compare") / "api-pairwise" / "dailydialog-grade" / "relevance" / "pairs.jsonl"
    assert (tmp_path / "batch" / part).read_bytes() == (tmp_path / "sync" / part).read_bytes()
