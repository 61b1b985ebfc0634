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

from judge.core.errors import InputError, TemplateError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.engine import MethodSpec, prepare
from judge.engine.kinds import method_kinds
from judge.prompts.templates import load_template
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
    assert (kinds.kind, kinds.uses_future, kinds.label) == ("uses-future", True, "uses-future")


def test_templates_declare_reads_and_an_undeclared_read_is_an_error(tmp_path: Path) -> None:
    # Built-in prompts read neither input.
    for prompt in ("yesno", "yesno-criteria", "rating", "fed"):
        assert method_kinds(MethodSpec(prompt=prompt)).reads == frozenset(), prompt
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
    # Reference-based and uses-future: the stronger caveat, uses-future, is its kind; the reads stay on record.
    assert method_kinds(mixed).to_dict() == {"kind": "uses-future", "uses_future": True,
                                             "reads": ["next_user", "reference"]}
    assert method_kinds(mixed).label == "uses-future, reference-based"


def test_an_ensemble_fitted_on_the_scored_set_is_supervised_whatever_it_reads() -> None:
    """``fit = "cv"`` learns the weights on the scored set's own ratings: its kind is supervised, above
    every other (and a ``lodo`` or fixed-weight ensemble of the same members is not)."""
    members = (classic("length"), MethodSpec(prompt="yesno"))
    cv = method_kinds(MethodSpec(type="ensemble", members=members, fit="cv"))
    assert cv.to_dict() == {"kind": "supervised", "uses_future": False, "reads": [], "supervised": True}
    assert method_kinds(MethodSpec(type="ensemble", members=members, fit="lodo")).kind == "reference-free"
    assert method_kinds(MethodSpec(type="ensemble", members=members)).kind == "reference-free"
    future = (classic("length"), classic("rouge-l"), classic("next-user-sentiment"))
    both = method_kinds(MethodSpec(type="ensemble", members=future, fit="cv", allow_future=True))
    assert (both.kind, both.label) == ("supervised", "supervised, reference-based, uses-future")


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


@pytest.mark.slow
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
    assert meta["kind"] == {"kind": "uses-future", "uses_future": True, "reads": ["next_user"]}
    out2 = tmp_path / "ens.jsonl"
    ens = _cli("score", str(data), "--member", "scorer=length", "--member", "scorer=rouge-l", "-o", str(out2))
    assert ens.returncode == 0, ens.stderr
    assert json.loads(out2.with_suffix(".meta.json").read_text())["kind"]["kind"] == "reference-based"
    out3 = tmp_path / "cv.jsonl"
    cv = _cli("score", str(data), "--member", "scorer=length", "--member", "scorer=rouge-l", "--fit", "cv",
              "--quality", "overall", "--scale", "overall=0:2", "-o", str(out3))
    assert cv.returncode == 0, cv.stderr
    assert json.loads(out3.with_suffix(".meta.json").read_text())["kind"] == {
        "kind": "supervised", "uses_future": False, "reads": ["reference"], "supervised": True}


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
[[methods]]
name = "ens-cv"
type = "ensemble"
members = ["length", "rouge-l"]
optional = ["rouge-l"]
fit = "cv"
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


def test_reports_give_each_kind_its_own_table(kinds_run: Path) -> None:
    """Four kinds, four tables in the Markdown and HTML reports and four kinds in the CSV, reference-free
    first: a uses-future method (next-user) or a supervised one (ens-cv) never sits in the reference-free
    table, where it could be bolded best."""
    summary = json.loads((kinds_run / "summary.json").read_text())
    kinds = {m: (s["kind"], s["uses_future"]) for m, s in summary["methods"].items()}
    assert kinds == {"rouge-l": ("reference-based", False), "length": ("reference-free", False),
                     "next-user": ("uses-future", True), "ens-ref": ("uses-future", True),
                     "ens-cv": ("supervised", False)}
    md = (kinds_run / "leaderboard.md").read_text()
    titles = ["### Reference-free methods", "### Reference-based methods", "### Uses-future methods",
              "### Supervised on the scored set"]
    starts = [md.index(t) for t in titles]
    assert starts == sorted(starts)
    tables = [md[a:b] for a, b in zip(starts, [*starts[1:], md.index("\n## ", starts[-1])], strict=True)]

    def methods(table: str) -> list[str]:
        return [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")
                and not line.startswith(("| method", "| ---", "| n (", "| ↳", "| human"))]

    assert [methods(t) for t in tables] == [["length"], ["rouge-l"], ["next-user", "ens-ref"], ["ens-cv"]]
    # A method alone in its table is the best of nothing: the reference-free table has no bold at all.
    assert "**" not in tables[0] and "**" not in tables[3]
    assert md.count("| method | TU | FD | avg |") == 4
    html = (kinds_run / "leaderboard.html").read_text()
    assert [html.index(f"<h2>{t.removeprefix('### ')}") for t in titles] == sorted(
        html.index(f"<h2>{t.removeprefix('### ')}") for t in titles)
    assert "next-user</td>" in html and "(uses-future)</td>" not in html
    rows = list(csv.DictReader(io.StringIO((kinds_run / "results.csv").read_text())))
    order = list(dict.fromkeys(r["method"] for r in rows))
    assert order == ["length", "rouge-l", "next-user", "ens-ref", "ens-cv"]
    assert {r["method"]: r["kind"] for r in rows} == {m: k for m, (k, _) in kinds.items()}


