"""Contrasts: a prompt's answer for the reply with its conversation against its answer for the reply
alone (``context = "none"``), combined by an ensemble whose negative weight subtracts a member. The
prompts are the real templates; they run on the mock backend, since what is tested is how the engine
builds and combines them (a contrast's prompts are label prompts, whose llama.cpp path other tests hold)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from judge import GenerateConfig
from judge.core.errors import InputError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.datasets import load_items
from judge.engine import BackendPool, MethodSpec, build, prepare
from judge.harness.config import parse_experiment
from judge.prompts.context_views import in_view

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
#: A window the mock's criteria prompts of the longer example conversations overflow (165-189 tokens of
#: the given prompts; 101-129 of the reply-alone ones).
WINDOW = 160


def _turn_item() -> Item:
    return Item(id="t1", level="turn", context=(Turn(USER, "Any tips for a first marathon?"),),
                response="Start slow and drink at every station.", fact="Marathons are 42.195 km long.",
                annotations={"overall": (4.0, 5.0)}, dataset="demo")


def test_the_reply_alone_keeps_the_item_and_drops_what_it_answers():
    item = _turn_item()
    assert in_view(item, "given") is item
    alone = in_view(item, "none")
    assert (alone.context, alone.fact) == ((), None)
    assert (alone.id, alone.group, alone.response, alone.annotations) == (item.id, item.group, item.response,
                                                                          item.annotations)
    dialog = Item(id="d1", level="dialog", dialog=(Turn(USER, "hi"), Turn(SYSTEM, "hello"), Turn(USER, "bye"),
                                                   Turn(SYSTEM, "see you")))
    assert [t.text for t in in_view(dialog, "none").dialog] == ["hello", "see you"]
    assert in_view(dialog, "none").group == dialog.group
    with pytest.raises(ValueError, match="given, none"):
        in_view(item, "other")


def test_context_is_checked_with_the_spec_and_recorded_only_when_not_given():
    with pytest.raises(InputError, match="given, none") as exc:
        MethodSpec(prompt="yesno", context="shuffled")
    assert exc.value.field == "context"
    with pytest.raises(InputError, match="belongs to llm methods"):
        MethodSpec(type="likelihood", context="none")
    alone = MethodSpec(prompt="yesno-criteria", context="none")
    assert alone.name == "yesno-criteria-none-k0-context-none"
    assert alone.describe()["context"] == "none"
    assert "context" not in MethodSpec(prompt="yesno-criteria").describe()  # earlier provenance unchanged
    with pytest.raises(InputError, match="at least one weight must be non-zero"):
        MethodSpec(type="ensemble", members=(MethodSpec(prompt="yesno"), alone), weights=(0.0, 0.0))
    with pytest.raises(InputError, match=r"a contrast .* needs every member") as exc:
        MethodSpec(type="ensemble", members=(MethodSpec(prompt="yesno"), alone), weights=(1.0, -1.0),
                   optional=(alone.name,))
    assert exc.value.field == "optional"


def test_a_config_table_declares_a_contrast():
    exp = parse_experiment({"datasets": ["FT"], "methods": [
        {"name": "c", "prompt": "yesno-criteria"},
        {"name": "c-alone", "prompt": "yesno-criteria", "context": "none"},
        {"name": "contrast", "type": "ensemble", "members": ["c", "c-alone"], "combine": "mean", "weights": [1, -1]},
    ]})
    contrast = exp.methods[-1]
    assert contrast.settings.weights == (1.0, -1.0) and contrast.settings.members[1].settings.context == "none"
    with pytest.raises(InputError, match=r"methods\[1\]\.context"):
        parse_experiment({"datasets": ["FT"], "methods": [{"prompt": "yesno"}, {"prompt": "yesno", "context": "nope"}]})


def _gen(cache: Path, **changes: object) -> GenerateConfig:
    """A cache of the test's own: the ensembles read the answers their members just computed."""
    return GenerateConfig(threads=2, cache_path=str(cache), **changes)  # type: ignore[arg-type]


def _spec(**fields: object) -> MethodSpec:
    return MethodSpec(backend="mock", **fields)  # type: ignore[arg-type]


