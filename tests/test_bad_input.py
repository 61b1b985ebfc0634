"""Bad input through the real CLI: one clear error naming file, line/record and field; exit code 2;
no traceback; no output file; and the model is never loaded for input that cheap checks can refuse.

Most cases run ``judge.cli.main`` in-process (fast); a representative subset runs ``python -m judge``
in a subprocess exactly as a user would. In-process, ``create_backend`` is replaced by a tripwire
that fails the test if reached: it is not a stand-in for the model, it proves that validation
happened before the (expensive) model load. A valid-input control checks the tripwire fires.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import judge
from judge.cli import main
from judge.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

GOOD = {"id": "a", "context": [{"speaker": "user", "text": "Any idea for dinner?"}],
        "response": "A quick chickpea curry.", "scores": {"overall": 4}}


def line(**changes: object) -> str:
    """A JSONL line: GOOD with ``changes`` applied (a value of ... deletes the key)."""
    rec = dict(GOOD)
    for k, v in changes.items():
        if v is ...:
            rec.pop(k, None)
        else:
            rec[k] = v
    return json.dumps(rec)


def good(i: int) -> str:
    return line(id=f"ok-{i}")


class ModelLoaded(Exception):
    """Raised by the tripwire: the CLI tried to load a model."""


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run ``judge`` in-process; returns (exit code, stderr). Loading a model raises ModelLoaded."""

    def tripwire(*args, **kwargs):
        raise ModelLoaded("the model was loaded before the input was validated")

    from judge.backends.registry import BACKENDS

    # Replace each registered factory (not create_backend itself: its name check stays real).
    for name in BACKENDS.names():
        monkeypatch.setitem(BACKENDS._entries, name, tripwire)

    def run(*argv: str) -> tuple[int, str]:
        capsys.readouterr()
        rc = main([str(a) for a in argv])
        return rc, capsys.readouterr().err

    return run


def assert_clear(rc: int, err: str, *parts: str) -> None:
    assert rc == 2, err
    assert "Traceback" not in err
    assert err.startswith("judge: error: "), err
    assert err.count("\n") == 1, f"expected one line, got: {err!r}"
    for p in parts:
        assert p in err, f"{p!r} not in {err!r}"


# --- the JSONL matrix: (name, file content, expected fragments of the message) ---------------------
# Fragments always include the place ("line N" or "record ID") and, where one exists, the field.

