"""What `judge score` shows a person at a terminal (a table and a summary), what it writes to a pipe
or a file (JSONL, unchanged), and the progress bar with its ETA on stderr of `judge score`, `judge
bench` and `judge run` (only on a terminal, never with --no-progress).

Terminals are real pseudo-terminals (the `pty` module); the model is the embedded SmolLM2.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from judge.cli.score_table import top_label
from judge.engine import PROMPT_KEYS, ROW_KEYS
from judge.harness.summary import cell_stats
from judge.records.rows import Row
from judge.report.table import p_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = "examples/dialogues.jsonl"
#: tqdm's progress field: items done of the total, [elapsed<time left (the ETA), rate].
ETA = re.compile(r"\d+/(\d+) \[\d\d:\d\d<\d\d:\d\d, ")


def _judge(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`judge ...` with stdout and stderr piped (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _judge_on_terminal(*args: str, stdout_tty: bool = True, timeout: float = 600) -> tuple[int, str, str]:
    """`judge ...` with stderr (and stdout unless told) on pseudo-terminals: (exit code, stdout, stderr)."""
    masters, slaves = [], []
    for _ in range(2 if stdout_tty else 1):
        m, s = pty.openpty()
        fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # 40 rows, 120 columns, as a window has
        masters.append(m)
        slaves.append(s)
    err_slave = slaves[-1]
    out_slave = slaves[0] if stdout_tty else subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-m", "judge", *args], cwd=ROOT, stdout=out_slave, stderr=err_slave,
                            stdin=subprocess.DEVNULL)
    for s in slaves:
        os.close(s)
    chunks: dict[int, bytearray] = {m: bytearray() for m in masters}
    piped = b""
    open_fds = list(masters)
    while open_fds:  # read until every terminal is closed by the child (EIO on Linux)
        ready, _, _ = select.select(open_fds, [], [], timeout)
        if not ready:
            proc.kill()
            raise TimeoutError(" ".join(args))
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if data:
                chunks[fd] += data
            else:
                open_fds.remove(fd)
    if not stdout_tty:
        assert proc.stdout is not None
        piped = proc.stdout.read()
    code = proc.wait(timeout=timeout)
    for m in masters:
        os.close(m)
    out = chunks[masters[0]] if stdout_tty else bytearray(piped)
    # A terminal turns "\n" into "\r\n".
    return code, out.decode().replace("\r\n", "\n"), chunks[masters[-1]].decode()


@pytest.fixture(scope="module")
def piped(tmp_path_factory) -> dict[str, object]:
    """The examples scored once with stdout piped (JSONL), and the run's private cache."""
    tmp = tmp_path_factory.mktemp("score-out")
    cache = str(tmp / "cache.sqlite")
    proc = _judge("score", EXAMPLES, "--cache-path", cache)
    assert proc.returncode == 0, proc.stderr
    return {"cache": cache, "stdout": proc.stdout, "stderr": proc.stderr, "tmp": tmp}


@pytest.mark.slow
def test_jsonl_when_piped_is_unchanged(piped) -> None:
    """Piped stdout is JSONL, byte for byte what --format jsonl and -o write; stderr has no progress bar."""
    rows = [json.loads(line) for line in str(piped["stdout"]).splitlines()]
    assert len(rows) == 12 and all(tuple(r) == ROW_KEYS + PROMPT_KEYS for r in rows)
    assert "scoring" not in str(piped["stderr"]) and "\r" not in str(piped["stderr"])
    forced = _judge("score", EXAMPLES, "--cache-path", str(piped["cache"]), "--format", "jsonl")
    assert forced.returncode == 0 and forced.stdout == piped["stdout"]
    out = Path(str(piped["tmp"])) / "scores.jsonl"
    written = _judge("score", EXAMPLES, "--cache-path", str(piped["cache"]), "-o", str(out))
    assert written.returncode == 0 and written.stdout == ""
    assert out.read_text() == piped["stdout"]


