"""``--batch`` through the CLI against tests/fault_server.py: the engine's pre-pass
(judge/engine/batch.py) sends the requests the cache lacks through the Batch API before a run sends
anything, then the run scores from the cache. A batch run's rows equal the synchronous run's (judge score;
a judge run grid with an ensemble, one batch for the whole run); a run killed while it waits and run again
creates exactly one batch (judge score and judge run); an expired batch's missing requests are resubmitted
once, and what is still missing fails its items (or goes one by one with --batch-fallback sync);
--batch-file / --batch-results round trip; what cannot be batched is refused before anything is sent;
the documented command runs as written."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.cli import main
from tests.fault_server import FaultServer, answer

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[1]
DIALOGUES = str(ROOT / "examples" / "dialogues.jsonl")
#: The provider's wait between looks at a batch, shortened (the fault server's batches take ~0.4 s).
POLL = ["--backend-option", "batch_poll=0.05"]


def score(srv: FaultServer, tmp: Path, *extra: str, cache: str = "c.sqlite") -> int:
    return main(["score", DIALOGUES, "--backend", "openai", "--model", "fault-model", "--base-url", srv.base_url,
                 "--cache-path", str(tmp / cache), "--no-progress", *extra])


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_batch_run_gives_the_rows_of_the_synchronous_run(tmp_path, capsys):
    with FaultServer() as srv:
        assert score(srv, tmp_path, "-o", str(tmp_path / "sync.jsonl"), cache="sync.sqlite") == 0
        sent = len(srv.requests)
        assert sent == 12
        assert score(srv, tmp_path, "--batch", *POLL, "-o", str(tmp_path / "batch.jsonl")) == 0
        assert len(srv.batches) == 1 and len(srv.requests) == sent  # nothing went one by one
        err = capsys.readouterr().err
        assert "judge: batch of fault-model: 12 requests the cache lacked, 12 answered through 1 batch(es), 0 failed, " \
               "0 not answered" in err
        assert "judge: cache: 12 hits, 0 misses" in err and "judge: Batch API usage: 12 requests answered" in err
        assert (tmp_path / "batch.jsonl").read_bytes() == (tmp_path / "sync.jsonl").read_bytes()
        meta = json.loads((tmp_path / "batch.meta.json").read_text())
        assert meta["usage"]["batch_requests"] == 12 and meta["usage"]["requests"] == 0
        assert len(list((tmp_path / "batches").glob("*.json"))) == 1  # judge score: the state beside the cache
        # run again: everything is in the cache, no batch, nothing sent
        assert score(srv, tmp_path, "--batch", *POLL, "-o", str(tmp_path / "again.jsonl")) == 0
        assert len(srv.batches) == 1 and len(srv.requests) == sent
        assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "sync.jsonl").read_bytes()


def test_an_ensembles_members_go_in_one_batch(tmp_path):
    members = ["--member", "prompt=yesno", "--member", "prompt=yesno,context=none", "--member", "scorer=length"]
    with FaultServer() as srv:
        assert score(srv, tmp_path, *members, "-o", str(tmp_path / "sync.jsonl"), cache="sync.sqlite") == 0
        sent = len(srv.requests)
        assert sent == 24  # two LLM members, twelve items
        assert score(srv, tmp_path, *members, "--batch", *POLL, "-o", str(tmp_path / "batch.jsonl")) == 0
        assert len(srv.batches) == 1 and len(srv.requests) == sent
        assert next(iter(srv.batches.values()))["request_counts"]["total"] == 24
    assert (tmp_path / "batch.jsonl").read_bytes() == (tmp_path / "sync.jsonl").read_bytes()


GRID = """
name = "grid"
limit = 4
datasets = ["DGR"]
output = "{out}"
[[methods]]
name = "yn"
prompt = "yesno"
backend = "openai"
model = "fault-model"
options = {{ base_url = "{url}"{extra} }}
generate = {{ cache_path = "{cache}" }}
[[methods]]
name = "rt"
prompt = "yesno"
context = "none"
backend = "openai"
model = "fault-model"
options = {{ base_url = "{url}"{extra} }}
generate = {{ cache_path = "{cache}" }}
[[methods]]
name = "mk"
prompt = "yesno"
backend = "mock"
generate = {{ cache_path = "{cache}" }}
[[methods]]
type = "ensemble"
name = "ens"
members = ["yn", "rt", "mk"]
"""


def grid(tmp: Path, srv: FaultServer, name: str, extra: str = "") -> Path:
    path = tmp / f"{name}.toml"
    path.write_text(GRID.format(out=tmp / name, url=srv.base_url, cache=tmp / f"{name}.sqlite", extra=extra))
    return path


def cells(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted((folder / "items").rglob("*.jsonl"))}


@pytest.mark.slow
def test_a_judge_run_grid_makes_one_batch_for_all_its_cells(tmp_path, data_dir, capsys):
    batch = ", batch = true, batch_poll = 0.05"
    with FaultServer() as srv:
        assert main(["run", str(grid(tmp_path, srv, "sync")), "--data-dir", str(data_dir), "--no-progress"]) == 0
        sent = len(srv.requests)
        assert sent == 2 * 4  # yn and rt on 4 items; the ensemble's members from the cache
        assert main(["run", str(grid(tmp_path, srv, "batch", batch)), "--data-dir", str(data_dir),
                     "--no-progress"]) == 0
        assert len(srv.batches) == 1 and len(srv.requests) == sent  # one submission for every cell, none one by one
        assert next(iter(srv.batches.values()))["request_counts"]["total"] == sent
        assert len(list((tmp_path / "batches").glob("*.json"))) == 1  # judge run too: the state beside the cache
        assert not (tmp_path / "batch" / "batches").exists()
        summary = json.loads((tmp_path / "batch" / "summary.json").read_text())
        assert summary["counters"]["batch_requests"] == sent and summary["counters"]["requests"] == 0
        got, expected = cells(tmp_path / "batch"), cells(tmp_path / "sync")
        assert len(got) == 4 and got == expected
        # the batch options only change how requests are sent: the folder resumes without them
        assert main(["run", str(grid(tmp_path, srv, "batch")), "--data-dir", str(data_dir), "--no-progress"]) == 0
        assert len(srv.batches) == 1 and len(srv.requests) == sent


KILL_WAIT_S = 0.3


def killed_then_rerun(srv: FaultServer, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Start ``python -m judge ARGS``, SIGKILL it once it has submitted its batch and waits, run it again to the
    end; returns the second run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "judge", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not srv.batches and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(KILL_WAIT_S)  # waiting for the batch, which runs for seconds
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert len(srv.batches) == 1 and next(iter(srv.batches.values()))["status"] != "completed"
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_judge_score_killed_while_waiting_and_run_again_creates_exactly_one_batch(tmp_path):
    with FaultServer(batch_run_s=1.0) as srv:
        args = ["score", DIALOGUES, "--backend", "openai", "--model", "fault-model", "--base-url", srv.base_url,
                "--cache-path", str(tmp_path / "c.sqlite"), "--batch", *POLL, "-o", str(tmp_path / "out.jsonl")]
        again = killed_then_rerun(srv, args, tmp_path)
        assert again.returncode == 0, again.stderr
        assert "attaching to 1 batch(es) submitted before (12 of the 12 requests)" in again.stderr
        assert len(srv.batches) == 1 and len(srv.requests) == 0  # one batch, nothing one by one
        assert all(r["error"] is None for r in rows(tmp_path / "out.jsonl"))


@pytest.mark.slow  # two `judge run` processes (~10 s)
def test_judge_run_killed_while_waiting_and_run_again_creates_exactly_one_batch(tmp_path, data_dir):
    with FaultServer(batch_run_s=1.0) as srv:
        config = grid(tmp_path, srv, "run", ", batch = true, batch_poll = 0.05")
        again = killed_then_rerun(srv, ["run", str(config), "--data-dir", str(data_dir), "--no-progress"], tmp_path)
        assert again.returncode == 0, again.stderr
        assert re.search(r"attaching to 1 batch\(es\) submitted before \(8 of the 8 requests\)", again.stderr)
        assert len(srv.batches) == 1 and len(srv.requests) == 0
        assert (tmp_path / "batches").is_dir() and not (tmp_path / "run" / "batches").exists()


@pytest.mark.slow
def test_an_expired_batch_is_resubmitted_once_and_what_is_still_missing_fails_its_items(tmp_path, capsys):
    with FaultServer() as srv:
        srv.expire_batches(1)  # half of the first batch expires: resubmitted once, then all answered
        assert score(srv, tmp_path, "--batch", *POLL, "-o", str(tmp_path / "once.jsonl")) == 0
        first, second = srv.batches.values()
        assert first["status"] == "expired" and second["request_counts"]["total"] == 6
        assert all(r["error"] is None for r in rows(tmp_path / "once.jsonl")) and not srv.requests
        capsys.readouterr()
        # the resubmission expires too: its missing items fail with the reason, nothing is sent one by one
        srv.expire_batches(2)
        assert score(srv, tmp_path, "--batch", *POLL, "-o", str(tmp_path / "twice.jsonl"), cache="c2.sqlite") == 3
        assert len(srv.batches) == 4 and not srv.requests
        failed = [r for r in rows(tmp_path / "twice.jsonl") if r["error"]]
        assert len(failed) == 3  # 6 of 12 answered, then 3 of the 6 again
        assert all(r["error"] == "not answered through the Batch API: its batch expired or was cancelled, and so was "
                   "the one that resubmitted it (--batch-fallback sync sends it one by one)" for r in failed)
        assert "3 not answered; their items fail with the reason" in capsys.readouterr().err
        # run again: only the three go, in a new batch (failures are never cached)
        assert score(srv, tmp_path, "--batch", *POLL, "-o", str(tmp_path / "rerun.jsonl"), cache="c2.sqlite") == 0
        assert len(srv.batches) == 5 and list(srv.batches.values())[-1]["request_counts"]["total"] == 3
        # --batch-fallback sync: nothing resubmitted, the expired half sent one by one
        srv.expire_batches(1)
        assert score(srv, tmp_path, "--batch", "--batch-fallback", "sync", *POLL, "-o", str(tmp_path / "sync.jsonl"),
                     cache="c3.sqlite") == 0
        assert len(srv.batches) == 6 and len(srv.requests) == 6
        assert rows(tmp_path / "sync.jsonl") == rows(tmp_path / "once.jsonl")


def test_batch_file_and_batch_results_round_trip(tmp_path, capsys):
    with FaultServer() as srv:
        assert score(srv, tmp_path, "-o", str(tmp_path / "sync.jsonl"), cache="sync.sqlite") == 0
        sent = len(srv.requests)
        assert score(srv, tmp_path, "--batch-file", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "x.jsonl")) == 0
        assert "judge: wrote 12 requests to " in capsys.readouterr().err
        assert not (tmp_path / "x.jsonl").exists() and len(srv.requests) == sent and not srv.batches
        lines = [json.loads(x) for x in (tmp_path / "in.jsonl").read_text().splitlines()]
        assert len(lines) == 12 and {x["url"] for x in lines} == {"/v1/chat/completions"}
        # another runner answers them (vllm run-batch's output format), in its own order, losing one
        out = [{"id": f"vllm-{i}", "custom_id": x["custom_id"], "error": None,
                "response": {"status_code": 200, "request_id": f"r{i}",
                             "body": answer(srv, x["body"]["messages"][-1]["content"], x["body"], True, True)}}
               for i, x in enumerate(lines[1:])]
        (tmp_path / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in reversed(out)))
        assert score(srv, tmp_path, "--batch-results", str(tmp_path / "out.jsonl"), "-o", str(tmp_path / "got.jsonl")) == 3
        got, expected = rows(tmp_path / "got.jsonl"), rows(tmp_path / "sync.jsonl")
        assert len(srv.requests) == sent  # the lost one failed its item, it was not sent
        lost = [g for g in got if g["error"]]
        assert len(lost) == 1 and lost[0]["error"].startswith(f"not answered in the batch results file {tmp_path}")
        assert [g for g in got if not g["error"]] == [e for e in expected if e["id"] != lost[0]["id"]]
        # --batch-fallback sync: the lost one goes to the server, the rest come from the cache
        assert score(srv, tmp_path, "--batch-results", str(tmp_path / "out.jsonl"), "--batch-fallback", "sync",
                     "-o", str(tmp_path / "all.jsonl")) == 0
        assert len(srv.requests) == sent + 1
        assert (tmp_path / "all.jsonl").read_bytes() == (tmp_path / "sync.jsonl").read_bytes()


class Killed(BaseException):
    """What a process killed while it waits leaves: its state file, its batch running, nothing read."""


def test_killed_then_rerun_with_a_limit_then_in_full_pays_each_prompt_once(tmp_path, monkeypatch):
    """Kill a --batch run while it waits, run it again with --limit 6, then in full: one batch, each of the 12
    prompts paid once (the rerun with the limit puts all 12 answers of the batch it reads in the cache)."""
    from judge.backends import openai_batch
    from tests.batch_queue import paid

    with FaultServer(batch_validate_s=0.01, batch_run_s=0.05, batch_finalize_s=0.01) as srv:
        def killed(seconds: float) -> None:
            raise Killed

        monkeypatch.setattr(openai_batch, "_nap", killed)
        with pytest.raises(Killed):
            score(srv, tmp_path, "--batch", *POLL, "-o", str(tmp_path / "killed.jsonl"))
        monkeypatch.undo()
        assert len(srv.batches) == 1
        assert score(srv, tmp_path, "--batch", *POLL, "--limit", "6", "-o", str(tmp_path / "six.jsonl")) == 0
        assert score(srv, tmp_path, "--batch", *POLL, "-o", str(tmp_path / "all.jsonl")) == 0
        assert len(srv.batches) == 1 and not srv.requests
        counts = paid(srv)
        assert len(counts) == 12 and set(counts.values()) == {1}
        assert [r["error"] for r in rows(tmp_path / "all.jsonl")] == [None] * 12


def test_two_processes_on_one_cache_with_an_expired_batch_pay_each_prompt_once(tmp_path):
    """Two runs on one cache and one state, the second started while the first waits for a batch that
    expires half done: one resubmission of the expired half, by whichever reads it first; the other attaches
    to it. Two batches, each prompt paid once, both runs answered in full."""
    import threading

    from judge.backends.openai_batch import fill_cache
    from tests.batch_queue import paid
    from tests.test_openai_batch import asks, items, judge_on

    its = items(12)
    # the batch runs long enough for the second run to load and start while it is pending, even on a loaded machine
    with FaultServer(batch_run_s=0.6) as srv:
        srv.expire_batches(1)
        reports: dict[str, object] = {}

        def run(name: str) -> None:
            judge = judge_on(srv, tmp_path / "c.sqlite")
            try:
                reports[name] = fill_cache(judge.backend, asks(judge, its), tmp_path / "state.json", poll_s=0.02,
                                           log=lambda m: None)
            finally:
                judge.backend.close()

        first = threading.Thread(target=run, args=("first",))
        first.start()
        while not srv.batches:
            time.sleep(0.01)
        second = threading.Thread(target=run, args=("second",))
        second.start()
        first.join(30)
        second.join(30)
        expired, again = srv.batches.values()
        assert expired["status"] == "expired" and again["request_counts"]["total"] == 6
        counts = paid(srv)
        assert len(counts) == 12 and set(counts.values()) == {1} and not srv.requests
        for name in ("first", "second"):
            report = reports[name]
            # answered in full: by its own pass, or found in the cache where the other run stored it first
            assert report.stored + report.hits == 12, name  # type: ignore[attr-defined]
            assert (report.failed, report.missing) == ({}, set()), name  # type: ignore[attr-defined]
        assert reports["first"].stored == 12  # type: ignore[attr-defined]


@pytest.mark.slow  # two `judge score` processes (~6 s)
def test_two_judge_score_processes_on_one_cache_with_an_expired_batch_pay_each_prompt_once(tmp_path):
    """The same as processes: two `judge score --batch` started at once on one cache, with a batch that
    expires half done."""
    from tests.batch_queue import paid

    with FaultServer(batch_run_s=2.0) as srv:
        srv.expire_batches(1)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}

        def start(name: str) -> subprocess.Popen:
            args = ["score", DIALOGUES, "--backend", "openai", "--model", "fault-model", "--base-url", srv.base_url,
                    "--cache-path", str(tmp_path / "c.sqlite"), "--batch", *POLL, "-o", str(tmp_path / f"{name}.jsonl")]
            return subprocess.Popen([sys.executable, "-m", "judge", *args], cwd=tmp_path, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        first, second = start("first"), start("second")  # at once: one submits, the other attaches
        errs = [p.communicate(timeout=120)[1] for p in (first, second)]
        assert [p.returncode for p in (first, second)] == [0, 0], errs
        # the other attaches to the first batch (or, started late, to its resubmission): never a third
        assert any(re.search(r"attaching to 1 batch\(es\) submitted before \((12|6) of the 12", e) for e in errs), errs
        assert len(srv.batches) == 2 and not srv.requests
        counts = paid(srv)
        assert len(counts) == 12 and set(counts.values()) == {1}
        assert rows(tmp_path / "first.jsonl") == rows(tmp_path / "second.jsonl")


def test_max_cost_bounds_every_batch_before_it_is_submitted(tmp_path, capsys):
    """A cap the up-front estimate passes but the batch's bound does not: the requests go in batches that fit
    what is left, each prompt in one batch and paid once, the spend the server's usage counts within the
    cap; what cannot fit fails with the reason, and a rerun with a higher cap goes on from the cache."""
    from judge.accounting.prices import load_prices
    from tests.batch_queue import paid, spend
    from tests.test_money import PRICES

    (tmp_path / "p.toml").write_text(PRICES)
    price = load_prices(tmp_path / "p.toml").get("fault-model")
    with FaultServer(batch_validate_s=0.01, batch_run_s=0.05, batch_finalize_s=0.01) as srv:
        assert score(srv, tmp_path, "--prices", str(tmp_path / "p.toml"), "--check", "--limit", "4") == 0
        out = capsys.readouterr().out
        sync, batch = (float(x) for x in re.search(r"~\$(\S+) synchronous, ~\$(\S+) through", out).groups())
        cap = round((sync + batch) / 2, 4)
        priced = ["--prices", str(tmp_path / "p.toml"), "--limit", "4", "--max-cost", str(cap)]
        assert score(srv, tmp_path, *priced) == 2 and not srv.requests  # the synchronous estimate is above it
        assert "is above --max-cost" in capsys.readouterr().err
        assert score(srv, tmp_path, *priced, "--batch", *POLL, "-o", str(tmp_path / "b.jsonl")) == 3
        err = capsys.readouterr().err
        assert not srv.requests and len(srv.batches) > 1  # split to fit what was left
        counts = paid(srv)
        assert set(counts.values()) == {1} and 0 < len(counts) < 4
        assert spend(srv, price) <= cap
        assert f"requests kept back: not scored: sending it could take the spend past --max-cost ${cap:.4f}" in err
        failed = [r for r in rows(tmp_path / "b.jsonl") if r["error"]]
        assert len(failed) == 4 - len(counts)
        assert all(r["error"].startswith("not scored: sending it could take the spend past --max-cost") for r in failed)
        # a higher cap: only what was kept back goes, in one batch
        before = len(srv.batches)
        priced[-1] = "10"
        assert score(srv, tmp_path, *priced, "--batch", *POLL, "-o", str(tmp_path / "all.jsonl")) == 0
        assert len(srv.batches) == before + 1 and set(paid(srv).values()) == {1} and len(paid(srv)) == 4


@pytest.mark.parametrize(("flags", "message"), [
    (["--backend", "mock", "--batch"], "field '--batch': backend 'mock' has no batch API"),
    (["--no-cache", "--batch"], "the batch's answers reach the run through the cache: drop --no-cache"),
    (["--batch", "--sampling-fallback", "3"], "field '--sampling-fallback': the Batch API reads log-probabilities only"),
    (["--batch-file", "a.jsonl", "--batch-results", "b.jsonl"], "give one of them"),
    (["--batch-fallback", "sync"], "field '--batch-fallback': says what becomes of requests a batch did not answer"),
])
def test_what_cannot_be_batched_is_refused_before_anything_is_sent(tmp_path, capsys, flags, message):
    with FaultServer() as srv:
        args = ["score", DIALOGUES, "--model", "fault-model", "--cache-path", str(tmp_path / "c.sqlite"), *flags]
        if "mock" not in flags:
            args += ["--backend", "openai", "--base-url", srv.base_url]
        assert main(args) == 2
        assert not srv.requests and not srv.batches and not srv.files
    assert message in capsys.readouterr().err


def test_a_served_judge_refuses_to_batch(capsys):
    assert main(["serve", "--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--batch",
                 "--port", "0"]) == 2
    assert "a served judge answers each request as it comes: it cannot wait for a provider's batch" in \
        capsys.readouterr().err


def test_two_models_in_one_batch_file_are_refused(tmp_path, data_dir, capsys):
    with FaultServer() as srv:
        config = grid(tmp_path, srv, "two", f', batch_file = "{tmp_path / "in.jsonl"}"')
        text = config.read_text().replace('model = "fault-model"\noptions', 'model = "other-model"\noptions', 1)
        config.write_text(text)
        assert main(["run", str(config), "--data-dir", str(data_dir), "--no-progress"]) == 2
        assert not srv.requests and not (tmp_path / "in.jsonl").exists() and not (tmp_path / "two").exists()
    assert "one batch file would hold the requests of several backends" in capsys.readouterr().err


def test_judge_bench_batches_beside_the_cache_without_a_results_folder(tmp_path, data_dir):
    with FaultServer() as srv:
        code = main(["bench", "DGR", "--data-dir", str(data_dir), "--limit", "5", "--backend", "openai",
                     "--model", "fault-model", "--base-url", srv.base_url, "--cache-path", str(tmp_path / "c.sqlite"),
                     "--batch", *POLL, "--no-progress"])
        assert code == 0 and len(srv.batches) == 1 and not srv.requests
    assert len(list((tmp_path / "batches").glob("*.json"))) == 1


def test_the_documented_batch_command_prints_the_documented_lines(tmp_path, monkeypatch, capsys):
    """docs/backends-api.md, "The Batch API": its command, run as written from an empty cache against the fault
    server (OPENAI_BASE_URL; the provider's wait between looks shortened), prints the documented lines."""
    section = (ROOT / "docs" / "backends-api.md").read_text().split("## The Batch API", 1)[1].split("\n## ", 1)[0]
    shown = re.search(r"```\n\$ (judge score [^\n]*)\n(.*?)```", section, re.S)
    assert shown, "the section shows a command and what it prints"
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.chdir(tmp_path)
    with FaultServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        args = [DIALOGUES if a == "examples/dialogues.jsonl" else a for a in shown[1].split()[1:]]
        assert main([*args, *POLL]) == 0
        assert len(srv.batches) == 1 and not srv.requests
    printed = capsys.readouterr().err.splitlines()
    exact = [line for line in shown[2].splitlines() if "batch_" not in line and line != "..."]
    assert len(exact) == 5 and all(line in printed for line in exact), (exact, printed)
    assert (tmp_path / "scores.jsonl").exists()