JSONL_CASES = [
    ("invalid-json", good(1) + '\n{"id": "b", "context": [\n', ["line 2", "invalid JSON"]),
    ("invalid-json-trailing-comma", good(1) + "\n" + good(2)[:-1] + ",}\n", ["line 2", "invalid JSON"]),
    ("invalid-json-single-quotes", "{'id': 'a'}\n", ["line 1", "invalid JSON"]),
    ("invalid-utf8", (good(1) + "\n" + good(2)).encode().replace(b"quick", b"qu\xffick", 1), ["line 1", "UTF-8"]),
    ("invalid-utf8-line3", (good(1) + "\n" + good(2) + "\n" + line(id="x", response="caf\udce9")).encode(
        "utf-8", "surrogateescape"), ["line 3", "UTF-8"]),
    ("empty-file", "", ["no records"]),
    ("only-blank-lines", "\n   \n\t\n", ["no records"]),
    ("array-line", good(1) + "\n[1, 2]\n", ["line 2", "expected a JSON object"]),
    ("string-line", '"just text"\n', ["line 1", "expected a JSON object"]),
    ("number-line", "42\n", ["line 1", "expected a JSON object"]),
    ("null-line", "null\n", ["line 1", "expected a JSON object"]),
    ("missing-id", line(id=...), ["line 1", "field 'id'", "missing"]),
    ("id-number", line(id=7), ["line 1", "field 'id'"]),
    ("id-blank", line(id="  "), ["line 1", "field 'id'", "empty"]),
    ("missing-response", line(response=...), ["line 1", "field 'response'", "missing"]),
    ("missing-context", line(context=...), ["line 1", "field 'context'", "missing"]),
    ("response-list", line(response=["a"]), ["line 1", "field 'response'"]),
    ("response-null", line(response=None), ["line 1", "field 'response'"]),
    ("context-string", line(context="hi"), ["line 1", "field 'context'"]),
    ("turn-string", line(context=["hi"]), ["line 1", "field 'context[0]'"]),
    ("turn-text-number", line(context=[{"speaker": "user", "text": 3}]), ["field 'context[0].text'"]),
    ("turn-missing-speaker", line(context=[{"text": "hi"}]), ["field 'context[0].speaker'"]),
    ("turn-extra-key", line(context=[{"speaker": "user", "text": "hi", "txt": "x"}]), ["field 'context[0].txt'"]),
    ("unknown-speaker", line(context=[{"speaker": "narrator", "text": "hi"}]),
     ["line 1", "field 'context[0].speaker'", "unknown speaker", "user"]),
    ("turn-text-null", line(context=[{"speaker": "user", "text": "hi"}, {"speaker": "system", "text": None}]),
     ["line 1", "field 'context[1].text'", "missing"]),
    ("empty-dialog", line(context=..., response=..., dialog=[]), ["line 1", "field 'dialog'", "empty"]),
    ("dialog-and-response", line(context=..., dialog=[{"speaker": "user", "text": "hi"}]),
     ["line 1", "field 'response'"]),
    ("dialog-turn-text-list", line(context=..., response=..., dialog=[{"speaker": "bot", "text": ["hi"]}]),
     ["field 'dialog[0].text'", "expected string"]),
    ("typo-key", line(respone="x"), ["line 1", "field 'respone'", "did you mean 'response'"]),
    ("reference-number", line(reference=5), ["field 'reference'"]),
    ("reference-list-of-numbers", line(reference=["ok", 5]), ["field 'reference[1]'"]),
    ("fact-list", line(fact=["x"]), ["field 'fact'"]),
    ("scores-list", line(scores=[4]), ["field 'scores'"]),
    ("score-string", line(scores={"overall": "4"}), ["line 1", "field 'scores.overall'", "expected a number"]),
    ("score-bool", line(scores={"overall": True}), ["field 'scores.overall'", "expected a number"]),
    ("score-null-in-list", line(scores={"overall": [4, None]}), ["field 'scores.overall'"]),
    ("score-nan", line(scores={"overall": float("nan")}), ["line 1", "field 'scores.overall'", "finite"]),
    ("score-inf", line(scores={"overall": float("inf")}), ["field 'scores.overall'", "finite"]),
    ("score-minus-inf", line(scores={"overall": [3, float("-inf")]}), ["field 'scores.overall'", "finite"]),
    ("score-overflow-1e999", good(1)[:-2] + ', "fluent": 1e999}}', ["field 'scores.fluent'", "finite"]),
    ("score-huge-int", line(scores=...)[:-1] + ', "scores": {"overall": ' + "9" * 5000 + "}}", ["line 1", "invalid JSON"]),
    ("deep-nesting", "[" * 100_000 + "]" * 100_000, ["line 1", "invalid JSON"]),
    ("lone-surrogate", line(response="\\ud800 hi").replace("\\\\ud800", "\\ud800"), ["line 1", "Unicode"]),
    ("duplicate-id", good(1) + "\n" + good(2) + "\n" + good(1) + "\n",
     ["line 3", "field 'id'", "duplicate id 'ok-1'", "line 1"]),
]


@pytest.mark.parametrize("name,content,parts", JSONL_CASES, ids=[c[0] for c in JSONL_CASES])
def test_bad_jsonl(cli, tmp_path, name, content, parts):
    path = tmp_path / f"{name}.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    rc, err = cli("score", path, "-o", out)
    assert_clear(rc, err, str(path), *parts)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path], "no temp or partial files left behind"
    # The public API raises the same InputError (with its structured fields).
    with pytest.raises(InputError) as info:
        judge.load_items(path)
    assert info.value.file == str(path)


# --- human scores outside the quality's scale ----------------------------------------------------

SCALE_CASES = [
    # (scores, declared scales of the file, --quality, fragments). A user's qualities have the scale
    # the file declares; none is borrowed from a registered quality of the same name.
    ({"overall": 9}, {"overall": [1, 5]}, "overall", ["line 2", "field 'scores.overall'", "9", "[1, 5]"]),
    ({"overall": [3, 0]}, {"overall": [1, 5]}, "overall", ["line 2", "field 'scores.overall'", "0 is outside"]),
    ({"overall": 3}, {"overall": [0, 2]}, "overall", ["line 2", "field 'scores.overall'", "[0, 2]"]),
    ({"Interesting": 3}, {"interesting": [0, 2]}, "Interesting", ["line 2", "field 'scores.Interesting'", "[0, 2]"]),
    ({"Appropriateness": 5.5}, {"appropriateness": [1, 5]}, "appropriateness",
     ["field 'scores.Appropriateness'", "[1, 5]"]),
]


