"""Listwise prompts: a template that declares ``reads = ["alternatives"]`` lists every rated reply to the
item's conversation before the reply it asks about. Real components: the shipped templates, the shipped
data, the packaged SmolLM2 through llama.cpp, the harness planning real cells, the serve service and
the CLI as a subprocess."""

from __future__ import annotations

import json
import random
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from judge import GenerateConfig
from judge.core.errors import TemplateError
from judge.data.alternatives import alternatives_by_context, alternatives_for, context_key
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.datasets import load_benchmark, load_items
from judge.engine import BackendPool, MethodSpec, build, prepare
from judge.engine.kinds import method_kinds
from judge.engine.schedule import common_prefix
from judge.harness import load_experiment
from judge.harness.runner import plan
from judge.prompts.templates import get_prompt, load_template
from judge.scorers.llm import LLMJudge
from judge.scorers.units import run_lanes
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
    listed = alternatives_by_context(REPLIES)
    shown = {alternatives_for(it, listed) for it in REPLIES}
    assert len(shown) == 1
    (one,) = shown
    assert sorted(one) == sorted({"Start slow and drink at every station.", "ok", "I like turtles.", ""})
    shuffled = REPLIES[:]
    random.Random(3).shuffle(shuffled)
    assert alternatives_for(REPLIES[0], alternatives_by_context(shuffled)) == one
    # Another fact is another context (Topical-USR repeats a conversation with another fact).
    other_fact = _reply("f", "Run your own pace.", fact="Marathons are 42.195 km long.")
    assert alternatives_for(other_fact, alternatives_by_context([*REPLIES, other_fact])) == ("Run your own pace.",)
    # A group may name a whole conversation: its turns rated at different points are other contexts.
    later = _reply("h", "Good luck!", context=(*CONTEXT, Turn(SYSTEM, "Then go slow."), Turn(USER, "Thanks!")))
    assert alternatives_for(later, alternatives_by_context([*REPLIES, later])) == ("Good luck!",)
    # A reply the population lacks is listed with the context's replies; dialog-level items list none.
    new = _reply("g", "Taper in the last two weeks.")
    assert set(alternatives_for(new, listed)) == set(one) | {"Taper in the last two weeks."}
    dialog = Item(id="d", level="dialog", dialog=CONTEXT)
    assert alternatives_for(dialog, alternatives_by_context([dialog])) == ()


def test_siblings_share_their_prompt_up_to_the_reply_and_no_rating_reaches_it():
    prompt = get_prompt(LISTWISE)
    listed = alternatives_by_context(REPLIES)
    texts = [prompt.render(it, [], None, alternatives_for(it, listed)) for it in REPLIES]
    head = texts[0][: prompt.shared_chars(texts[0])]
    assert "Replies of several systems to this conversation:\n" in head
    assert all(t.startswith(head) and t[len(head):].startswith("Next system reply:") for t in texts)
    assert common_prefix(texts) >= len(head)
    assert head.count("- ok\n") == 1 and "- (empty response)\n" in head
    assert "Next system reply: (empty response)" in texts[4]
    # Ratings are never shown: other ratings give the same text.
    rerated = [replace(it, annotations={"overall": (9.0,)}) for it in REPLIES]
    again = alternatives_by_context(rerated)
    assert [prompt.render(it, [], None, alternatives_for(it, again)) for it in rerated] == texts


def test_with_no_other_reply_the_listwise_prompts_are_the_criteria_prompt(data_dir):
    criteria = get_prompt("yesno-criteria")
    fed_dial = load_benchmark("fed-dial", data_dir)[:3]
    alone = REPLIES[0]
    for name in (LISTWISE, "yesno-criteria-listwise-compare"):
        prompt = get_prompt(name)
        for it in [*fed_dial, alone]:
            listed = alternatives_by_context([it])
            assert prompt.render(it, [], None, alternatives_for(it, listed)) == criteria.render(it)
    compare = get_prompt("yesno-criteria-listwise-compare")
    listed = alternatives_by_context(REPLIES)
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
    listed = alternatives_by_context(cell.population)
    item = cell.items[0]
    shown = alternatives_for(item, listed)
    sampled = {it.response for it in cell.items if context_key(it) == context_key(item)}
    assert len(shown) >= 5 and len(sampled) < len(shown)


def _gen(cache: Path) -> GenerateConfig:
    return GenerateConfig(threads=2, cache_path=str(cache))


