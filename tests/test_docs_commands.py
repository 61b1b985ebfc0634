"""Every figure in docs/results.md, and every typed one in docs/journal.md, names the command that makes it.

Each `judge run CONFIG ...` command in docs/results.md, docs/journal.md and the README is parsed by the
real CLI parser, and the config, the methods (``--methods``) and the sets (``--datasets``) it names must
exist; every table of results.md and journal.md must have such a command in its section. That the
figures of results.md come from those commands is tests/test_results_page.py's. No model is run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from judge.cli import build_parser
from judge.harness import load_experiment

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "docs" / "results.md", ROOT / "docs" / "journal.md", ROOT / "README.md"]
#: The documents whose every table must print its command in its section.
TABLE_DOCS = ("results.md", "journal.md")
COMMAND = re.compile(r"`(judge run [^`]*?\.toml[^`]*)`")


def _commands() -> list[tuple[str, str]]:
    return [(p.name, m.group(1)) for p in DOCS for m in COMMAND.finditer(p.read_text(encoding="utf-8"))]


def test_results_page_prints_every_committed_runs_command():
    from judge.report.results_page import SUMMARY_DIR, load_summaries

    printed = {command for name, command in _commands() if name == "results.md"}
    summaries = load_summaries(ROOT / SUMMARY_DIR)
    assert summaries
    for s in summaries:
        assert s["run"]["command"] in printed, s["name"]


def test_the_journal_keeps_the_rounds_commands():
    assert sum(name == "journal.md" for name, _ in _commands()) >= 14


@pytest.mark.parametrize("doc, command", _commands(), ids=[f"{d}:{i}" for i, (d, _) in enumerate(_commands())])
def test_printed_command_parses_and_names_what_exists(doc, command):
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert args.command == "run"
    config = ROOT / args.config
    assert config.is_file(), f"{doc}: {command}: no config {args.config}"
    if args.data_dir is not None:
        assert (ROOT / args.data_dir).is_dir(), f"{doc}: {command}: no data dir {args.data_dir}"
    methods = args.methods.split(",") if args.methods else None
    datasets = args.datasets.split(",") if args.datasets else None
    # with_overrides refuses a method or set the config does not have, naming it.
    exp = load_experiment(config).with_overrides(methods=methods, datasets=datasets, limit=args.limit,
                                                 split=args.split)
    if methods:
        assert [m.name for m in exp.methods] == [m for m in (x.name for x in load_experiment(config).methods)
                                                 if m in methods]
        assert len(set(methods)) == len(methods), f"{doc}: {command}: a method named twice"


@pytest.mark.parametrize("doc", TABLE_DOCS)
def test_every_table_has_its_command_in_its_section(doc):
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    sections = re.split(r"\n(?=#{2,3} )", text)
    tables = 0
    for section in sections:
        has_table = re.search(r"\n\|[^\n]*\|\n\|[ :-]+\|", section)
        if has_table:
            tables += 1
            title = section.splitlines()[0]
            assert COMMAND.search(section), f"docs/{doc}: the table in '{title}' has no `judge run` command"
    assert tables, f"docs/{doc}: no table found (the check above would pass on anything)"
