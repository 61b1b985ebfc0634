"""Listwise prompts: a template that declares ``reads = ["alternatives"]`` lists every rated reply to the
item's conversation before the reply it asks about. Real components: the shipped templates, the shipped
data, the packaged SmolLM2 through llama.cpp, the harness planning real cells, the serve service and
the CLI as a subprocess."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from judge import GenerateConfig
from judge.alternatives import alternatives_by_group, alternatives_for, context_key
from judge.datasets import load_benchmark, load_items
from judge.engine import BackendPool, MethodSpec, build, prepare
from judge.engine.kinds import method_kinds
from judge.engine.schedule import common_prefix, score_together
from judge.errors import TemplateError
from judge.harness import load_experiment
from judge.harness.runner import plan
from judge.items import SYSTEM, USER, Item, Turn
from judge.prompts import get_prompt, load_template
from judge.scorers.llm import LLMJudge
from judge.serve.service import JudgeService

ROOT = Path(__file__).resolve().parents[1]
LISTWISE = "yesno-criteria-listwise"
CONTEXT = (Turn(USER, "Any tips for a first marathon?"), Turn(SYSTEM, "How long have you trained?"),
           Turn(USER, "Four months, mostly short runs."))


def _reply(i: str, text: str, rating: float = 3.0, **changes: object) -> Item:
    item = Item(id=i, level="turn", context=CONTEXT, response=text, annotations={"overall": (rating,)}, dataset="demo")
    return replace(item, **changes) if changes else item  # type: ignore[arg-type]


REPLIES = [_reply("a", "Start slow and drink at every station.", 5.0), _reply("b", "ok", 1.0),
           _reply("c", "I like turtles.", 1.0), _reply("d", "ok", 2.0), _reply("e", "", 1.0)]


def test_every_reply_of_a_context_sees_one_list_in_one_order():
    """Distinct texts (the two "ok" replies listed once, the empty one kept), the same tuple for every
    reply of the context whatever the order of the file; another fact or conversation is another list."""
    listed = alternatives_by_group(REPLIES)
    shown = {alternatives_for(it, listed) for it in REPLIES}
    assert len(shown) == 1
    (one,) = shown
    assert sorted(one) == sorted({"Start slow and drink at every station.", "ok", "I like turtles.", ""})
    shuffled = REPLIES[:]
    random.Random(3).shuffle(shuffled)
    assert alternatives_for(REPLIES[0], alternatives_by_group(shuffled)) == one
    # Another fact is another context (Topical-USR repeats a conversation with another fact).
    other_fact = _reply("f", "Run your own pace.", fact="Marathons are 42.195 km long.")
    assert alternatives_for(other_fact, alternatives_by_group([*REPLIES, other_fact])) == ("Run your own pace.",)
    # A group may name a whole conversation: its turns rated at different points are other contexts.
    later = _reply("h", "Good luck!", context=(*CONTEXT, Turn(SYSTEM, "Then go slow."), Turn(USER, "Thanks!")))
    assert alternatives_for(later, alternatives_by_group([*REPLIES, later])) == ("Good luck!",)
    # A reply the population lacks is listed with the context's replies; dialog-level items list none.
    new = _reply("g", "Taper in the last two weeks.")
    assert set(alternatives_for(new, listed)) == set(one) | {"Taper in the last two weeks."}
    dialog = Item(id="d", level="dialog", dialog=CONTEXT)
    assert alternatives_for(dialog, alternatives_by_group([dialog])) == ()


def test_siblings_share_their_prompt_up_to_the_reply_and_no_rating_reaches_it():
    prompt = get_prompt(LISTWISE)
    listed = alternatives_by_group(REPLIES)
    texts = [prompt.render(it, [], None, alternatives_for(it, listed)) for it in REPLIES]
    head = texts[0][: prompt.shared_chars(texts[0])]
    assert "Replies of several systems to this conversation:\n" in head
    assert all(t.startswith(head) and t[len(head):].startswith("Next system reply:") for t in texts)
    assert common_prefix(texts) >= len(head)
    assert head.count("- ok\n") == 1 and "- (empty response)\n" in head
    assert "Next system reply: (empty response)" in texts[4]
    # Ratings are never shown: other ratings give the same text.
    rerated = [replace(it, annotations={"overall": (9.0,)}) for it in REPLIES]
    again = alternatives_by_group(rerated)
    assert [prompt.render(it, [], None, alternatives_for(it, again)) for it in rerated] == texts


def test_with_no_other_reply_the_listwise_prompts_are_the_criteria_prompt(data_dir):
    criteria = get_prompt("yesno-criteria")
    fed_dial = load_benchmark("fed-dial", data_dir)[:3]
    alone = REPLIES[0]
    for name in (LISTWISE, "yesno-criteria-listwise-compare"):
        prompt = get_prompt(name)
        for it in [*fed_dial, alone]:
            listed = alternatives_by_group([it])
            assert prompt.render(it, [], None, alternatives_for(it, listed)) == criteria.render(it)
    compare = get_prompt("yesno-criteria-listwise-compare")
    listed = alternatives_by_group(REPLIES)
    assert "Compared with the other replies" in compare.render(REPLIES[0], [], None, alternatives_for(REPLIES[0], listed))


def test_alternatives_are_a_declared_read_and_reports_say_listwise(tmp_path):
    undeclared = tmp_path / "peek.j2"
    undeclared.write_text('{#- judge\nanswer = "yesno"\n-#}\n{{ item.alternatives | length }} Answer:')
    with pytest.raises(TemplateError, match=r'reads = \["alternatives"\]'):
        load_template(undeclared).render(REPLIES[0])
    kinds = method_kinds(MethodSpec(prompt=LISTWISE))
    assert (kinds.kind, kinds.label, kinds.to_dict()["listwise"]) == ("reference-free", "reference-free, listwise", True)
    plain = method_kinds(MethodSpec(prompt="yesno-criteria"))
    assert plain.label == "reference-free" and "listwise" not in plain.to_dict()
    ens = method_kinds(MethodSpec(name="e", type="ensemble", members=(MethodSpec(prompt="yesno-criteria"),
                                                                    MethodSpec(prompt=LISTWISE))))
    assert ens.listwise


def test_the_harness_lists_the_replies_of_the_whole_half_not_of_the_sample(tmp_path, data_dir):
    """With 6 items drawn per set, each cell's population is every item of its dev half, so a sampled
    reply's prompt lists the replies the draw left out."""
    config = ROOT / "benchmarks" / "configs" / "cpu_leaderboard_dev_q15_r6.toml"
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), limit=6, datasets=["TU"],
                                                 methods=["q15-listwise"])
    (cell,) = plan(exp)
    assert len(cell.items) == 6 and len(cell.population) > 100
    assert {it.id for it in cell.items} <= {it.id for it in cell.population}
    prep = prepare(cell.method, cell.items, cell.quality, pool=cell.pool, population=cell.population)
    assert prep.population is cell.population
    listed = alternatives_by_group(cell.population)
    item = cell.items[0]
    shown = alternatives_for(item, listed)
    sampled = {it.response for it in cell.items if context_key(it) == context_key(item)}
    assert len(shown) >= 5 and len(sampled) < len(shown)