def test_best_is_never_taken_across_kinds(kinds_run: Path) -> None:
    """Bold marks the best value of its column within its own kind: raising a uses-future cell above
    every other method leaves the reference-free and reference-based bests where they were."""
    import copy

    from judge.records.summary import Summary
    from judge.report.table import build

    summary = json.loads((kinds_run / "summary.json").read_text())
    summary["methods"]["plain"] = {**summary["methods"]["length"]}
    plain = [copy.deepcopy(r) for r in summary["results"] if r["method"] == "length"]
    for r in plain:
        r["method"], r["spearman"] = "plain", (r["spearman"] or 0) - 0.5
    summary["results"] += plain
    for r in summary["results"]:
        if r["method"] == "next-user":
            r["spearman"] = 0.99
    board = build(Summary.from_dict(summary))
    by_kind = {kind: rows for kind, _title, rows in board.sections()}
    j = next(i for i, c in enumerate(board.columns) if c.key == ("fed-dial", "Overall"))  # next-user scores FD
    free = {r.method: r.cells[j].best for r in by_kind["reference-free"]}
    assert free == {"length": True, "plain": False}
    future = {r.method: r.cells[j].best for r in by_kind["uses-future"]}
    assert future["next-user"] and not future["ens-ref"]


def test_old_summaries_put_uses_future_methods_in_their_own_table() -> None:
    """Summaries written with two kinds recorded a uses-future method as reference-free with
    ``uses_future``: its report still keeps it out of the reference-free table."""
    from judge.data.kinds import recorded_kind

    assert recorded_kind({"kind": "reference-free", "uses_future": True}) == "uses-future"
    assert recorded_kind({"kind": "reference-based", "uses_future": True}) == "uses-future"
    assert recorded_kind({"kind": "reference-free", "uses_future": False}) == "reference-free"
    assert recorded_kind({}) == "unknown"


@pytest.mark.slow
def test_a_turn_item_anywhere_in_a_file_needs_allow_future(tmp_path: Path) -> None:
    """A file whose first line is a dialog and whose second is a turn with ``next_user`` is refused like
    the reversed file: every item's level counts, not the first line's."""
    dialog = {"id": "d", "dialog": [{"speaker": "user", "text": "hi"}, {"speaker": "system", "text": "Hello!"},
                                     {"speaker": "user", "text": "Lovely, thanks!"}], "scores": {"overall": 2}}
    turn = {"id": "t", "context": [{"speaker": "user", "text": "Any plans?"}], "response": "Hiking.",
            "next_user": "Sounds great!", "scores": {"overall": 1}}
    for name, records in (("dialog-first", [dialog, turn]), ("turn-first", [turn, dialog])):
        data = tmp_path / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in records))
        refused = _cli("score", str(data), "--scorer", "next-user-sentiment")
        assert refused.returncode == 2, (name, refused.stdout, refused.stderr)
        assert "reads the user's turn after the rated response" in refused.stderr, refused.stderr
        ok = _cli("score", str(data), "--scorer", "next-user-sentiment", "--allow-future")
        assert ok.returncode == 0, (name, ok.stderr)
        assert len(ok.stdout.splitlines()) == 2
    only_dialogs = tmp_path / "dialogs.jsonl"
    only_dialogs.write_text(json.dumps(dialog) + "\n" + json.dumps({**dialog, "id": "d2"}) + "\n")
    assert _cli("score", str(only_dialogs), "--scorer", "next-user-sentiment").returncode == 0


@pytest.mark.slow
def test_bench_prints_the_kind(data_dir) -> None:
    r = _cli("bench", "--data-dir", str(data_dir), "--dataset", "FD", "--scorer", "next-user-sentiment", "--allow-future",
             "--bootstrap", "200")
    assert r.returncode == 0, r.stderr
    assert "kind      uses-future (reads the user's turn after the rated response)\n" in r.stdout


@pytest.mark.slow
def test_bench_prints_a_supervised_kind(data_dir) -> None:
    """An ensemble whose weights are learned on the scored set (``--fit cv``) is benchmarked as supervised,
    with what else it reads."""
    r = _cli("bench", "--data-dir", str(data_dir), "--dataset", "TU", "--member", "scorer=length", "--member",
             "scorer=rouge-l", "--fit", "cv", "--limit", "40", "--bootstrap", "200")
    assert r.returncode == 0, r.stderr
    assert "(weights learned)" in r.stdout
    assert ("kind      supervised (weights learned on the scored set's own ratings, by cross-validation); also "
            "reference-based\n") in r.stdout