def test_a_contrast_is_half_the_difference_of_its_members(tmp_path):
    """The reply-alone prompt shows no conversation turn and no background; the ensemble's value is
    exactly (given − alone) / 2 of the members' own scores, item by item."""
    items = load_items(str(EXAMPLES))[:6]
    given = _spec(name="c", prompt="yesno-criteria", generate=_gen(tmp_path / "cache.sqlite"))
    alone = _spec(name="c-alone", prompt="yesno-criteria", context="none", generate=_gen(tmp_path / "cache.sqlite"))
    contrast = MethodSpec(name="contrast", type="ensemble", members=(given, alone), combine="mean", weights=(1.0, -1.0))
    backends = BackendPool()
    try:
        judge = build(prepare(alone, items), backends)
        prompt, _ = judge.build_prompt(items[0])  # type: ignore[attr-defined]
        assert items[0].response in prompt.text
        assert all(t.text not in prompt.text for t in items[0].context)
        a = [s.value for s in build(prepare(given, items), backends).score(items)]
        b = [s.value for s in judge.score(items)]
        c = list(build(prepare(contrast, items), backends).score(items))
    finally:
        backends.close()
    assert all(v is not None for v in a + b)
    assert a != b  # the conversation changes the answer
    for s, x, y in zip(c, a, b, strict=True):
        assert s.error is None
        assert s.value == pytest.approx((x - y) / 2)  # type: ignore[operator]


def test_a_contrast_without_one_side_fails_the_item_instead_of_scoring_the_other_side(tmp_path):
    """With a context window too small for the longer conversations, the given prompt fails on those
    items while the reply alone still fits: a contrast fails them, an ordinary ensemble keeps going."""
    items = load_items(str(EXAMPLES))
    given = _spec(name="c", prompt="yesno-criteria", generate=_gen(tmp_path / "cache.sqlite", max_context=WINDOW))
    alone = _spec(name="c-alone", prompt="yesno-criteria", context="none",
                  generate=_gen(tmp_path / "cache.sqlite", max_context=WINDOW))
    contrast = MethodSpec(name="contrast", type="ensemble", members=(given, alone), combine="mean", weights=(1.0, -1.0))
    plain = MethodSpec(name="both", type="ensemble", members=(given, alone))
    backends = BackendPool()
    try:
        first = [s.ok for s in build(prepare(given, items), backends).score(items)]
        second = [s.ok for s in build(prepare(alone, items), backends).score(items)]
        diff = list(build(prepare(contrast, items), backends).score(items))
        both = list(build(prepare(plain, items), backends).score(items))
    finally:
        backends.close()
    assert not all(first) and any(first) and all(second)
    for s, ok in zip(diff, first, strict=True):
        assert s.ok == ok
        if not ok:
            assert "a member of a contrast (negative weight) failed" in str(s.error)
    assert all(s.ok for s in both)
    assert any("member_failed" in s.flags for s in both)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env={**os.environ},
                          capture_output=True, text=True, timeout=900)


def test_the_documented_command_line_contrast_equals_its_members(tmp_path):
    """docs/context.md's `judge score` command, as printed there (plus an output file and the mock
    backend): its scores are (given − alone) / 2 of `judge score --context given` and `--context none` on
    the same file."""
    text = (ROOT / "docs" / "context.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(judge score .*?)\n```", text, re.S)
    assert block, "docs/context.md lost its judge score command"
    command = shlex.split(block.group(1).replace("\\\n", " "))
    assert command[:3] == ["judge", "score", "examples/dialogues.jsonl"]
    rows = {}
    for name, args in (("contrast", command[2:]), ("given", ["examples/dialogues.jsonl", "--prompt", "yesno-criteria"]),
                       ("alone", ["examples/dialogues.jsonl", "--prompt", "yesno-criteria", "--context", "none"])):
        out = tmp_path / f"{name}.jsonl"
        proc = _cli("score", *args, "--backend", "mock", "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        rows[name] = [json.loads(x)["score"] for x in out.read_text().splitlines()]
    assert len(rows["contrast"]) == 12
    for c, a, b in zip(rows["contrast"], rows["given"], rows["alone"], strict=True):
        assert c == pytest.approx((a - b) / 2, abs=1e-6)
    meta = json.loads((tmp_path / "alone.meta.json").read_text())
    assert meta["spec"]["context"] == "none"


@pytest.mark.parametrize(("args", "message"), [
    (["--context", "elsewhere"], "invalid choice: 'elsewhere'"),
    (["--scorer", "length", "--context", "none"], "'--context': context belongs to llm methods"),
    (["--method", "criteria", "--context", "none"], "drop --context"),
])
def test_context_flag_errors_are_named(args, message):
    proc = _cli("score", "examples/dialogues.jsonl", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
