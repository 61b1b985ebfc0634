"""``batch_kill`` benchmark: a ``judge score --batch`` run killed twice while it waits creates exactly one batch.

A child process runs ``judge score ITEMS --backend openai --batch -o OUT`` (the yes/no prompt on ``--items``
synthetic turns written as a JSONL file) against the local fault server (tests/fault_server.py), whose
batches take ``--batch-seconds`` to run. The child is SIGKILLed twice while it waits for its batch (each time
after its second progress line of a batch still running), then run a third time to the end. Printed: the
batches the server was asked to create (the target is 1), the requests it answered one by one (0), the rows
of the third pass without an error, what its cache line says, and each pass's wall time against a run never
killed, measured in the same run (the baseline).

    python benchmarks/batch_kill.py                    # 2,000 items, batches of 10 s
    python benchmarks/batch_kill.py --items 200 --batch-seconds 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fault_server import FaultServer


def write_items(path: Path, n: int) -> None:
    """``n`` synthetic turns in the users' JSONL format (docs/data-format.md)."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"b{i}", "context": [{"speaker": "user",
                                                            "text": f"Question {i}: any tips for learning chess?"}],
                                "response": f"Answer {i}: play a few short games every day and review them."}) + "\n")


def child(srv: FaultServer, folder: Path, items: Path) -> list[str]:
    """The CLI run: the batch state goes beside its cache, the rows to ``out.jsonl``."""
    return [sys.executable, "-m", "judge", "score", str(items), "--backend", "openai", "--model", "fault-model",
            "--base-url", srv.base_url, "--cache-path", str(folder / "cache.sqlite"), "--batch",
            "--backend-option", "batch_poll=0.1", "-o", str(folder / "out.jsonl"), "--no-progress"]


def killed_pass(srv: FaultServer, folder: Path, items: Path, waits: int) -> tuple[float, str]:
    """Start a pass and SIGKILL it once it has printed ``waits`` progress lines of a batch it waits for
    (``waited ...``: the batch is submitted or attached, and recorded); returns its seconds and what it
    said about attaching."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(child(srv, folder, items), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, bufsize=0)
    assert proc.stderr is not None
    seen, said = 0, ""
    for raw in iter(proc.stderr.readline, b""):  # unbuffered: the kill follows the line it reads
        line = raw.decode()
        if "attaching" in line:
            said = line.strip()
        if " waited " in line and ("in_progress" in line or "validating" in line):
            seen += 1
            if seen >= waits:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return time.perf_counter() - t0, said


def full_pass(srv: FaultServer, folder: Path, items: Path) -> tuple[float, str]:
    """A pass to the end; its seconds and its stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run(child(srv, folder, items), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return time.perf_counter() - t0, proc.stderr


def scored(folder: Path) -> int:
    """Rows of ``out.jsonl`` with a score and no error."""
    rows = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    return sum(r["error"] is None and r["score"] is not None for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description="a judge score --batch run killed twice while waiting creates one batch")
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--batch-seconds", type=float, default=10.0, help="how long the server's batches run")
    args = ap.parse_args()
    print(f"# batch_kill benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"# judge score --batch on {args.items} items, the server's batches run {args.batch_seconds:g} s\n")
    with tempfile.TemporaryDirectory() as tmp:
        items = Path(tmp) / "items.jsonl"
        write_items(items, args.items)
        with FaultServer(batch_run_s=args.batch_seconds) as base_srv:
            (Path(tmp) / "base").mkdir()
            base_s, _ = full_pass(base_srv, Path(tmp) / "base", items)
            base_scored = scored(Path(tmp) / "base")
        with FaultServer(batch_run_s=args.batch_seconds) as srv:
            folder = Path(tmp) / "killed"
            folder.mkdir()
            first, _ = killed_pass(srv, folder, items, 2)
            second, attached = killed_pass(srv, folder, items, 2)
            third, err = full_pass(srv, folder, items)
            batches, sync = len(srv.batches), len(srv.requests)
        rows = scored(folder)
    cache = re.search(r"^judge: cache: .*$", err, re.M)
    print(f"{'pass':>22} {'wall s':>7} {'ratio vs unkilled':>17}")
    print(f"{'never killed':>22} {base_s:>7.2f} {1.0:>16.2f}x")
    for name, s in (("1st (SIGKILL)", first), ("2nd (SIGKILL)", second), ("3rd (to the end)", third)):
        print(f"{name:>22} {s:>7.2f} {s / base_s:>16.2f}x")
    print(f"\n2nd pass: {attached or 'did not attach'}")
    print(f"3rd pass: {cache[0] if cache else 'no cache line'}")
    print(f"batches created: {batches}; requests sent one by one: {sync}; rows scored by the 3rd pass: {rows} of "
          f"{args.items} (the unkilled run: {base_scored}); peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (this process)")
    verdict = "met" if batches == 1 and sync == 0 and rows == args.items else "NOT met"
    print(f"target (killed twice while waiting: exactly 1 batch, every item scored): {verdict}")


if __name__ == "__main__":
    main()
