"""What a method reads, declared on the contract: reference-based and uses-future methods, the
refusal of a uses-future method without ``allow_future`` (and always in ``judge serve``), and the
reports that keep the kinds apart (real classic scorers, real templates, real data, real CLI)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.engine import MethodSpec, prepare
from judge.engine.kinds import method_kinds, spec_reads
from judge.errors import InputError, TemplateError
from judge.items import SYSTEM, USER, Item, Turn
from judge.prompts import load_template
from judge.scorers.classic import create_classic

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def _turn(i: int, next_user: str | None = "Thanks, that helps!", reference: str = "Try the bakery downtown.") -> Item:
    return Item(f"t{i}", "turn", context=(Turn(USER, "Where can I buy bread?"),), response=f"At the market {i}.",
                references=(reference,), next_user=next_user, annotations={"overall": (float(i % 3),)})


def classic(scorer: str, **kw) -> MethodSpec:
    return MethodSpec(type="classic", scorer=scorer, **kw)


def test_classic_scorers_declare_what_they_read() -> None:
    assert create_classic("length").reads() == frozenset()
    assert create_classic("rouge-l").reads() == {"reference"}
    assert create_classic("bleu4").reads() == {"reference"}
    assert create_classic("embedding-reference").reads() == {"reference"}
    assert create_classic("embedding-cosine").reads() == frozenset()
    assert create_classic("embedding-cosine", against="reference").reads() == {"reference"}
    assert create_classic("next-user-sentiment").reads() == {"next_user"}
    kinds = method_kinds(classic("rouge-l"))
    assert (kinds.kind, kinds.uses_future, kinds.label) == ("reference-based", False, "reference-based")
    kinds = method_kinds(classic("next-user-sentiment"))
    assert (kinds.kind, kinds.uses_future, kinds.label) == ("reference-free", True, "reference-free, uses-future")


def test_templates_declare_reads_and_an_undeclared_read_is_an_error(tmp_path: Path) -> None:
    # Built-in prompts read neither input.
    for prompt in ("yesno", "yesno-criteria", "rating", "fed"):
        assert spec_reads(MethodSpec(prompt=prompt)) == frozenset(), prompt
    body = "Reply: {{ item.response }}\nReference: {{ item.references | join(' / ') }}\nGood? Answer:"
    undeclared = tmp_path / "undeclared.j2"
    undeclared.write_text('{#- judge\nanswer = "yesno"\n-#}\n' + body)
    with pytest.raises(TemplateError, match=r'references is shown only to templates that declare it: add reads = \["reference"\]'):
        load_template(undeclared).render(_turn(1))
    # prepare renders every item once: the mistake surfaces before any model loads, naming the file.
    with pytest.raises(TemplateError, match=r"undeclared\.j2"):
        prepare(MethodSpec(prompt=str(undeclared)), [_turn(1)])
    declared = tmp_path / "declared.j2"
    declared.write_text('{#- judge\nanswer = "yesno"\nreads = ["reference"]\n-#}\n' + body)
    tpl = load_template(declared)
    assert tpl.reads == {"reference"} and "Reference: Try the bakery downtown." in tpl.render(_turn(1))
    assert method_kinds(MethodSpec(prompt=str(declared))).kind == "reference-based"
    future = tmp_path / "future.j2"
    future.write_text('{#- judge\nanswer = "yesno"\nreads = ["next_user"]\n-#}\n{{ item.response }} -> {{ item.next_user }}')
    assert load_template(future).render(_turn(2)) == "At the market 2. -> Thanks, that helps!"
    assert method_kinds(MethodSpec(prompt=str(future))).uses_future
    bad = tmp_path / "bad.j2"
    bad.write_text('{#- judge\nanswer = "yesno"\nreads = ["fact"]\n-#}\nx')
    with pytest.raises(TemplateError, match="metadata 'reads' must be a list of"):
        load_template(bad)


def test_ensembles_take_the_union_of_their_members() -> None:
    free = MethodSpec(type="ensemble", members=(classic("length"), MethodSpec(prompt="yesno")))
    assert method_kinds(free).to_dict() == {"kind": "reference-free", "uses_future": False, "reads": []}
    mixed = MethodSpec(type="ensemble", members=(classic("length"), classic("rouge-l"), classic("next-user-sentiment")),
                       optional=("rouge-l", "next-user-sentiment"), allow_future=True)
    assert method_kinds(mixed).to_dict() == {"kind": "reference-based", "uses_future": True,
                                             "reads": ["next_user", "reference"]}


def test_uses_future_is_refused_unless_the_method_opts_in() -> None:
    items = [_turn(i) for i in range(6)]
    with pytest.raises(InputError, match="reads the user's turn after the rated response") as err:
        prepare(classic("next-user-sentiment"), items)
    assert err.value.field == "allow_future"
    prepare(classic("next-user-sentiment", allow_future=True), items)
    # An ensemble is refused for its member (even an optional one); the ensemble's opt-in covers it.
    members = (classic("length"), classic("next-user-sentiment"))
    with pytest.raises(InputError, match="allow_future = true"):
        prepare(MethodSpec(type="ensemble", members=members, optional=("next-user-sentiment",)), items)
    ens = prepare(MethodSpec(type="ensemble", members=members, optional=("next-user-sentiment",), allow_future=True),
                  items)
    assert [m.spec.name for m in ens.members] == ["length", "next-user-sentiment"]
    # Dialog-level items hold their user turns: nothing from the future is read there.
    dialog = Item("d", "dialog", dialog=(Turn(USER, "hi"), Turn(SYSTEM, "Hello!"), Turn(USER, "Lovely, thanks!")))
    prepare(classic("next-user-sentiment"), [dialog])


def test_cli_refuses_uses_future_and_records_the_kind_with_allow_future(tmp_path: Path) -> None:
    data = tmp_path / "turns.jsonl"
    data.write_text("".join(json.dumps({"id": f"t{i}", "context": [{"speaker": "user", "text": "Any plans?"}],
                                        "response": "Hiking with my dog.", "reference": "I will go hiking.",
                                        "next_user": ["Sounds great!", "That is awful."][i % 2]}) + "\n"
                            for i in range(4)))
    refused = _cli("score", str(data), "--scorer", "next-user-sentiment")
    assert refused.returncode == 2 and "allow-future" in refused.stderr, refused.stderr
    out = tmp_path / "rows.jsonl"
    ok = _cli("score", str(data), "--scorer", "next-user-sentiment", "--allow-future", "-o", str(out))
    assert ok.returncode == 0, ok.stderr
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["kind"] == {"kind": "reference-free", "uses_future": True, "reads": ["next_user"]}
    out2 = tmp_path / "ens.jsonl"
    ens = _cli("score", str(data), "--member", "scorer=length", "--member", "scorer=rouge-l", "-o", str(out2))
    assert ens.returncode == 0, ens.stderr
    assert json.loads(out2.with_suffix(".meta.json").read_text())["kind"]["kind"] == "reference-based"


def test_serve_refuses_uses_future_even_with_allow_future(tmp_path: Path) -> None:
    from judge.serve.service import JudgeService

    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(json.dumps({"id": f"r{i}", "context": [{"speaker": "user", "text": "hi"}],
                                       "response": "hello", "next_user": "ok"}) + "\n" for i in range(3)))
    with pytest.raises(InputError, match="judge serve refuses it"):
        JudgeService.build(classic("next-user-sentiment", allow_future=True), None)
    members = (classic("length"), classic("next-user-sentiment"))
    with pytest.raises(InputError, match="judge serve refuses it"):
        JudgeService.build(MethodSpec(type="ensemble", members=members, allow_future=True), None, [])
    # The command refuses before it opens its port.
    r = _cli("serve", "--port", "0", "--scorer", "next-user-sentiment", "--allow-future")
    assert r.returncode == 2 and "judge serve refuses it" in r.stderr, r.stderr
    r = _cli("serve", "--port", "0", "--member", "scorer=length", "--member", "scorer=next-user-sentiment",
             "--allow-future", "--reference-set", str(ref))
    assert r.returncode == 2 and "judge serve refuses it" in r.stderr, r.stderr


REPORT_CONFIG = """
name = "kinds"
limit = 60
bootstrap = 200
datasets = ["TU", "FD"]
[[methods]]
type = "classic"
scorer = "rouge-l"
[[methods]]
type = "classic"
scorer = "length"
[[methods]]
name = "next-user"
type = "classic"
scorer = "next-user-sentiment"
allow_future = true
[[methods]]
name = "ens-ref"
type = "ensemble"
members = ["length", "rouge-l", "next-user"]
optional = ["rouge-l", "next-user"]
allow_future = true
"""


@pytest.fixture(scope="module")
def kinds_run(tmp_path_factory, data_dir) -> Path:
    from judge.harness import load_experiment, run_experiment

    root = tmp_path_factory.mktemp("kinds")
    cfg = root / "c.toml"
    cfg.write_text(REPORT_CONFIG)
    out = root / "out"
    run_experiment(load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(out)), progress=False,
                   plots=False, log=lambda m: None)
    return out


def test_harness_refuses_uses_future_without_allow_future(tmp_path: Path, data_dir) -> None:
    from judge.harness import load_experiment, run_experiment

    cfg = tmp_path / "c.toml"
    cfg.write_text(REPORT_CONFIG.replace("allow_future = true\n", ""))
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(tmp_path / "out"))
    with pytest.raises(InputError, match=r"next-user.*allow_future = true"):
        run_experiment(exp, progress=False, plots=False, log=lambda m: None)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_reports_list_reference_free_first_and_label_the_kinds(kinds_run: Path) -> None:
    summary = json.loads((kinds_run / "summary.json").read_text())
    kinds = {m: (s["kind"], s["uses_future"]) for m, s in summary["methods"].items()}
    assert kinds == {"rouge-l": ("reference-based", False), "length": ("reference-free", False),
                     "next-user": ("reference-free", True), "ens-ref": ("reference-based", True)}
    md = (kinds_run / "leaderboard.md").read_text()
    free = md.index("### Reference-free methods")
    based = md.index("### Reference-based methods")
    assert free < based
    method_lines = [line.split("|")[1].strip() for line in md[free:].splitlines()
                    if line.startswith("| ") and not line.startswith(("| method", "| ---", "| n (", "| ↳", "| human"))]
    assert method_lines[:4] == ["length", "next-user (uses-future)", "rouge-l", "ens-ref (uses-future)"]
    # Each kind has its own table (a best value per kind), and no row or column mixes them.
    assert md.count("| method | TU | FD | avg |") == 2
    html = (kinds_run / "leaderboard.html").read_text()
    assert html.index("<h2>Reference-free methods") < html.index("<h2>Reference-based methods")
    assert "next-user (uses-future)</td>" in html
    rows = list(csv.DictReader(io.StringIO((kinds_run / "results.csv").read_text())))
    order = list(dict.fromkeys(r["method"] for r in rows))
    assert order == ["length", "next-user", "rouge-l", "ens-ref"]
    assert {r["method"]: (r["kind"], r["uses_future"]) for r in rows}["ens-ref"] == ("reference-based", "True")


def test_bench_prints_the_kind(data_dir) -> None:
    r = _cli("bench", "--data-dir", str(data_dir), "--dataset", "FD", "--scorer", "next-user-sentiment", "--allow-future",
             "--bootstrap", "200")
    assert r.returncode == 0, r.stderr
    assert "kind      reference-free, uses-future (reads the user's turn after the rated response)" in r.stdout