def _gen(cache: Path) -> GenerateConfig:
    return GenerateConfig(threads=2, cache_path=str(cache))


def test_a_listwise_judge_reads_its_population_on_the_real_model(tmp_path):
    """The same reply scored with its siblings listed and alone: the list changes the prompt and the
    answer; alone, the listwise judge answers exactly as the criteria prompt."""
    spec = MethodSpec(name="lw", prompt=LISTWISE, generate=_gen(tmp_path / "cache.sqlite"))
    criteria = MethodSpec(name="c", prompt="yesno-criteria", generate=_gen(tmp_path / "cache.sqlite"))
    backends = BackendPool()
    try:
        listed = build(prepare(spec, REPLIES), backends)
        prompt, _ = listed.build_prompt(REPLIES[0], None, listed.call_alternatives(REPLIES))  # type: ignore[attr-defined]
        assert "I like turtles." in prompt.text and prompt.shared == prompt.text.rfind("Next system reply:")
        with_list = [s.value for s in listed.score(REPLIES)]
        alone = [s.value for s in build(prepare(spec, REPLIES, population=()), backends).score(REPLIES)]
        plain = [s.value for s in build(prepare(criteria, REPLIES), backends).score(REPLIES)]
    finally:
        backends.close()
    assert None not in with_list
    assert alone == plain
    assert with_list != plain


