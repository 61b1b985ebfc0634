"""The README as a newcomer reads it: short, its set-up commands exact, its first command's output real, its
figures generated, every command in it run, every page it links present.

The commands of CONTRIBUTING.md and of docs/*.md are tests/test_docs_commands.py's.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from judge.cli import build_parser, main
from judge.report import published, readme_figures
from judge.report import results_page as page

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SETUP = ["pip install . && judge score examples/dialogues.jsonl", "pip install '.[test]' && pytest -m \"not slow\""]
#: The README's stand-ins for a reader's own files, replaced by the bundled examples when its commands run.
PLACEHOLDERS = {"my_turns.jsonl": "examples/dialogues.jsonl", "my_rated.jsonl": "examples/dialogues.jsonl"}


def bash_lines(text: str) -> list[str]:
    """Every command line of the ```bash blocks of ``text``, continuation lines joined, comments kept."""
    out: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        out += [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return out


def judge_commands(text: str) -> list[list[str]]:
    """The ``judge`` commands of ``text``'s bash blocks as argument lists (``judge`` dropped): each part of a
    ``&&`` chain, a leading ``VAR=value`` and a trailing ``&`` taken off."""
    out = []
    for line in bash_lines(text):
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]
            if words and words[-1] == "&":
                words = words[:-1]
            if words and words[0] == "judge":
                out.append(words[1:])
    return out


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_the_readme_is_read_in_five_minutes():
    lines = README.splitlines()
    assert len(lines) <= 200, len(lines)
    prose = re.sub(r"```.*?```", "", README, flags=re.S)  # code, output and the generated table are skimmed
    prose = prose.replace(readme_figures.render_block(page.load_summaries(ROOT / page.SUMMARY_DIR),
                                                      page.load_history(ROOT)), "")
    assert len(prose.split()) <= 1200, len(prose.split())  # five minutes at 240 words a minute
    # what it is, then the picture, then the first command: nothing about tests or CI before the first result
    first_result = README.index("## Install and the first result")
    assert README.index("docs/img/view.png") < first_result
    assert (ROOT / "docs" / "img" / "view.png").is_file()
    assert "slow" not in README[:README.index("```text")].replace(SETUP[1], "")


def test_the_two_setup_commands_stay_as_they_are_in_the_first_block():
    """.ci/run runs the second exactly as written (tests/test_suite_setup.py checks it there)."""
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert first_block == SETUP


def test_every_linked_page_exists():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    assert len(links) >= 20
    for link in links:
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link


def test_every_docs_page_is_linked_from_the_readme():
    """The "where to go next" table leads to every page (the results page and the journal included)."""
    linked = set(re.findall(r"\(docs/([\w-]+\.md)", README))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set(), "README.md links no page for: " + ", ".join(sorted(pages - linked))


def test_the_figures_are_the_block_the_committed_summaries_give():
    """No figure is typed: the block between the markers is what `judge results render` writes, and the
    README quotes no Spearman figure outside it."""
    summaries = page.load_summaries(ROOT / page.SUMMARY_DIR)
    block = readme_figures.render_block(summaries, page.load_history(ROOT))
    assert block in README
    assert published.rendered(summaries, page.load_history(ROOT), ROOT)[readme_figures.README] == README
    outside = README.replace(block, "")
    first_output = outside[outside.index("```text"):outside.index("```", outside.index("```text") + 3)]
    typed = re.findall(r"(?<![\d.])[-−]?\.\d{3}\b", outside.replace(first_output, ""))
    assert typed == [], typed
    assert "| paper: best DSTC10 baseline | (paper) | .438 |" in block  # the paper's table 6, averaged


def test_splice_refuses_a_readme_without_its_markers():
    from judge.core.errors import InputError

    with pytest.raises(InputError, match="generated figures need"):
        readme_figures.splice("# judge\n", "block")


def test_every_readme_command_parses_and_names_what_exists():
    commands = judge_commands(README)
    assert len(commands) >= 8
    parser = build_parser()
    for args in commands:
        parser.parse_args(args)  # argparse exits (and the test fails) on an unknown flag or value
        for word in args:
            if word.startswith(("examples/", "benchmarks/", "prompts/")):
                assert (ROOT / word).is_file(), (args, word)


def test_every_extra_the_readme_installs_is_declared():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = re.findall(r"pip install '(?:\.|dialogue-judge)\[([\w,-]+)\]'", README)
    assert named
    for group in named:
        assert set(group.split(",")) <= extras, group


def test_the_readme_commands_run_on_the_mock_backend(tmp_path, data_dir, monkeypatch):
    """Every `judge` command of the README, as written but for the model (the mock backend: milliseconds), the
    reader's own files (the bundled examples) and the outputs (a temporary folder). The first command runs with
    the real model below; the packaged 1.5B is test_heads.py's (`--check` on its tokenizer) and test_models.py's."""
    monkeypatch.chdir(ROOT)
    ran = 0
    for args in judge_commands(README):
        if args[0] == "models":
            code, out, err = run(args)
            assert code == 0 and "qwen2.5-coder-1.5b" in out, err
            ran += 1
            continue
        args = [PLACEHOLDERS.get(a, a).replace("../shared/data", str(data_dir)) for a in args]
        args = [str(tmp_path / a) if a.endswith((".html", "scores.jsonl")) else a for a in args]
        if "criteria-head" in args:
            continue  # a head reads hidden states of the model it was fitted on: test_heads.py runs these
        code, out, err = run([*args, "--backend", "mock", "--no-progress"])
        assert code == 0, (args, err[-2000:])
        assert out or any(a.startswith(str(tmp_path)) for a in args), args
        ran += 1
    assert ran >= 7
    assert (tmp_path / "scores.jsonl").is_file() and (tmp_path / "scores.html").is_file()


_NUMBER = re.compile(r"-?\d+\.\d+")


def _compare_line(want: str, got: str, tolerance: float) -> None:
    """The same words; the same numbers within ``tolerance``."""
    assert _NUMBER.sub("#", want).split() == _NUMBER.sub("#", got).split(), (want, got)
    for a, b in zip(_NUMBER.findall(want), _NUMBER.findall(got), strict=True):
        assert abs(float(a) - float(b)) <= tolerance, (want, got)


@pytest.mark.slow  # 5-15 s of SmolLM2 from a fresh cache: kept out of the README's 10-minute command
def test_the_first_command_prints_what_the_readme_shows():
    """`judge score examples/dialogues.jsonl` on a terminal (the table format), with the embedded SmolLM2:
    the same items, labels and summary; scores within .01 and the summary's figures within .05 (llama.cpp on
    another CPU may differ in the last digits). When this fails after a change of the output, run the command
    and paste what it prints into the README."""
    shown = README.split("```text\n", 1)[1].split("```", 1)[0]
    code, out, err = run(["score", "examples/dialogues.jsonl", "--format", "table", "--no-progress"])
    assert code == 0, err
    want, got = shown.strip().splitlines(), out.strip().splitlines()
    assert len(want) == len(got), out
    for w, g in zip(want, got, strict=True):
        _compare_line(w, g, 0.01 if w.startswith("ex-") else 0.05)