@pytest.mark.parametrize("scores,scales,quality,parts", SCALE_CASES)
def test_out_of_scale_scores_are_refused(cli, tmp_path, scores, scales, quality, parts):
    path = tmp_path / "data.jsonl"
    path.write_text(line(id="z", scores={}, scales=scales) + "\n" + line(scores=scores) + "\n")
    out = tmp_path / "out.jsonl"
    rc, err = cli("score", path, "--quality", quality, "-o", out)
    assert_clear(rc, err, str(path), "outside", *parts)
    assert not out.exists()


@pytest.mark.parametrize("scores,quality", [({"overall": 4}, "overall"), ({"engaging": 2}, "engaging")])
def test_undeclared_scale_is_refused_when_needed(cli, tmp_path, scores, quality):
    """No silent 1-5 for a user's overall, no FED 0-2 for a user's 'engaging': the scale must be declared."""
    path = tmp_path / "data.jsonl"
    path.write_text(line(scores=scores) + "\n")
    rc, err = cli("score", path, "--quality", quality, "-o", tmp_path / "out.jsonl")
    assert_clear(rc, err, str(path), f"quality '{quality}' has no known scale", f"--scale {quality}=MIN:MAX")
    # A blank response is data, not an error: the same file with one passes validation.
    path.write_text(line(scores=scores, response="  ", scales={quality: [0, 5]}) + "\n")
    with pytest.raises(ModelLoaded):
        cli("score", path, "--quality", quality, "-o", tmp_path / "out.jsonl")
    # So are blank turns of a context or a dialog (a real log's empty bot reply): they pass validation too.
    path.write_text(line(scores=scores, scales={quality: [0, 5]},
                         context=[{"speaker": "user", "text": "hi"}, {"speaker": "system", "text": "  \n"},
                                  {"speaker": "user", "text": "hello?"}]) + "\n"
                    + line(id="d", scores=scores, context=..., response=...,
                           dialog=[{"speaker": "bot", "text": ""}, {"speaker": "user", "text": "hi"}]) + "\n")
    with pytest.raises(ModelLoaded):
        cli("score", path, "--quality", quality, "-o", tmp_path / "out.jsonl")


def test_in_scale_scores_pass_validation_and_reach_the_model(cli, tmp_path):
    """Control: valid input gets past every check and on to the model load (the tripwire fires)."""
    path = tmp_path / "data.jsonl"
    path.write_text(line(id="z", scales={"overall": [1, 5]}) + "\n" + line(id="b", scores={"overall": [1, 5]}) + "\n",
                    encoding="utf-8-sig")
    with pytest.raises(ModelLoaded):
        cli("score", path, "--quality", "overall", "-o", tmp_path / "out.jsonl")
    with pytest.raises(ModelLoaded):
        cli("score", ROOT / "examples" / "dialogues.jsonl", "--k", "2", "--selector", "random")


def test_bench_checks_the_scale(cli, tmp_path, data_dir):
    """``judge bench`` refuses a benchmark file whose ratings leave the registered scale."""
    src = data_dir / "dstc10_track5" / "fed-turn_eval.json"
    records = json.loads(src.read_text(encoding="utf-8"))[:3]
    records[1]["annotations"]["Interesting"] = [1, 7, 0]
    bad_dir = tmp_path / "data"
    (bad_dir / "dstc10_track5").mkdir(parents=True)
    (bad_dir / "dstc10_track5" / "fed-turn_eval.json").write_text(json.dumps(records))
    rc, err = cli("bench", "--data-dir", bad_dir, "--dataset", "fed-turn", "--quality", "Interesting")
    bad_id = judge.load_items(bad_dir / "dstc10_track5" / "fed-turn_eval.json", format="dstc10")[1].id
    assert_clear(rc, err, "fed-turn_eval.json", f"record {bad_id}", "scores.Interesting", "7", "[0, 2]")
    # The unmodified file passes validation (the tripwire fires at the model load).
    with pytest.raises(ModelLoaded):
        cli("bench", "--data-dir", data_dir, "--dataset", "fed-turn", "--quality", "Interesting", "--limit", "2")


