"""Heads: ``judge fit`` learns a linear map from the judge model's hidden state to a score.

The fitting is checked on synthetic rows whose answer is known (a target that is a linear function of
the vector must be found; folds never split a conversation or a group of sets); ``judge fit`` runs end to
end on the mock backend (hidden states of 16 values), and once with the real SmolLM2 (slow suite).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from judge.backends.mock import MockBackend
from judge.cli import main
from judge.core.config import GenerateConfig
from judge.core.errors import InputError
from judge.data.items import conversation_of
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import DATASETS
from judge.datasets.identity import families
from judge.heads import read_head
from judge.heads.fit import Rows, choose_alpha, cross_validate, fit, folds, predict, rank_target
from judge.heads.head import Head, prompt_hash
from judge.heads.train import RatedSet, training_set
from judge.prompts.templates import get_prompt

ROOT = Path(__file__).resolve().parents[1]


def _rows(n_sets: int = 3, per_set: int = 60, dim: int = 8, noise: float = 0.1, seed: int = 0) -> Rows:
    """Rows whose ratings are a linear function of the vector plus noise, in conversations of 3 items."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=dim)
    x = rng.normal(size=(n_sets * per_set, dim))
    human = x @ w + noise * rng.normal(size=len(x))
    dataset = tuple(f"set{i // per_set}" for i in range(len(x)))
    conversation = tuple(f"{dataset[i]}:c{i // 3}" for i in range(len(x)))
    return Rows(x, human, dataset, dataset, conversation)


def test_rank_target_ranks_within_each_set_with_ties_averaged():
    human = np.array([1.0, 3.0, 2.0, 10.0, 10.0, 0.0, 7.0])
    y = rank_target(human, ["a", "a", "a", "b", "b", "b", "c"])
    assert y.tolist() == [0.0, 1.0, 0.5, 0.75, 0.75, 0.0, 0.5]


def test_a_linear_target_is_found_and_held_out_sets_are_predicted():
    rows = _rows()
    cv = cross_validate(rows)
    assert cv["how"] == "leave one group of sets out"
    assert cv["spearman"] > 0.95 and set(cv["per_set"]) == {"set0", "set1", "set2"}
    f = fit(rows)
    fresh = _rows(seed=0, n_sets=1)  # same weights (seed), its own draws are the first set's again
    rho = np.corrcoef(predict(f, fresh.x), fresh.human)[0, 1]
    assert rho > 0.95


def test_noise_alone_gives_no_held_out_agreement_and_strong_regularization():
    rng = np.random.default_rng(1)
    rows = _rows(noise=0.0)
    rows = Rows(rows.x, rng.normal(size=len(rows)), rows.dataset, rows.family, rows.conversation)
    assert abs(cross_validate(rows)["spearman"]) < 0.2


def test_folds_never_split_a_conversation_or_a_group_of_sets():
    one = _rows(n_sets=1)
    for train, held in folds(one):
        assert not {one.conversation[i] for i in train} & {one.conversation[i] for i in held}
    assert len(folds(one)) == 5
    several = _rows(n_sets=3)
    fam = np.array(several.family)
    assert [set(fam[held]) for _, held in folds(several)] == [{"set0"}, {"set1"}, {"set2"}]


def test_the_strength_is_chosen_inside_the_training_rows():
    rows = _rows(noise=3.0, per_set=40)
    alpha = choose_alpha(rows, (0.01, 1e6))
    assert alpha in (0.01, 1e6)
    assert choose_alpha(_rows(noise=0.0), (0.01, 1e6)) == 0.01  # no noise: the weak one predicts best


def _fit(tmp_path: Path, *data: str, extra: tuple[str, ...] = (), data_dir: Path | None = None) -> subprocess.CompletedProcess:
    """``judge fit`` on the mock backend, in this process (the CLI's own entry point; no interpreter start)."""
    args = ["fit", *data, "-o", str(tmp_path / "head.json"), "--backend", "mock", "--prompt", "yesno-criteria",
            "--no-progress", *extra]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    return _in_process(args)


