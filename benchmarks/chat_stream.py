"""``chat_stream`` benchmark: a chatbot's log of a million assistant turns, scored as it is (OpenAI's
``messages`` JSON Lines), with the answers per version, in under 1 GB.

Writes a messages JSONL of ``--turns`` assistant replies (conversations of ``--per-conversation`` replies, a
system prompt, a version and a timestamp each; every text distinct) and the judge's own JSONL of the same
turns (each reply an item: its context, the bot's instructions as ``fact``, the conversation as ``group``),
then runs in a subprocess of its own each:

- ``judge score LOG --backend mock -o ROWS --by version --summary DIR`` (the log as it is: rows written as
  they come, the per-version summary at the end), and
- ``judge score NATIVE --backend mock -o ROWS`` (the baseline: the same turns in the judge's own format),

and ``judge summarize ROWS --by version`` on the log's rows, and reads each process's peak resident set
(``wait4``) and wall time. The mock backend answers in microseconds, so what is measured is judge itself:
reading and checking the log, building the items and prompts, writing the rows and the summary. The ratio
is the log's items/s and peak over the baseline's.

    python benchmarks/chat_stream.py --turns 1000000          # the figure in benchmarks/README.md
    python benchmarks/chat_stream.py --turns 2000 --keep DIR  # a quick look, keeping the files
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.peak import measured_run

INSTRUCTIONS = "You are the help desk of an online shoe shop. Be brief and friendly."
VERSIONS = ("2.3", "2.4", "2.5")
_WORDS = ["the", "order", "shipped", "yesterday", "and", "should", "arrive", "on", "friday", "if", "the", "courier", "keeps", "to", "the", "plan", "we", "can", "also", "change", "the", "address", "until", "it", "leaves", "our", "warehouse", "returns", "are", "free", "within", "thirty", "days"]
#: The peak the log's run must stay under.
LIMIT_MB = 1024


def _sentence(rng: random.Random, n: int, tag: str) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + f" ({tag})."


def generate(log: Path, native: Path, turns: int, per_conversation: int, seed: int = 0) -> int:
    """The two files of ``turns`` assistant replies; returns the number of conversations."""
    rng = random.Random(seed)
    n_conv = (turns + per_conversation - 1) // per_conversation
    left = turns
    with log.open("w", encoding="utf-8") as out, native.open("w", encoding="utf-8") as nat:
        for c in range(n_conv):
            conv_id = f"conv-{c:07d}"
            replies = min(per_conversation, left)
            left -= replies
            messages: list[dict[str, str]] = [{"role": "system", "content": INSTRUCTIONS}]
            context: list[dict[str, str]] = []
            for t in range(replies):
                question = _sentence(rng, rng.randint(5, 12), f"{c}.{t}q")
                answer = _sentence(rng, rng.randint(4, 14), f"{c}.{t}a")
                messages.append({"role": "user", "content": question})
                context.append({"speaker": "user", "text": question})
                index = len(messages)
                messages.append({"role": "assistant", "content": answer})
                nat.write(json.dumps({"id": f"{conv_id}#{index}", "context": list(context), "response": answer,
                                      "fact": "The bot's instructions: " + INSTRUCTIONS, "system": "shopbot",
                                      "group": conv_id}) + "\n")
                context.append({"speaker": "system", "text": answer})
            out.write(json.dumps({"id": conv_id, "model": "shopbot", "metadata": {"version": VERSIONS[c % 3]},
                                  "timestamp": f"2026-11-{1 + c % 28:02d}T10:00:00Z", "messages": messages}) + "\n")
    return n_conv


def run_judge(args: list[str], out: Path) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of ``judge ARGS`` in a subprocess of its own (its peak from ``wait4``);
    ``judge score`` on the mock backend."""
    scoring = ["--backend", "mock", "--model", "m", "--no-cache", "--no-progress"] if args[0] == "score" else []
    cmd = [sys.executable, "-m", "judge", *args, *scoring]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    log = out.with_suffix(".stderr.txt")
    peak, wall, code = measured_run(cmd, env, log)
    if code != 0:
        raise SystemExit(f"judge {args[0]} failed (exit {code}):\n{log.read_text()}")
    return peak, wall


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=1_000_000, help="assistant replies in the log (default: 1,000,000)")
    ap.add_argument("--per-conversation", type=int, default=5, help="replies per conversation (default: 5)")
    ap.add_argument("--keep", default=None, metavar="DIR", help="write the files here and keep them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="judge-chat-stream-") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        log, native = folder / "log.jsonl", folder / "native.jsonl"
        n_conv = generate(log, native, args.turns, args.per_conversation)
        print(f"{args.turns:,} assistant turns in {n_conv:,} conversations: messages JSONL "
              f"{log.stat().st_size / 1e6:.1f} MB, native JSONL {native.stat().st_size / 1e6:.1f} MB", flush=True)
        results = {}
        for name, cmd in (
                ("messages JSONL, --by version", ["score", str(log), "-o", str(folder / "log_rows.jsonl"), "--by",
                                                  "version", "--summary", str(folder / "summary")]),
                ("native JSONL (baseline)", ["score", str(native), "-o", str(folder / "native_rows.jsonl")]),
                ("summarize the log's rows", ["summarize", str(folder / "log_rows.jsonl"), "--by", "version"])):
            peak, wall = run_judge(cmd, folder / (name.split()[0] + ".out"))
            results[name] = (peak, wall)
        rows = count_lines(folder / "log_rows.jsonl")
        if rows != args.turns or count_lines(folder / "native_rows.jsonl") != args.turns:
            raise SystemExit(f"expected {args.turns} rows from each run, got {rows}")
        print(f"{'input':<30} {'peak RSS MB':>12} {'wall s':>9} {'items/s':>9}")
        for name, (peak, wall) in results.items():
            print(f"{name:<30} {peak:>12.0f} {wall:>9.1f} {args.turns / wall:>9,.0f}")
        (lp, lw), (bp, bw), (sp, _) = results.values()
        print(f"messages vs native: items/s {bw / lw:.2f}x, peak RSS {lp / bp:.2f}x")
        verdict = "met" if max(lp, sp) < LIMIT_MB else "NOT met"
        print(f"target: peak RSS of the log's run under {LIMIT_MB} MB: {lp:.0f} MB (summarize: {sp:.0f} MB): {verdict}")
        summary = (folder / "summary" / "by_group.md").read_text(encoding="utf-8")
        print(summary.split("\n\n")[2] if summary.count("\n\n") >= 2 else summary, end="\n")


if __name__ == "__main__":
    main()