# --- names, options, files ------------------------------------------------------------------------

EXAMPLES = ROOT / "examples" / "dialogues.jsonl"

OPTION_CASES = [
    (["--prompt", "yesnoo"], ["unknown prompt 'yesnoo'", "Did you mean: yesno"]),
    (["--prompt", "fed-turn-intresting"], ["unknown prompt", "fed-turn-interesting"]),
    (["--selector", "nonne"], ["unknown selector 'nonne'", "Did you mean: none"]),
    (["--backend", "llamacp"], ["unknown backend 'llamacp'", "Did you mean: llamacpp"]),
    (["--quality", "overal"], ["unknown quality 'overal'", "Did you mean: overall"]),
    (["--rule", "expectd"], ["unknown scoring rule 'expectd'", "Did you mean: expected"]),
    (["--member", "prompt=rating,rule=expectd", "--member", "prompt=yesno"], ["unknown scoring rule 'expectd'"]),
    (["--k", "-1"], ["field '--k'", ">= 0", "-1"]),
    (["--top-k", "0"], ["field '--top-k'", ">= 1"]),
    (["--batch-size", "0"], ["field '--batch-size'", ">= 1"]),
    (["--threads", "-2"], ["field '--threads'", ">= 1"]),
    (["--n-ctx", "0"], ["field '--n-ctx'", ">= 1"]),
    # Refused by GenerateConfig itself (every entry point), once silently raised to 1 / 0.
    (["--concurrency", "0"], ["field '--concurrency'", ">= 1, got 0"]),
    (["--backend", "openai", "--concurrency", "-4"], ["field '--concurrency'", ">= 1, got -4"]),
    (["--max-retries", "-1"], ["field '--max-retries'", ">= 0, got -1"]),
    (["--limit", "0"], ["field '--limit'", ">= 1"]),
    (["--limit", "-3"], ["field '--limit'", ">= 1"]),
    (["--template", "/nonexistent/my.j2"], ["/nonexistent/my.j2", "template file not found"]),
    (["--template", "{tmp}"], ["{tmp}", "is a directory"]),
    (["-o", "{tmp}"], ["{tmp}", "field '--output'", "is a directory"]),
    (["-o", "{examples}/x.jsonl"], ["field '--output'", "is not a directory"]),
    (["-o", "{tmp}/" + "x" * 300], ["field '--output'", "cannot write here"]),
]


@pytest.mark.parametrize("options,parts", OPTION_CASES, ids=[" ".join(o)[:40] for o, _ in OPTION_CASES])
def test_bad_option(cli, tmp_path, options, parts):
    fill = {"tmp": str(tmp_path), "examples": str(EXAMPLES)}
    options = [o.format(**fill) for o in options]
    parts = [p.format(**fill) for p in parts]
    rc, err = cli("score", EXAMPLES, *options)
    assert_clear(rc, err, *parts)


def test_fed_prompt_without_quality(cli, tmp_path):
    path = tmp_path / "unrated.jsonl"
    path.write_text(line(scores=...) + "\n")
    rc, err = cli("score", path, "--prompt", "fed")
    assert_clear(rc, err, "--prompt fed needs --quality", "field 'quality'")
    rc, err = cli("score", path, "--k", "2", "--selector", "random")
    assert_clear(rc, err, "field 'quality'", "in-context examples")
    rc, err = cli("score", path, "--k", "2")
    assert_clear(rc, err, "field '--selector'", "needs an example selector")


BENCH_CASES = [
    (["--dataset", "fed-trun"], ["unknown dataset 'fed-trun'", "Did you mean: fed-turn"]),
    (["--dataset", "fed-turn", "--quality", "Interestng"], ["'Interestng'", "Interesting"]),
    (["--dataset", "TU", "--prompt", "ratin"], ["unknown prompt 'ratin'", "rating"]),
    (["--dataset", "fed-turn", "--limit", "-1"], ["field '--limit'"]),
]


@pytest.mark.parametrize("options,parts", BENCH_CASES, ids=[" ".join(o) for o, _ in BENCH_CASES])
def test_bad_bench_option(cli, data_dir, options, parts):
    rc, err = cli("bench", "--data-dir", data_dir, *options)
    assert_clear(rc, err, *parts)


def test_bench_missing_data_dir(cli, tmp_path):
    rc, err = cli("bench", "--data-dir", tmp_path / "nowhere", "--dataset", "fed-turn")
    assert_clear(rc, err, "nowhere", "fed-turn_eval.json", "does not exist")