def _in_process(args: list[str]) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_judge_fit_on_dev_halves_writes_a_head_bound_to_its_model_and_prompt(tmp_path, data_dir):
    proc = _fit(tmp_path, "EG", "FD", "FT", extra=("--split", "dev"), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    head = read_head(tmp_path / "head.json")
    assert head.model == "mock" and head.prompt == "yesno-criteria" and head.dim == 16 and not head.with_answer
    assert head.prompt_sha256 == prompt_hash(get_prompt("yesno-criteria"))
    names = [t.name for t in head.trained_on]
    assert names == ["empathetic-grade", "fed-dial", "fed-turn"] and {t.split for t in head.trained_on} == {"dev"}
    assert all(t.items > 0 and 0 < t.conversations <= t.items for t in head.trained_on)
    # FED-Turn's turns come from FED-Dial's dialogs: the two are left out together.
    assert head.cv["how"] == "leave one group of sets out"
    assert set(head.cv["per_set"]) == set(names) and len(head.cv["alphas_chosen"]) == 2
    assert "cross-validated (leave one group of sets out): mean Spearman" in proc.stdout
    for name in names:
        assert name in proc.stdout


def test_a_head_with_the_answer_reads_one_more_value_and_the_second_fit_reads_the_cache(tmp_path, data_dir):
    first = _fit(tmp_path, "EG", extra=("--split", "dev"), data_dir=data_dir)
    assert first.returncode == 0, first.stderr
    again = _fit(tmp_path, "EG", extra=("--split", "dev", "--with-answer"), data_dir=data_dir)
    assert again.returncode == 0, again.stderr
    assert " 0 misses" in again.stderr, again.stderr
    head = read_head(tmp_path / "head.json")
    assert head.with_answer and len(head.weights) == head.dim + 1 == 17
    assert head.cv["how"] == "5 folds grouped by conversation"


def test_without_each_writes_one_head_per_set_that_never_saw_it_or_its_conversations(tmp_path, data_dir):
    folder = tmp_path / "each"
    proc = _fit(tmp_path, "EG", "FD", "FT", extra=("--split", "dev", "--without-each", str(folder)), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["empathetic-grade.json", "fed-dial.json", "fed-turn.json"]
    learned = {p.stem: [t.name for t in read_head(p).trained_on] for p in folder.iterdir()}
    # FED-Turn's turns are cut from FED-Dial's dialogs: each is left out with the other.
    assert learned == {"empathetic-grade": ["fed-dial", "fed-turn"], "fed-dial": ["empathetic-grade"],
                       "fed-turn": ["empathetic-grade"]}
    assert (tmp_path / "head.json").is_file()  # -o: the head on every set, as well


def _readme_fit_commands() -> list[str]:
    section = (ROOT / "docs" / "heads.md").read_text(encoding="utf-8").split("\n## Try it\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("judge fit ")]


def test_the_readme_commands_fit_heads(tmp_path, data_dir):
    """As written, on the mock backend (the slow test below runs the first with SmolLM2); outputs go to a
    temporary folder."""
    commands = _readme_fit_commands()
    assert len(commands) == 2
    for command in commands:
        args = shlex.split(command.replace("../shared/data", str(data_dir)))
        args = [str(tmp_path / a) if a in ("my-head.json", "heads/") else a for a in args]
        proc = _in_process([*args[1:], "--backend", "mock", "--no-progress"])
        assert proc.returncode == 0, (command, proc.stderr)
    assert read_head(tmp_path / "my-head.json").trained_on[0].name == "dialogues"
    assert sorted(p.stem for p in (tmp_path / "heads").iterdir()) == ["empathetic-grade", "fed-dial", "fed-turn"]


@pytest.mark.slow  # reads SmolLM2's vocabulary and calibrates its rate
def test_check_prints_the_cost_of_each_set_and_fits_nothing(tmp_path, data_dir):
    proc = subprocess.run([sys.executable, "-m", "judge", "fit", "DZ", "FD", "--data-dir", str(data_dir), "--split",
                           "dev", "--prompt", "yesno-criteria", "--check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["cell", "items", "cached"]
    assert [line.split()[0] for line in lines[1:3]] == ["dailydialog-zhao", "fed-dial"]
    assert lines[-1].startswith("total: ") and "prompt tokens" in lines[-1]
    assert not list(tmp_path.iterdir())


def test_one_set_under_two_names_and_bad_strengths_are_refused(tmp_path, data_dir, turn_examples):
    """By content: the same file twice, a copy under another name, a registered set beside its release file
    given by path (before the guards read content only one path twice was caught)."""
    copy = tmp_path / "copy.jsonl"
    copy.write_text(turn_examples.read_text())
    for data in ((str(turn_examples), str(turn_examples)), (str(turn_examples), str(copy)),
                 ("FD", str(data_dir / "fed" / "fed_data.json"))):
        proc = _fit(tmp_path, *data, data_dir=data_dir)
        assert proc.returncode == 2 and "of the items of" in proc.stderr and "by content" in proc.stderr, proc.stderr
    proc = _fit(tmp_path, str(turn_examples), extra=("--alphas", "1,-2"))
    assert proc.returncode == 2 and "--alphas" in proc.stderr and "positive" in proc.stderr, proc.stderr
    assert not (tmp_path / "head.json").exists()


def test_a_head_is_refused_on_another_prompt_or_model(tmp_path, data_dir):
    assert _fit(tmp_path, "EG", extra=("--split", "dev"), data_dir=data_dir).returncode == 0
    head = read_head(tmp_path / "head.json")
    head.check_compatible(_mock(), get_prompt("yesno-criteria"))
    with pytest.raises(InputError, match="prompt 'yesno-criteria'"):
        head.check_compatible(_mock(), get_prompt("yesno"))
    with pytest.raises(InputError, match="backend 'mock'"):
        head.check_compatible(_mock(_Renamed), get_prompt("yesno-criteria"))


class _Renamed(MockBackend):
    name = "other"


def _mock(cls: type[MockBackend] = MockBackend) -> MockBackend:
    return cls(None, GenerateConfig())


def test_a_broken_head_file_names_the_field(tmp_path):
    good = {"format": "judge-head", "version": 1, "dim": 2, "with_answer": False, "mean": [0, 0], "scale": [1, 1],
            "weights": [1, 2], "bias": 0, "alpha": 1, "model": "m", "backend": "b", "settings": {}, "prompt": "p",
            "prompt_sha256": "x", "trained_on": [], "cv": {}}
    path = tmp_path / "h.json"
    path.write_text(json.dumps(good))
    assert read_head(path).predict(np.array([[1.0, 1.0]])).tolist() == [3.0]
    for key, value, field in (("weights", [1], "weights"), ("scale", [1, 0], "scale"), ("version", 9, "version"),
                              ("dim", "2", "dim")):
        path.write_text(json.dumps({**good, key: value}))
        with pytest.raises(InputError) as err:
            read_head(path)
        assert err.value.field == field and err.value.file == str(path)
    path.write_text("{")
    with pytest.raises(InputError, match="not a readable head file"):
        read_head(path)


@pytest.mark.slow
def test_judge_fit_with_the_real_model_reads_hidden_states_and_fills_the_answer_cache(tmp_path):
    """The README's first command with SmolLM2 via llama.cpp: 576 values per item, and the plain prompt's
    answers come from the same pass (scoring the file afterwards is all cache hits)."""
    head_path = tmp_path / "my-head.json"
    args = [str(head_path) if a == "my-head.json" else a for a in shlex.split(_readme_fit_commands()[0])]
    proc = subprocess.run([sys.executable, "-m", *args, "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    head = read_head(head_path)
    assert head.dim == 576 and head.backend == "llamacpp" and head.settings["sha256"]
    score = subprocess.run([sys.executable, "-m", "judge", "score", "examples/dialogues.jsonl", "--prompt", "yesno-criteria",
                            "--no-progress", "-o", str(tmp_path / "s.jsonl")], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
    assert score.returncode == 0 and " 0 misses" in score.stderr, score.stderr


# -- the head method type: judge run, judge score, judge serve ------------------------------------------

def _heads_without_each(tmp_path: Path, data_dir: Path, *sets: str) -> Path:
    folder = tmp_path / "heads"
    proc = _fit(tmp_path, *sets, extra=("--split", "dev", "--without-each", str(folder)), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    return folder


def _config(tmp_path: Path, data_dir: Path, head: str, datasets: str) -> Path:
    path = tmp_path / "heads.toml"
    path.write_text(f"""name = "heads"
data_dir = "{data_dir}"
output = "{tmp_path / 'results'}"
datasets = [{datasets}]
qualities = ["overall"]
split = "test"
limit = 12

[[methods]]
name = "criteria"
prompt = "yesno-criteria"
backend = "mock"

[[methods]]
name = "criteria-head"
type = "head"
prompt = "yesno-criteria"
head = "{head}"
backend = "mock"
""")
    return path


def test_judge_run_scores_each_set_with_the_head_that_never_saw_it(tmp_path, data_dir):
    folder = _heads_without_each(tmp_path, data_dir, "EG", "FD", "FT")
    config = _config(tmp_path, data_dir, f"{folder}/{{dataset}}.json", '"EG", "FT"')
    proc = _in_process(["run", str(config), "--no-progress"])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "results" / "summary.json").read_text())
    rows = {(r["method"], r["dataset"]): r for r in summary["results"]}
    assert {("criteria-head", "empathetic-grade"), ("criteria-head", "fed-turn")} <= set(rows)
    assert all(rows[("criteria-head", d)]["n"] == 12 and rows[("criteria-head", d)]["n_failed"] == 0
               for d in ("empathetic-grade", "fed-turn"))
    board = (tmp_path / "results" / "leaderboard.md").read_text()
    free = board.split("## Reference-free", 1)[1].split("\n## ", 1)[0] if "## Reference-free" in board else board
    assert "| criteria-head |" in free  # it reads what its prompt reads: reference-free
    heads = board.split("## Heads", 1)[1]
    ft = next(line for line in heads.splitlines() if line.startswith("| criteria-head | fed-turn |"))
    assert "| fed-turn.json | empathetic-grade:dev (" in ft and "fed-dial" not in ft, ft  # FT's head never saw FED


def test_a_head_on_a_set_it_learned_from_or_shares_conversations_with_is_refused(tmp_path, data_dir):
    assert _fit(tmp_path, "FD", extra=("--split", "dev"), data_dir=data_dir).returncode == 0
    config = _config(tmp_path, data_dir, str(tmp_path / "head.json"), '"FT"')
    proc = _in_process(["run", str(config), "--no-progress"])
    assert proc.returncode == 2, proc.stdout
    # It learned from FED-Dial's dev half; FED-Turn's test items are conversations of FED-Dial's test half: the
    # head refuses the whole set it saw, by content, saying how much of the scored data it holds.
    assert "the head learned from fed-dial (dev), which holds 12 of the 12 conversations" in proc.stderr, proc.stderr
    assert "(12 of 12 items of fed-turn)" in proc.stderr, proc.stderr
    assert not (tmp_path / "results" / "summary.json").exists()


def test_judge_score_and_serve_give_the_head_s_scores(tmp_path, data_dir, turn_examples):
    from tests.test_serve import call, start_server

    assert _fit(tmp_path, "EG", extra=("--split", "dev"), data_dir=data_dir).returncode == 0
    head = str(tmp_path / "head.json")
    args = ("--backend", "mock", "--prompt", "yesno-criteria", "--head", head)
    out = tmp_path / "scores.jsonl"
    proc = _in_process(["score", str(turn_examples), "-o", str(out), *args])
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["kind"]["kind"] == "reference-free" and meta["scorer"]["method"] == "head"
    assert meta["scorer"]["trained_on"] == ["empathetic-grade:dev"]
    plain = _in_process(["score", str(turn_examples), "--backend", "mock", "--prompt", "yesno-criteria", "--format",
                         "jsonl"])
    answers = [json.loads(line)["label_probs"] for line in plain.stdout.splitlines()]
    assert [r["label_probs"] for r in rows] == answers  # the same prompt read, the same answers
    assert [r["score"] for r in rows] != [None] * len(rows)
    # judge bench prints a head's summary (it once died in the summary on a key a head does not have).
    bench = _in_process(["bench", str(turn_examples), "--results", str(tmp_path / "bench"), *args])
    assert bench.returncode == 0, bench.stderr
    assert "method head-head: prompt yesno-criteria, model " in bench.stdout and f"(mock), head {head}" in \
        bench.stdout and "spearman" in bench.stdout, bench.stdout
    srv = start_server(tmp_path, *args)
    try:
        record = json.loads(turn_examples.read_text().splitlines()[0])
        status, body = call(srv, "POST", "/v1/score", record)
        assert status == 200, body
        assert json.loads(body)["score"] == pytest.approx(rows[0]["score"], abs=1e-6)
        status, body = call(srv, "GET", "/v1/info")
        assert json.loads(body)["kind"]["kind"] == "reference-free"
    finally:
        srv.stop()


def test_a_head_written_before_fingerprints_is_refused_until_stamped(tmp_path, data_dir, turn_examples):
    """A version 1 head file does not record its training conversations: nothing could keep it off them, so it
    scores nothing until ``judge fit ... --stamp`` records them from the sets it learned from (its weights stay);
    other sets than those it learned from are refused."""
    assert _fit(tmp_path, "EG", extra=("--split", "dev"), data_dir=data_dir).returncode == 0
    path = tmp_path / "head.json"
    fitted = json.loads(path.read_text())
    old = {**fitted, "version": 1, "trained_on": [{k: v for k, v in t.items() if k != "conversation_fingerprints"}
                                                  for t in fitted["trained_on"]]}
    path.write_text(json.dumps(old, indent=1) + "\n")
    score = ["score", str(turn_examples), "--backend", "mock", "--prompt", "yesno-criteria", "--head", str(path),
             "--format", "jsonl"]
    proc = _in_process(score)
    assert proc.returncode == 2 and "--stamp" in proc.stderr, proc.stderr
    wrong = _in_process(["fit", "FD", "--split", "dev", "--data-dir", str(data_dir), "--stamp", str(path)])
    assert wrong.returncode == 2 and "learned from empathetic-grade, which is not among the sets given" in wrong.stderr
    whole = _in_process(["fit", "EG", "--data-dir", str(data_dir), "--stamp", str(path)])
    assert whole.returncode == 2 and "empathetic-grade's relevance on dev" in whole.stderr, whole.stderr
    proc = _in_process(["fit", "EG", "--split", "dev", "--data-dir", str(data_dir), "--stamp", str(path)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(path.read_text()) == fitted  # the same record a fit writes; the weights untouched
    assert _in_process(score).returncode == 0


@pytest.mark.slow
def test_the_readme_commands_choosing_a_judge_on_your_own_data(capsys, fixed_rate):
    """"Which judge on your own data": each `judge bench` line as written, on the bundled rated examples in
    place of ``my_rated.jsonl``, with ``--check`` (the prompts built and counted on the 1.5B's own tokenizer,
    the head bound to its model and prompt; nothing scored). The head's real scoring is test_presets.py's."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n### Which judge on your own data\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0] for line in block.splitlines() if line.startswith("judge bench ")]
    assert len(commands) == 3
    examples = str(ROOT / "examples" / "dialogues.jsonl")
    halves = {}
    for command in commands:
        args = [examples if a == "my_rated.jsonl" else a for a in shlex.split(command)]
        assert main([*args[1:], "--check"]) == 0, command
        out = capsys.readouterr().out
        total = re.search(r"^total: (\d+) items, [\d,]+ prompt tokens", out, re.M)
        assert total, out
        halves[args[args.index("--split") + 1]] = int(total[1])
    assert halves["dev"] + halves["test"] == len(Path(examples).read_text().splitlines())  # the two halves, whole


@pytest.mark.slow  # four sets fitted and two runs refused: a few seconds (half a minute building the conversation index)
def test_heads_with_the_new_rated_families_refuse_them_and_leave_out_the_sets_sharing_a_conversation(tmp_path, data_dir):
    """Round 11's recipe adds Reliable-Eval and PredictiveEngagement to training (docs/journal.md): a head that
    learned from them refuses their conversations, and a DailyDialog set's head never learns from PED, whose
    queries are windows of DailyDialog dialogues."""
    folder = tmp_path / "each"
    proc = _fit(tmp_path, "DGR", "PED", "PEC", "REI",
                extra=("--split", "dev", "--without-each", str(folder)), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    learned = {p.stem: [t.name for t in read_head(p).trained_on] for p in folder.iterdir()}
    assert "engagement-dailydialog" not in learned["dailydialog-grade"], learned
    assert "dailydialog-grade" not in learned["engagement-dailydialog"], learned
    assert all(name not in sets and sets for name, sets in learned.items()), learned
    for name, abbrev in (("reliable-eval-ice", "REI"), ("engagement-convai", "PEC")):
        config = _config(tmp_path, data_dir, str(tmp_path / "head.json"), f'"{abbrev}"').read_text()
        config = config.replace('qualities = ["overall"]', "")
        path = tmp_path / f"{abbrev}.toml"
        path.write_text(config)
        refused = _in_process(["run", str(path), "--no-progress"])
        assert refused.returncode == 2, refused.stdout
        assert f"the head learned from {name} (dev)" in refused.stderr, refused.stderr


def test_convai_turns_are_no_family_of_the_dailydialog_sets_and_no_head_of_them_refuses_them(data_dir):
    """PredictiveEngagement's ConvAI turns (PEC) share no conversation with the DailyDialog sets; its DailyDialog
    turns (PED) do (DGR's among them). One ConvAI query reads as a DailyDialog one ("What do you mean ?") and
    has that conversation's name by its text: the registry's corpora decide that it is not that conversation,
    for judge fit's families and for a head's refusal alike."""
    sets = {n: load_benchmark(n, data_dir) for n in ("engagement-convai", "engagement-dailydialog", "dailydialog-grade")}
    names = {n: {conversation_of(it) for it in items} for n, items in sets.items()}
    assert len(names["engagement-convai"] & names["engagement-dailydialog"]) == 1  # the name two corpora share
    assert families(sets) == {"engagement-convai": "engagement-convai", "engagement-dailydialog": "engagement-dailydialog",
                              "dailydialog-grade": "engagement-dailydialog"}
    ped = sets["engagement-dailydialog"]
    rated = RatedSet("engagement-dailydialog", DATASETS["engagement-dailydialog"].quality("engagement"), tuple(ped),
                     "engagement-dailydialog", conversations=frozenset(names["engagement-dailydialog"]))
    head = Head("mock", "mock", {}, "yesno-criteria", "", None, 1, False, (0.0,), (1.0,), (1.0,), 0.0, 1.0,
                (training_set(rated, len(ped)),))
    head.check_not_trained_on(sets["engagement-convai"])
    with pytest.raises(InputError, match=r"learned from engagement-dailydialog .* of dailydialog-grade\)"):
        head.check_not_trained_on(sets["dailydialog-grade"])
    # A user's copy of the ConvAI turns is no registered set: its content decides, and its one shared name is refused.
    copy = [replace(it, dataset="my-copy") for it in sets["engagement-convai"]]
    with pytest.raises(InputError, match=r"holds 1 of the 245 conversations .*\(1 of 297 items of my-copy\)"):
        head.check_not_trained_on(copy)