@pytest.mark.slow
def test_terminal_gets_a_table_a_summary_and_a_progress_bar(piped) -> None:
    """On a terminal: one table line per item agreeing with the JSONL rows (score, most likely label,
    human rating), then n / failures / mean and Spearman with its CI over conversations; the bar with
    its ETA goes to stderr."""
    rows = [json.loads(line) for line in str(piped["stdout"]).splitlines()]
    code, out, err = _judge_on_terminal("score", EXAMPLES, "--cache-path", str(piped["cache"]))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["id", "score", "label", "(p)", "human"]
    for row, line in zip(rows, lines[1:13], strict=True):
        assert line.split()[:2] == [row["id"], f"{row['score']:.3f}"]
        assert top_label(row["label_probs"]) in line and line.split()[-1] == f"{row['human']:g}"
    assert lines[13] == ""
    mean = sum(r["score"] for r in rows) / len(rows)
    assert lines[14] == f"items     12 scored, 0 failed; mean score {mean:.3f} (quality overall)"
    cell = cell_stats([Row.from_dict(r) for r in rows], 1000, 0)
    sp, ci = cell.spearman, cell.ci
    assert lines[15].startswith(f"spearman  {sp.value:.3f} with the human ratings  p=")
    # Significance is the conversation bootstrap's (as in run and bench), its floor printed as "< 1/n_boot".
    assert f"(item-level), bootstrap p {p_text(ci.p, ci.n_boot, ci.n_degenerate)}  n=" in lines[15]
    assert ("(not significant, bootstrap p >= 0.05)" in lines[15]) == (ci.p >= 0.05)
    assert f"n={sp.n}  95% CI [{ci.low:.3f}, {ci.high:.3f}]" in lines[15]
    assert f"of {ci.n_units} conversations" in lines[15] and ci.n_units < 12  # grouped: fewer units than items
    assert ETA.search(err) and "scoring" in err
    # Forced, the same table reaches a pipe; --no-progress keeps the terminal's stderr free of the bar.
    forced = _judge("score", EXAMPLES, "--cache-path", str(piped["cache"]), "--format", "table")
    assert forced.returncode == 0 and forced.stdout == out
    code, _, err = _judge_on_terminal("score", EXAMPLES, "--cache-path", str(piped["cache"]), "--no-progress")
    assert code == 0 and not ETA.search(err) and "scoring" not in err


def test_table_without_human_ratings_has_no_human_column_or_correlation(piped, tmp_path) -> None:
    unrated = tmp_path / "unrated.jsonl"
    lines = [json.loads(line) for line in (ROOT / EXAMPLES).read_text().splitlines()[:3]]
    unrated.write_text("".join(json.dumps({k: v for k, v in d.items() if k not in ("scores", "scales")}) + "\n"
                               for d in lines))
    proc = _judge("score", str(unrated), "--cache-path", str(piped["cache"]), "--format", "table")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].split() == ["id", "score", "label", "(p)"] and len(out) == 6
    assert out[5].startswith("items     3 scored, 0 failed; mean score ") and "spearman" not in proc.stdout


@pytest.mark.slow
def test_bench_and_run_show_progress_only_on_a_terminal(tmp_path, data_dir) -> None:
    """`judge bench` (a one-cell run) and `judge run`: the bar with its ETA on a terminal's stderr; none
    with --no-progress, none when stderr is piped. A model-free scorer keeps it quick."""
    bench = ("bench", EXAMPLES, "--quality", "overall", "--scorer", "length")
    code, out, err = _judge_on_terminal(*bench, stdout_tty=False)
    assert code == 0 and "spearman" in out and ETA.search(err)
    code, _, err = _judge_on_terminal(*bench, "--no-progress", stdout_tty=False)
    assert code == 0 and not ETA.search(err)
    assert not ETA.search(_judge(*bench).stderr)
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'name = "progress"\ndata_dir = "{data_dir}"\noutput = "{tmp_path / "res"}"\ndatasets = ["FT"]\n'
                   'qualities = ["Overall"]\nlimit = 6\n[[methods]]\ntype = "classic"\nscorer = "length"\n')
    code, _, err = _judge_on_terminal("run", str(cfg), stdout_tty=False)
    assert code == 0, err
    assert (match := ETA.search(err)) and match.group(1) == "6"
    code, _, err = _judge_on_terminal("run", str(cfg), "-o", str(tmp_path / "res2"), "--no-progress", stdout_tty=False)
    assert code == 0 and not ETA.search(err)
    piped_run = _judge("run", str(cfg), "-o", str(tmp_path / "res3"))
    assert piped_run.returncode == 0 and not ETA.search(piped_run.stderr)