@pytest.mark.parametrize("kind", ["missing", "directory", "name-too-long", "unknown-format"])
def test_bad_input_path(cli, tmp_path, kind):
    path = {
        "missing": tmp_path / "nope.jsonl",
        "directory": tmp_path,
        "name-too-long": tmp_path / ("y" * 300 + ".jsonl"),
        "unknown-format": tmp_path / "notes.txt",
    }[kind]
    if kind == "unknown-format":
        path.write_text("hello\n")
    rc, err = cli("score", path)
    assert_clear(rc, err, str(path))


def test_benchmark_json_with_unknown_records(cli, tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([{"question": "?", "answer": "!"}]))
    rc, err = cli("score", path)
    assert_clear(rc, err, str(path), "record #0", "cannot tell the format")


# --- templates -------------------------------------------------------------------------------------

TEMPLATE_CASES = [
    ("syntax", "Context:\n{% for t in item.context %}{{ t.text }}\nAnswer:", ["line", "syntax error"]),
    ("unclosed-expr", "Response: {{ item.response \nAnswer:", ["syntax error"]),
    ("undefined-variable", "Response: {{ item.respons }}\nAnswer:", ["undefined", "respons"]),
    ("undefined-global", "{{ rating_scale }} Answer:", ["undefined", "rating_scale"]),
    ("runtime-error", "{{ item.response + 1 }}", ["TypeError"]),
    ("sandbox", "{{ item.__class__ }}", ["security error", "__class__"]),
    ("missing-include", "{% include 'nothere.j2' %}", ["nothere.j2", "not found"]),
    ("bad-metadata-toml", '{#- judge\nanswer = rating\n-#}\n{{ item.response }}', ["metadata"]),
    ("bad-answer-kind", '{#- judge\nanswer = "maybe"\n-#}\n{{ item.response }}', ["'answer'", "maybe"]),
    ("bad-scale-type", '{#- judge\nanswer = "rating"\nmin = "a"\nmax = 5\n-#}\n{{ item.response }}', ["'min'"]),
    ("bad-scale-inf", '{#- judge\nanswer = "rating"\nmin = 0\nmax = inf\n-#}\n{{ item.response }}', ["'max'"]),
    ("bad-scale-order", '{#- judge\nanswer = "rating"\nmin = 5\nmax = 1\n-#}\n{{ item.response }}', ["min < max"]),
    ("bad-threshold", '{#- judge\nthreshold = 2\n-#}\n{{ item.response }}', ["'threshold'"]),
    ("unknown-metadata", '{#- judge\nanwser = "yesno"\n-#}\n{{ item.response }}', ["anwser"]),
    ("invalid-utf8", b"Response: \xff{{ item.response }}", ["UTF-8"]),
]


@pytest.mark.parametrize("name,source,parts", TEMPLATE_CASES, ids=[c[0] for c in TEMPLATE_CASES])
def test_bad_template(cli, tmp_path, name, source, parts):
    path = tmp_path / f"{name}.j2"
    path.write_bytes(source if isinstance(source, bytes) else source.encode())
    out = tmp_path / "out.jsonl"
    rc, err = cli("score", EXAMPLES, "--template", path, "-o", out)
    assert_clear(rc, err, str(path), *parts)
    assert not out.exists()


def test_template_error_on_one_item_stops_before_the_model(cli, tmp_path):
    """A template that only fails on some items (here: items without a fact) is caught up front."""
    path = tmp_path / "fact.j2"
    path.write_text("Fact: {{ item.fact.upper() }}\nResponse: {{ item.response }}\nAnswer:")
    data = tmp_path / "d.jsonl"
    data.write_text(line(id="with", fact="Bread needs yeast.") + "\n" + line(id="without") + "\n")
    rc, err = cli("score", data, "--template", path)
    assert_clear(rc, err, str(path), "upper")


# --- the same through a real subprocess (what a user sees) ----------------------------------------

