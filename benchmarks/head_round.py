"""``head_round``: a head round's dev reading, from the head files its ``judge fit`` runs wrote.

A round of docs/journal.md compares head recipes on the development halves by the leave-one-set-out
figures each ``judge fit`` stores in its head file (``cv.per_set``). This prints them as one table, a
row per head file and a column per set, with the mean over the sets the round's rule names (the eight
DSTC10 sets unless ``--rule-sets`` says otherwise), the last file's difference from the first on each
set, and the rule's verdict: the last file's recipe wins
only if its mean over those sets is higher than every other file's (no margin). Sets a file learned
from beyond those are printed after the mean: they are reported and choose nothing.

    python benchmarks/head_round.py benchmarks/heads/round11-dev/q15-dev-head-answer.json \\
        benchmarks/heads/round11-dev/q15-dev-head-families.json

Exit status 0 whether or not the last recipe wins (one file: its table, no rule); 2 when a file is not a head
or lacks a rule set.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from judge.core.errors import InputError, JudgeError, UnknownNameError
from judge.datasets.benchmarks import DSTC10_SETS, dataset_info
from judge.heads.head import read_head


def set_label(name: str) -> str:
    """The abbreviation a registered set goes by in the journal's tables, or the name itself."""
    try:
        return dataset_info(name).abbrev
    except UnknownNameError:
        return name


def figures(path: Path) -> dict[str, float]:
    """The held-out Spearman of each set a head file's cross-validation scored, by set name."""
    cv = read_head(path).cv
    if cv.get("how") != "leave one group of sets out":
        raise InputError(f"{cv.get('how')!r}, not a leave-one-set-out fit of several sets", file=str(path),
                         field="cv.how")
    return {name: float(entry["spearman"]) for name, entry in cv["per_set"].items()}


def table(paths: list[Path], rule_sets: list[str]) -> tuple[list[str], list[float]]:
    """The markdown table's lines and each file's mean over ``rule_sets``, in the order given."""
    per_file = {path: figures(path) for path in paths}
    extra = [s for f in per_file.values() for s in f if s not in rule_sets]
    extra = list(dict.fromkeys(extra))
    columns = [*rule_sets, *extra]
    header = ["head file", *(set_label(s) for s in rule_sets), "rule mean", *(set_label(s) for s in extra)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    means: list[float] = []
    for path, found in per_file.items():
        missing = [s for s in rule_sets if s not in found]
        if missing:
            raise InputError(f"no held-out figure for {', '.join(missing)}", file=str(path), field="cv.per_set")
        mean = sum(found[s] for s in rule_sets) / len(rule_sets)
        means.append(mean)
        cells = [f"{found[s]:.3f}" if s in found else "" for s in columns]
        cells.insert(len(rule_sets), f"{mean:.4f}")
        lines.append(f"| `{path.name}` | " + " | ".join(cells) + " |")
    if len(paths) > 1:
        first, last = per_file[paths[0]], per_file[paths[-1]]
        diffs = [f"{last[s] - first[s]:+.3f}" if s in first and s in last else "" for s in columns]
        diffs.insert(len(rule_sets), f"{means[-1] - means[0]:+.4f}")
        lines.append("| last minus first | " + " | ".join(diffs) + " |")
    return lines, means


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("heads", nargs="+", type=Path, help="head files; the last one is the new recipe")
    parser.add_argument("--rule-sets", default=",".join(DSTC10_SETS),
                        help="comma-separated set names the rule averages (default: the eight DSTC10 sets)")
    args = parser.parse_args(argv)
    rule_sets = [s.strip() for s in args.rule_sets.split(",") if s.strip()]
    try:
        lines, means = table(args.heads, rule_sets)
    except JudgeError as error:  # a file that is no head, or lacks a figure the rule needs
        print(f"head_round: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    new, others = means[-1], means[:-1]
    if not others:  # one file: a table, and no rule to apply
        return 0
    wins = all(new > other for other in others)
    print(f"\nrule: {args.heads[-1].name} mean {new:.4f} over {len(rule_sets)} sets against "
          + ", ".join(f"{p.name} {m:.4f}" for p, m in zip(args.heads[:-1], others))
          + f": {'the new recipe ships' if wins else 'the new recipe does not ship'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
