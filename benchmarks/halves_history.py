"""Which of today's test items were read before, and which items changed half: ``benchmarks/halves_history.json``.

The results page (docs/results.md) is generated from it and from the committed run summaries: it lists, per
set, today's test items that an earlier split put in a dev half that development rounds read, and the items
the last change of the split moved (so a summary computed before it says which of its figures stand on the
previous halves). Nothing here is typed: the earlier halves are rebuilt from the data with the rules of
their time (:func:`judge.datasets.conversations.conversation_names` with fewer rules), the rounds' samples
with the harness's own seeded sampling, and a test fails until the committed file equals what this writes.

The halves, oldest first:

* ``by-set``: each set split by its own conversation groups (rounds 1 to 7 read these: the 25-item dev
  sample of ``cpu_leaderboard_dev.toml`` chose the prompt variant and the ensemble members, the 50-item
  samples of the ``cpu_leaderboard_dev_q15*.toml`` rounds chose the Qwen-1.5B candidates);
* ``by-corpus``: sets of one corpus joined by shared contexts and turn pairs (round 8 read every item of
  each dev half: ``heads_q15_dev.toml``);
* ``current``: GRADE windows that continue a dialogue by one turn join it too.

    python benchmarks/halves_history.py --data-dir ../shared/data            # rewrite the file
    python benchmarks/halves_history.py --data-dir ../shared/data --check    # exit 1 when it differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.data.items import Item
from judge.datasets.benchmarks import DSTC10_SETS, dataset_info
from judge.datasets.conversations import RULES, conversation_names, load_unidentified, node_of, present_sets
from judge.datasets.identity import index_digest
from judge.datasets.split import split_of
from judge.harness.runner import seeded_subset

OUT = ROOT / "benchmarks" / "halves_history.json"
#: The rules of each earlier split, oldest first (see the module doc), and the current ones.
VERSIONS = {"by-set": (), "by-corpus": ("prefix", "pair"), "current": RULES}
#: The development samples read on each earlier split: (split version, items per set, what read it).
SAMPLES = (
    ("by-set", 25, "in round 1's 25-item dev sample"),
    ("by-set", 50, "in the 50-item dev samples of rounds 2-7"),
    ("by-corpus", None, "read by round 8 (every dev item)"),
)


def _halves(sets: dict[str, list[Item]], rules: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Per set, item id -> its half under ``rules`` (split seed 0)."""
    names = conversation_names(sets, rules)
    return {n: {it.id: split_of(names[node_of(n, it)]) for it in items} for n, items in sets.items()}


def history(data_dir: str | Path) -> dict[str, Any]:
    """The file's content: per DSTC10 set, today's test items read in dev rounds; the items the last split
    change moved; the digest of the current conversation index (what a summary on today's halves records)."""
    # Every registered set a corpus holds, as the index is built from them (the anchors name the halves).
    sets = {n: load_unidentified(n, data_dir) for n in present_sets(data_dir)}
    halves = {v: _halves(sets, rules) for v, rules in VERSIONS.items()}
    read: dict[str, Any] = {}
    for name in DSTC10_SETS:
        overall = dataset_info(name).overall
        test = sorted(i for i, h in halves["current"][name].items() if h == "test")
        entry: dict[str, Any] = {"test": len(test), "once_dev": [], "samples": {}}
        for version in ("by-set", "by-corpus"):
            entry["once_dev"] += [i for i in test if halves[version][name][i] == "dev"]
        entry["once_dev"] = sorted(set(entry["once_dev"]))
        for version, limit, what in SAMPLES:
            dev = [it for it in sets[name] if halves[version][name][it.id] == "dev"]
            sample = [it.id for it in seeded_subset(dev, limit, 0) if it.human(overall) is not None]
            entry["samples"][what] = sorted(set(sample) & set(test))
        read[name] = entry
    moved = [{"set": n, "item": i, "before": halves["by-corpus"][n][i], "after": h}
             for n in DSTC10_SETS for i, h in halves["current"][n].items() if halves["by-corpus"][n][i] != h]
    return {"about": "written by benchmarks/halves_history.py from the data (see its doc); the results page "
                     "is generated from it", "current": index_digest(),
            "moved_by": "the one-turn links (by-corpus -> current)", "moved": moved, "read_in_dev": read}


def text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    args = p.parse_args()
    want = text(history(args.data_dir))
    if args.check:
        same = OUT.is_file() and OUT.read_text() == want
        print(f"{OUT}: {'up to date' if same else 'differs'}")
        return 0 if same else 1
    OUT.write_text(want)
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
