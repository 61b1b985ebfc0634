"""Every command the docs print is run or checked against what exists.

- Each `judge run CONFIG ...` command quoted in the README, CONTRIBUTING.md and docs/*.md is parsed by the
  real CLI parser, and the config, the methods (``--methods``) and the sets (``--datasets``) it names must
  exist; every table of results.md and journal.md must have such a command in its section. That the
  figures of results.md come from those commands is tests/test_results_page.py's.
- Every `judge` command of the code blocks of CONTRIBUTING.md and docs/*.md parses with the real CLI
  parser (an option renamed or dropped fails here), and the files it names exist.
- Blocks that run as written: docs/python.md's Python session (real SmolLM2), docs/serve.md's client
  (`judge serve` on the mock backend, the curl line and the Python client), CONTRIBUTING.md's
  `judge results check`. The features' own tests run the other pages' commands.

The README's commands are tests/test_readme.py's.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.cli import build_parser
from judge.harness import load_experiment

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS = [*PAGES, ROOT / "README.md"]
#: The documents whose every table must print its command in its section.
TABLE_DOCS = ("results.md", "journal.md")
COMMAND = re.compile(r"`(judge run [^`]*?\.toml[^`]*)`")


def fenced_blocks(text: str, langs: tuple[str, ...] = ("bash", "sh", "")) -> list[str]:
    """The bodies of ``text``'s fenced code blocks whose language is one of ``langs``."""
    out: list[str] = []
    body: list[str] | None = None
    lang = ""
    for line in text.splitlines():
        if body is None and line.startswith("```"):
            body, lang = [], line[3:].strip()
        elif body is not None and line.strip() == "```":
            if lang in langs:
                out.append("\n".join(body) + "\n")
            body = None
        elif body is not None:
            body.append(line)
    return out


def judge_commands(text: str) -> list[list[str]]:
    """The `judge` commands of ``text``'s shell blocks as argument lists (``judge`` dropped): continuation
    lines joined, each part of a ``&&`` chain, a leading ``VAR=value`` and a trailing ``&`` taken off."""
    out = []
    for block in fenced_blocks(text):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                if not re.match(r"\s*(?:[A-Z_]+=\S*\s+)*judge\s", part):
                    continue
                words = shlex.split(part, comments=True)
                while re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                    words = words[1:]
                out.append(words[1:-1] if words[-1] == "&" else words[1:])
    return out


#: Where the files of this repository that a command reads live (a reader's own files and outputs are elsewhere).
REPO_FILES = ("examples/", "benchmarks/", "prompts/", "judge/", "tests/")


def _page_commands() -> list[tuple[str, list[str]]]:
    return [(p.name, args) for p in PAGES for args in judge_commands(p.read_text(encoding="utf-8"))]


def test_the_pages_show_commands():
    assert len(_page_commands()) >= 60
    assert any(name == "CONTRIBUTING.md" for name, _ in _page_commands())


@pytest.mark.parametrize("doc, args", _page_commands(), ids=[f"{d}:{i}" for i, (d, _) in enumerate(_page_commands())])
def test_every_command_of_the_pages_parses_and_names_files_that_exist(doc, args):
    build_parser().parse_args(args)  # argparse exits, failing the test, on an unknown flag or value
    for word in args:
        if word.startswith(REPO_FILES) and word.endswith((".jsonl", ".j2", ".toml", ".json")) and "{" not in word:
            assert (ROOT / word).is_file(), f"{doc}: judge {shlex.join(args)}: no file {word}"


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


#: A table a benchmark script measures names the script's command instead (``python benchmarks/x.py ...``).
BENCHMARK = re.compile(r"`python (benchmarks/\w+\.py)[^`]*`")


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
            script = BENCHMARK.search(section)
            assert COMMAND.search(section) or (script and (ROOT / script[1]).is_file()), \
                f"docs/{doc}: the table in '{title}' has no `judge run` command (nor a benchmark script's)"
    assert tables, f"docs/{doc}: no table found (the check above would pass on anything)"