def test_siblings_and_both_questions_reuse_the_list_when_scheduled(smollm2, data_dir):
    """DailyDialog-Grade rates two replies per context. Scheduled together, the two listwise questions of
    all replies of a context run back to back: one prompt pays for the list, the others for their tail,
    and every score is bit for bit what each method gets alone."""
    contexts: dict[str, list[Item]] = {}
    for it in load_benchmark("dailydialog-grade", data_dir):
        contexts.setdefault(context_key(it), []).append(it)
    items = [it for its in list(contexts.values())[:4] for it in its]
    judges = [LLMJudge(get_prompt(n), smollm2) for n in (LISTWISE, "yesno-criteria-listwise-compare")]
    assert all(len(alternatives_for(it, judges[0].call_alternatives(items))) == 2 for it in items)  # type: ignore[arg-type]
    smollm2.llm.reset()
    got: dict[int, list] = {0: [], 1: []}
    for lane, score in score_together(judges, [items, items]):
        got[lane].append(score)
    evaluated = sorted(s.n_evaluated_tokens for ss in got.values() for s in ss)
    full = min(s.n_prompt_tokens for ss in got.values() for s in ss)
    groups = len({context_key(it) for it in items})
    assert sum(1 for n in evaluated if n > full // 2) <= groups, (evaluated, full)
    for lane, judge in enumerate(judges):
        smollm2.llm.reset()
        alone = list(LLMJudge(judge.prompt, smollm2).score(items))
        assert [s.value for s in alone] == [s.value for s in got[lane]]


def test_a_served_listwise_judge_rates_each_reply_alone(tmp_path):
    """A request batch may hold several clients' replies to one conversation: the service lists none of
    them, so a served listwise judge answers as the criteria prompt does, whatever else is in the batch."""
    served = JudgeService.build(MethodSpec(name="lw", prompt=LISTWISE, generate=_gen(tmp_path / "c.sqlite")), None)
    plain = JudgeService.build(MethodSpec(name="c", prompt="yesno-criteria", generate=_gen(tmp_path / "c.sqlite")), None)
    try:
        rows = served.score(REPLIES)
        one_by_one = [served.score([it])[0] for it in REPLIES]
        expected = plain.score(REPLIES)
    finally:
        served.close()
        plain.close()
    assert [r["score"] for r in rows] == [r["score"] for r in one_by_one] == [r["score"] for r in expected]


def test_judge_score_lists_the_replies_of_the_whole_file(tmp_path):
    """``judge score --limit 1`` scores one reply, with the file's other replies to its conversation
    listed: the same value as the Python API with the whole file as population."""
    data = tmp_path / "replies.jsonl"
    data.write_text("".join(json.dumps({"id": it.id, "context": [{"speaker": t.speaker, "text": t.text} for t in CONTEXT],
                                        "response": it.response, "scores": {"overall": it.annotations["overall"][0]},
                                        "scales": {"overall": [1, 5]}}) + "\n" for it in REPLIES))
    out = tmp_path / "rows.jsonl"
    cache = tmp_path / "cache.sqlite"
    done = subprocess.run([sys.executable, "-m", "judge", "score", str(data), "--prompt", LISTWISE, "--limit", "1",
                           "--threads", "2", "--cache-path", str(cache), "-o", str(out), "--no-progress"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(x) for x in out.read_text().splitlines()]
    items = load_items(str(data))
    spec = MethodSpec(name="lw", prompt=LISTWISE, generate=_gen(cache))
    backends = BackendPool()
    try:
        whole = next(build(prepare(spec, items[:1], population=items), backends).score(items[:1]))
        alone = next(build(prepare(spec, items[:1]), backends).score(items[:1]))
    finally:
        backends.close()
    assert whole.value is not None and alone.value is not None
    assert row["score"] == pytest.approx(whole.value, abs=1e-6)
    assert abs(whole.value - alone.value) > 1e-6