@pytest.mark.slow
def test_a_listwise_judge_reads_its_population_on_the_real_model(tmp_path):
    """The same replies scored with their siblings listed and alone (population ``()``): the list changes
    the prompt and the answers; alone, the prompt is the criteria prompt's text."""
    spec = MethodSpec(name="lw", prompt=LISTWISE, generate=_gen(tmp_path / "cache.sqlite"))
    backends = BackendPool()
    try:
        listed = build(prepare(spec, REPLIES), backends)
        prompt, _ = listed.build_prompt(REPLIES[0], None, listed.call_alternatives(REPLIES))  # type: ignore[attr-defined]
        assert "I like turtles." in prompt.text and prompt.shared == prompt.text.rfind("Next system reply:")
        with_list = [s.value for s in listed.score(REPLIES)]
        single = build(prepare(spec, REPLIES, population=()), backends)
        assert single.build_prompt(REPLIES[0])[0].text == get_prompt("yesno-criteria").render(REPLIES[0])  # type: ignore[attr-defined]
        alone = [s.value for s in single.score(REPLIES)]
    finally:
        backends.close()
    assert None not in with_list and None not in alone
    assert all(abs(a - b) > 1e-6 for a, b in zip(with_list, alone, strict=True))  # type: ignore[operator]


@pytest.mark.long  # scheduled reuse on the real model: tests/test_schedule.py keeps one in the README suite
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
    for lane, score in run_lanes(judges, [items, items]):
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
    them, so a reply's score is the same in a batch with its siblings as alone, and its prompt is the
    criteria prompt's text."""
    # The service's logic, not a model, is tested: the mock backend answers from the prompt text alone.
    spec = MethodSpec(name="lw", prompt=LISTWISE, backend="mock", generate=_gen(tmp_path / "c.sqlite"))
    served = JudgeService.build(spec, None)
    try:
        rows = served.score(REPLIES)
        one_by_one = [served.score([it])[0] for it in REPLIES]
        prompt, _ = served.scorer.build_prompt(REPLIES[0])  # type: ignore[attr-defined]
        batch_alternatives = served.scorer.call_alternatives(REPLIES)  # type: ignore[attr-defined]
    finally:
        served.close()
    assert [r.score for r in rows] == [r.score for r in one_by_one]
    assert None not in [r.score for r in rows]
    assert prompt.text == get_prompt("yesno-criteria").render(REPLIES[0])
    assert alternatives_for(REPLIES[0], batch_alternatives) == (REPLIES[0].response,)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


@pytest.mark.slow  # 30 s of SmolLM2 in CI (the fast suite keeps a real-model listwise test): kept out of the README's 10-minute command
def test_the_documented_command_lists_the_replies_of_the_whole_file(tmp_path):
    """docs/listwise.md's `judge score` command, as printed there (plus an output file): the replies
    with a sibling in the file score as the Python API scores them with the whole file listed, the
    others as they score alone; with `--limit 2` the first two replies still list the whole file's."""
    text = (ROOT / "docs" / "listwise.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(judge score .*?)\n```", text, re.S)
    assert block, "docs/listwise.md lost its judge score command"
    command = shlex.split(block.group(1))
    assert command[:3] == ["judge", "score", "examples/dialogues.jsonl"]
    cache = tmp_path / "cache.sqlite"
    rows = {}
    for name, args in (("doc", command[2:]), ("limit", [*command[2:], "--limit", "2"])):
        out = tmp_path / f"{name}.jsonl"
        proc = _cli("score", *args, "--threads", "2", "--cache-path", str(cache), "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        rows[name] = [json.loads(x)["score"] for x in out.read_text().splitlines()]
    items = load_items(str(ROOT / "examples" / "dialogues.jsonl"))
    spec = MethodSpec(name="lw", prompt=LISTWISE, generate=_gen(cache))
    backends = BackendPool()
    try:
        whole = [s.value for s in build(prepare(spec, items, population=items), backends).score(items)]
        alone = [s.value for s in build(prepare(spec, items, population=()), backends).score(items)]
    finally:
        backends.close()
    listed = alternatives_by_context(items)
    several = [len(alternatives_for(it, listed)) > 1 for it in items]
    assert sum(several) == 4 and several[:2] == [True, True]
    assert rows["doc"] == pytest.approx(whole, abs=1e-6)
    assert rows["limit"] == rows["doc"][:2]
    for doc, single, listwise in zip(rows["doc"], alone, several, strict=True):
        assert (abs(doc - single) > 1e-6) if listwise else doc == pytest.approx(single, abs=1e-6)