SUBPROCESS_CASES = [
    ("invalid-json", good(1) + "\n{oops\n", [], ["line 2", "invalid JSON"]),
    ("invalid-utf8", b'{"id": "a\xff"}\n', [], ["line 1", "UTF-8"]),
    ("out-of-scale", line(scores={"overall": 6}, scales={"overall": [1, 5]}), ["--quality", "overall"],
     ["line 1", "scores.overall", "outside"]),
    ("undeclared-scale", line(scores={"overall": 4}), ["--quality", "overall"], ["no known scale", "--scale"]),
    ("unknown-prompt", good(1), ["--prompt", "yesnoo"], ["Did you mean: yesno"]),
    ("negative-k", good(1), ["--k", "-1"], ["'--k'"]),
    # A model path that does not exist would fail when loaded: the rule's refusal must come first.
    ("mistyped-rule", good(1), ["--rule", "expectd", "--model", "/nonexistent/model.gguf"],
     ["unknown scoring rule 'expectd'", "Did you mean: expected"]),
    ("zero-concurrency", good(1), ["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--concurrency", "0"],
     ["field '--concurrency'", ">= 1, got 0"]),
    ("negative-max-retries", good(1), ["--max-retries", "-1"], ["field '--max-retries'", ">= 0, got -1"]),
]


@pytest.mark.parametrize("name,content,options,parts", SUBPROCESS_CASES, ids=[c[0] for c in SUBPROCESS_CASES])
def test_bad_input_subprocess(tmp_path, name, content, options, parts):
    path = tmp_path / "in.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(path), "-o", str(out), *options],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert_clear(proc.returncode, proc.stderr, *parts)
    assert proc.stdout == ""
    assert not out.exists()


@pytest.mark.slow
def test_dialog_longer_than_any_context_window(tmp_path):
    """One item cannot fit any context window: it fails with a reason, the others score, exit 3,
    and the output file is written with every item (real default model)."""
    words = " ".join(f"word{i}" for i in range(12_000))  # > 50k tokens: beyond any SmolLM2 window
    rows = [
        line(id="first"),
        json.dumps({"id": "huge", "context": [{"speaker": "user", "text": words}], "response": "ok"}),
        line(id="last", response="I have no idea what dinner is."),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(path), "-o", str(out), "--threads", "2"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "1 of 3 items failed" in proc.stderr
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in got] == ["first", "huge", "last"]
    assert got[1]["score"] is None and "context window" in got[1]["error"] and "nothing was cut" in got[1]["error"]
    assert got[1]["flags"] == ["long_turn", "too_long"]  # a very long turn is flagged on load, then fails the window
    for r in (got[0], got[2]):
        assert r["error"] is None and r["flags"] == [] and 0.0 <= r["score"] <= 1.0


@pytest.mark.parametrize("kind", ["missing-file", "not-a-gguf", "unknown-id"])
def test_bad_model(tmp_path, capsys, kind):
    """Model errors surface at the model load (the real one here) as one clear line, exit 2."""
    model = {"missing-file": str(tmp_path / "none.gguf"), "not-a-gguf": str(tmp_path / "fake.gguf"),
             "unknown-id": "someone/some-model"}[kind]
    (tmp_path / "fake.gguf").write_text("not a model")
    out = tmp_path / "out.jsonl"
    rc = main(["score", str(EXAMPLES), "--model", model, "-o", str(out)])
    assert_clear(rc, capsys.readouterr().err, model)
    assert not out.exists()


def test_mistyped_rule_in_a_config_stops_before_any_model(cli, tmp_path, data_dir):
    """`rule = "expectd"` in a `judge run` config: refused with the other names, naming the entry."""
    cfg, out = tmp_path / "c.toml", tmp_path / "out"
    cfg.write_text(f'name = "r"\ndata_dir = "{data_dir}"\noutput = "{out}"\ndatasets = ["FT"]\n'
                   'qualities = ["Overall"]\nlimit = 3\n[[methods]]\nprompt = "yesno"\n'
                   '[[methods]]\nprompt = "rating"\nrule = "expectd"\n')
    for command in (("run", cfg), ("run", cfg, "--check")):
        rc, err = cli(*command)
        assert_clear(rc, err, "c.toml", "methods[1]", "unknown scoring rule 'expectd'", "Did you mean: expected")
    assert not (tmp_path / "out").exists()


def test_a_relative_data_dir_that_is_not_there_names_the_working_directory(cli):
    """A config's ``data_dir`` is read from where judge runs: from another folder, the error says so."""
    rc, err = cli("bench", "--data-dir", "no/such/data", "--dataset", "fed-turn")
    assert_clear(rc, err, "no/such/data", "relative to the working directory", "--data-dir")
