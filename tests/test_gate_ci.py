"""The shipped GitHub Actions example (examples/ci/judge-gate.yml) runs as a CI would run it: its run steps in
order, each in ``bash -eo pipefail`` with the workflow's env, ``GITHUB_STEP_SUMMARY`` and ``GITHUB_OUTPUT``
files, a failed step failing the job; its paths point at a constructed log and baseline, and the judge is the
mock backend (through the workflow's own JUDGE_OPTIONS). The pass, fail and inconclusive cases end as the
workflow says: success, failure with an error annotation, success with a warning. Its comment step's script runs
in node against a stand-in of the GitHub API: every push updates one comment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from judge.cli import main

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "ci" / "judge-gate.yml"
#: The step the test does not run: this checkout is what the test's environment already has installed.
INSTALL = "pip install dialogue-judge"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def run_job(tmp_path: Path, env: dict[str, str]) -> tuple[bool, list[tuple[str, int, str]], str]:
    """Run the job's run steps as GitHub's runner does (``bash --noprofile --norc -eo pipefail``); a step after a
    failed one runs only under ``if: always()``. Returns whether the job succeeded, each step's (name, exit
    code, output), and the job summary."""
    flow = workflow()
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    base = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT), "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output),
            **{k: str(v) for k, v in flow["env"].items()}, **env}
    ok, ran = True, []
    for step in flow["jobs"]["gate"]["steps"]:
        if "run" not in step or (not ok and "always()" not in str(step.get("if", ""))):
            continue
        if step["run"].strip() == INSTALL:
            continue
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=tmp_path,
                              env={**base, **step.get("env", {})}, capture_output=True, text=True, timeout=120)
        ran.append((step["name"], done.returncode, done.stdout + done.stderr))
        ok = ok and done.returncode == 0
    return ok, ran, summary.read_text() if summary.exists() else ""


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> tuple[Path, list[dict]]:
    """Ten test conversations the candidate answered (a chat log) and their rows as the mock judge scores them."""
    folder = tmp_path_factory.mktemp("evals")
    path = folder / "candidate-replies.jsonl"
    path.write_text("".join(json.dumps({"id": f"case-{i}", "model": "bot", "messages": [
        {"role": "user", "content": f"Question number {i}: what should I cook tonight?"},
        {"role": "assistant", "content": f"Try recipe {i}: a quick pasta with what you have."}]}) + "\n"
        for i in range(10)), encoding="utf-8")
    rows = folder / "rows.jsonl"
    assert main(["score", str(path), "--backend", "mock", "--no-cache", "-o", str(rows)]) == 0
    return path, [json.loads(line) for line in rows.read_text().splitlines()]


def baseline(tmp_path: Path, rows: list[dict], shifts: list[float]) -> Path:
    """The last release's rows: the same contexts, scored ``shift`` higher than the candidate's."""
    path = tmp_path / "baseline.jsonl"
    path.write_text("".join(json.dumps({**r, "score": round(r["score"] + s, 6)}) + "\n"
                            for r, s in zip(rows, shifts, strict=True)), encoding="utf-8")
    return path


def test_the_workflow_is_what_the_docs_describe():
    flow = workflow()
    steps = flow["jobs"]["gate"]["steps"]
    assert [s.get("name") for s in steps if "run" in s] == ["Install judge", "Score the candidate's replies",
                                                            "Gate against the baseline"]
    assert steps[2]["run"] == INSTALL and set(flow["env"]) == {"BASELINE", "REPLIES", "MAX_DROP", "JUDGE_OPTIONS"}
    assert "examples/ci/judge-gate.yml" in (ROOT / "docs" / "gate.md").read_text(encoding="utf-8")


# Each case starts two commands (about a second each); the fail case, the one that blocks, runs in the fast tier.
@pytest.mark.parametrize(("shifts", "ok", "verdict", "annotation"), [
    pytest.param([0.0] * 10, True, "pass", None, marks=pytest.mark.slow),
    ([0.3] * 10, False, "fail", "::error::"),
    pytest.param([0.05 + (0.2 if i % 2 else -0.2) for i in range(10)], True, "inconclusive",
                 "::warning::Inconclusive", marks=pytest.mark.slow),
])
def test_the_workflow_passes_fails_and_warns_as_a_ci_runs_it(tmp_path, log, shifts, ok, verdict, annotation):
    replies, rows = log
    env = {"BASELINE": str(baseline(tmp_path, rows, shifts)), "REPLIES": str(replies), "JUDGE_OPTIONS": "--backend mock"}
    succeeded, ran, summary = run_job(tmp_path, env)
    assert succeeded is ok, ran
    assert [name for name, _, _ in ran] == ["Score the candidate's replies", "Gate against the baseline"]
    gate_code, gate_out = ran[1][1], ran[1][2]
    assert gate_code == (0 if ok else 1), gate_out
    assert summary.startswith(f"### judge gate: {verdict}\n") and "| paired | 10 |" in summary
    assert f"verdict: {verdict}" in gate_out
    if annotation:
        assert annotation in gate_out
    else:
        assert "::" not in gate_out


#: A stand-in for what actions/github-script gives a script (octokit/rest.js's ``paginate`` and
#: ``rest.issues`` methods, the pull request's ``context``), over the comments in a JSON file; the script is
#: called as github-script calls it: the body of an async function of ``require``, ``github`` and ``context``.
OCTOKIT = r"""
const fs = require('fs');
const [file, issue_number] = [process.argv[2], 7];
const state = JSON.parse(fs.readFileSync(file, 'utf8'));
const page = (items, {per_page = 30, page = 1}) => items.slice((page - 1) * per_page, page * per_page);
const github = {
  paginate: async (method, params) => {
    const out = [];
    for (let n = 1; ; n++) {
      const {data} = await method({...params, page: n});
      out.push(...data);
      if (data.length < (params.per_page || 30)) return out;
    }
  },
  rest: {issues: {
    listComments: async (p) => ({data: page(state.comments.filter(c => c.issue === p.issue_number), p)}),
    createComment: async (p) => {
      const c = {id: state.comments.length + 1, issue: p.issue_number, body: p.body,
                 user: {login: 'github-actions[bot]', type: 'Bot'}};
      state.comments.push(c);
      return {data: c};
    },
    updateComment: async (p) => {
      const c = state.comments.find(c => c.id === p.comment_id);
      c.body = p.body;
      return {data: c};
    },
  }},
};
const context = {repo: {owner: 'o', repo: 'r'}, issue: {owner: 'o', repo: 'r', number: issue_number}};
const AsyncFunction = Object.getPrototypeOf(async () => null).constructor;
new AsyncFunction('require', 'github', 'context', process.env.SCRIPT)(require, github, context)
  .then(() => fs.writeFileSync(file, JSON.stringify(state)));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the comment step's script")