@pytest.mark.slow
def test_the_python_page_runs_in_order(data_dir):
    """docs/python.md's blocks share one session, as a reader pastes them (real SmolLM2); the data path is the
    page's own."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python.md").read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 2 and "../shared/data" in blocks[0]
    code = "\n".join(blocks).replace("../shared/data", str(data_dir))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ}, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("ex-") for line in lines) == 12  # one line per example item


def test_the_serve_page_client_runs_as_written(tmp_path):
    """docs/serve.md's service (on the mock backend and a free port: the page's port and model aside, as
    written), its curl line and its Python client, each answered with a row."""
    text = (ROOT / "docs" / "serve.md").read_text(encoding="utf-8")
    section = text.split("\n## A client\n", 1)[1].split("\n## ", 1)[0]
    (shell,) = fenced_blocks(section, ("bash",))
    (client,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    start, curl = shell.replace("\\\n", " ").split("\n", 1)
    env_var, command = start.split(" ", 1)
    name, token = env_var.split("=")
    args = shlex.split(command)[1:-1]  # `judge` and the trailing `&` off
    log = tmp_path / "serve.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "judge", *args, "--port", "0", "--backend", "mock"], cwd=ROOT,
                                stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, name: token})
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text())
            port = found[1] if found else None
            time.sleep(0.05)
        answer = subprocess.run(curl.replace(":8080", f":{port}"), shell=True, capture_output=True, text=True,
                                timeout=60)
        assert answer.returncode == 0 and '"id": "t1"' in answer.stdout.replace('":"', '": "'), answer
        assert '"score"' in answer.stdout
        out = subprocess.run([sys.executable, "-c", client.replace(":8080", f":{port}")], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        score, probs = out.stdout.split(" ", 1)
        assert 0 <= float(score) <= 1 and "yes" in probs.lower()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


#: Pages whose `judge score` and `judge bench` commands run here on the mock backend (the other pages' are run by
#: the tests of their features); a reader's own files become the bundled examples.
MOCK_RUN_PAGES = ("install.md", "scoring.md", "prompts.md")
OWN_FILES = {"mydata.jsonl": "examples/dialogues.jsonl", "my_prompt.j2": "prompts/yesno.j2",
             "path/to/model.gguf": "smollm2"}


def _run_page_commands(verb: str, tmp_path: Path, data_dir: Path) -> int:
    """Run each `judge VERB` command of ``MOCK_RUN_PAGES`` as written but for the model (the mock backend), the
    reader's files and where outputs go (a temporary folder); how many ran."""
    import contextlib
    import io

    from judge.cli import main

    ran = 0
    for page in MOCK_RUN_PAGES:
        for args in judge_commands((ROOT / "docs" / page).read_text(encoding="utf-8")):
            if args[0] != verb or "--backend" in args:
                continue  # a command that names its runtime is that backend's test's (test_hf_backend.py, ...)
            args = [OWN_FILES.get(a, a).replace("../shared/data", str(data_dir)) for a in args]
            args = [str(tmp_path / a) if a.endswith((".html", "scores.jsonl")) else a for a in args]
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main([*args, "--backend", "mock", "--no-progress"])
            assert code == 0, (page, args, err.getvalue()[-2000:])
            ran += 1
    return ran


def test_the_scoring_pages_score_commands_run_on_the_mock_backend(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert _run_page_commands("score", tmp_path, ROOT) >= 8
    assert (tmp_path / "scores.jsonl").is_file()


@pytest.mark.slow  # benchmark sets of hundreds of items, 1-4 s each even on the mock backend
def test_the_scoring_pages_bench_commands_run_on_the_mock_backend(tmp_path, data_dir, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert _run_page_commands("bench", tmp_path, data_dir) >= 4
    assert (tmp_path / "ft.html").is_file()


def test_contributing_commands_hold():
    """CONTRIBUTING.md's checks: the results check passes on the committed summaries, the test command is the
    README's, and the marks it names are the ones pytest declares."""
    from judge.cli import main

    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert ["results", "check"] in judge_commands(text)
    assert main(["results", "check", "--root", str(ROOT)]) == 0
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    test_command = "pip install '.[test]' && pytest -m \"not slow\""
    assert test_command in fenced_blocks(text)[0] and test_command in readme
    import tomllib

    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    declared = {m.split(":")[0] for m in markers}
    assert {"slow", "long"} <= declared
    assert "`pytest -m long`" in text and "pytest -m long" in [b.strip() for b in fenced_blocks(text)]
