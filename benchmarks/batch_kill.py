"""``batch_kill`` benchmark: a Batch API pass killed twice while it waits creates exactly one batch.

A child process asks ``--items`` prompts (the yes/no prompt on synthetic turns) through
``judge.backends.openai_batch.fill_cache`` against the local fault server (tests/fault_server.py), whose
batches take ``--batch-seconds`` to run. The child is SIGKILLed twice while it waits for its batch (each
time once the server holds a batch and a moment has passed), then run a third time to the end. Printed:
the batches the server was asked to create (the target is 1), the requests it answered synchronously
(0), the answers stored, and each pass's wall time; the third pass against a run never killed, measured
in the same run (the baseline).

    python benchmarks/batch_kill.py                    # 2,000 items, batches of 10 s
    python benchmarks/batch_kill.py --items 200 --batch-seconds 5
"""

from __future__ import annotations

import argparse
import os
import platform
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

CHILD = """
import sys
from judge.backends import create_backend
from judge.backends.openai_batch import fill_cache
from judge.cache import Cache, CachedBackend
from judge.config import GenerateConfig
from judge.items import USER, Item, Turn
from judge.prompts import get_prompt
from judge.scorers.llm import LLMJudge

url, cache, state, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
items = [Item(id=f"b{i}", level="turn", context=(Turn(USER, f"Question {i}: any tips for learning chess?"),),
              response=f"Answer {i}: play a few short games every day and review them.") for i in range(n)]
backend = CachedBackend(create_backend("openai", "fault-model", GenerateConfig(cache_path=cache), base_url=url),
                        Cache(cache))
judge = LLMJudge(get_prompt("yesno"), backend)
report = fill_cache(backend, [(judge.build_prompt(it)[0], judge.candidates, judge.top_n) for it in items], state,
                    poll_s=0.1)
print(report.stored, report.hits, len(report.missing), flush=True)
"""


def child(srv: FaultServer, folder: Path, n: int) -> list[str]:
    return [sys.executable, "-c", CHILD, srv.base_url, str(folder / "cache.sqlite"), str(folder / "state.json"), str(n)]


def killed_pass(srv: FaultServer, folder: Path, n: int, waits: int) -> tuple[float, str]:
    """Start a pass and SIGKILL it once it has printed ``waits`` progress lines of a batch it waits for
    (``waited ...``: the batch is submitted or attached, and recorded); returns its seconds and what it
    said last."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(child(srv, folder, n), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
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


def full_pass(srv: FaultServer, folder: Path, n: int) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run(child(srv, folder, n), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return time.perf_counter() - t0, proc.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description="a batch pass killed twice while waiting creates one batch")
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--batch-seconds", type=float, default=10.0, help="how long the server's batches run")
    args = ap.parse_args()
    print(f"# batch_kill benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"# {args.items} items, the server's batches run {args.batch_seconds:g} s\n")
    with tempfile.TemporaryDirectory() as tmp:
        with FaultServer(batch_run_s=args.batch_seconds) as base_srv:
            (Path(tmp) / "base").mkdir()
            base_s, base_out = full_pass(base_srv, Path(tmp) / "base", args.items)
        with FaultServer(batch_run_s=args.batch_seconds) as srv:
            folder = Path(tmp) / "killed"
            folder.mkdir()
            first, _ = killed_pass(srv, folder, args.items, 2)
            second, attached = killed_pass(srv, folder, args.items, 2)
            third, out = full_pass(srv, folder, args.items)
            batches, sync = len(srv.batches), len(srv.requests)
    stored, hits, missing = (int(x) for x in out.split())
    print(f"{'pass':>22} {'wall s':>7} {'ratio vs unkilled':>17}")
    print(f"{'never killed':>22} {base_s:>7.2f} {1.0:>16.2f}x")
    for name, s in (("1st (SIGKILL)", first), ("2nd (SIGKILL)", second), ("3rd (to the end)", third)):
        print(f"{name:>22} {s:>7.2f} {s / base_s:>16.2f}x")
    print(f"\n2nd pass: {attached or 'did not attach'}")
    print(f"batches created: {batches}; requests sent synchronously: {sync}; answers in the cache after the 3rd "
          f"pass: {stored + hits} of {args.items} ({stored} stored by it, {hits} found stored, {missing} missing; "
          f"the unkilled run stored {base_out.split()[0]}); peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (this process)")
    verdict = "met" if batches == 1 and sync == 0 and stored + hits == args.items else "NOT met"
    print(f"target (killed twice while waiting: exactly 1 batch, every answer stored): {verdict}")


if __name__ == "__main__":
    main()