def test_every_push_updates_the_one_comment_on_the_pull_request(tmp_path):
    (step,) = [s for s in workflow()["jobs"]["gate"]["steps"] if s.get("name") == "Comment on the pull request"]
    (tmp_path / "octokit.js").write_text(OCTOKIT, encoding="utf-8")
    comments = tmp_path / "comments.json"
    # Someone quoting the marker, another workflow's comment, 120 more: none of them is the gate's.
    others = [{"id": 1, "issue": 7, "body": "<!-- judge-gate --> quoted", "user": {"login": "ann", "type": "User"}},
              {"id": 2, "issue": 7, "body": "coverage: 80%", "user": {"login": "github-actions[bot]", "type": "Bot"}}]
    others += [{"id": 3 + i, "issue": 7, "body": "lgtm", "user": {"login": "bo", "type": "User"}} for i in range(120)]
    comments.write_text(json.dumps({"comments": others}), encoding="utf-8")
    for verdict in ("fail", "pass"):
        (tmp_path / "gate.md").write_text(f"### judge gate: {verdict}\n", encoding="utf-8")
        subprocess.run(["node", "octokit.js", str(comments)], cwd=tmp_path, env={**os.environ, "SCRIPT": step["with"]["script"]},
                       check=True, timeout=60)
        state = json.loads(comments.read_text(encoding="utf-8"))["comments"]
        assert state[:len(others)] == others and len(state) == len(others) + 1
        assert state[-1]["body"] == f"<!-- judge-gate -->\n### judge gate: {verdict}\n"
