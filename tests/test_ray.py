"""Runs on a real Ray cluster: a head and a second node on 127.0.0.1, one CPU each, in a network namespace of
their own (tools/ray_cluster.py: on Linux Ray binds to the machine's address, so the namespace keeps every
packet on loopback), started once for the module.

* A shipped config of each kind of work (its prompts on the mock backend; the heads' on Qwen-1.5B), run with
  ``--ray`` on the cluster (the actors compute every answer), writes the rows its local run writes, byte for
  byte, each run on a cache of its own: the two caches hold the same answers under the same keys. The
  documented commands (docs/distributed.md) and ``judge bench --ray`` too.
* SmolLM2's answers computed on the actors equal this process's: the killed-actor run is compared with a
  local run of its own cache.
* An actor killed mid-run is replaced, its unit of work answered by the others, and the rows stay the same;
  a driver killed mid-run resumes from its cache on the next run.
* The mock backend covers the planner's edge cases: injected failures (exit 3, the same errors), one item,
  requests of every kind (``sequence`` for likelihood signals, ``hidden`` for a head), one prompt asked by two
  methods of a pass, and a rerun whose every answer is cached (nothing shipped).

Slow suite: the cluster takes about 30 s to start and each run starts its actors.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import skip_unless_required
from tests.test_shipped_configs import ARGS, CONFIGS
from tools.ray_cluster import ADDRESS, Cluster, why_not

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    skip_unless_required(why_not(), "JUDGE_REQUIRE_RAY", "Ray")
    home = tmp_path_factory.mktemp("ray-nodes")
    # The actors' own files (llama.cpp's rate, kept per node) go here, not to the user's cache folder.
    c = Cluster(env={"JUDGE_CACHE": str(home / "node-cache.sqlite")})
    yield c
    c.stop()


def _local(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=1800, env={**os.environ, "JUDGE_CACHE": str(cache)})


def _on_cluster(cluster: Cluster, args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    cluster.env["JUDGE_CACHE"] = str(cache)  # the driver's cache
    return cluster.judge(*args, "--ray", ADDRESS, "--ray-cpus", "1")  # a node has one CPU, whatever a config's threads


def _rows(out: Path) -> dict[str, bytes]:
    """Every row file of a results folder (the cells' items/ and the pairwise cells' compare/), by its path in
    the folder."""
    return {str(p.relative_to(out)): p.read_bytes() for folder in ("items", "compare")
            for p in sorted((out / folder).rglob("*.jsonl"))}


def _failed(out: Path) -> int:
    """Rows of a results folder that failed (failures are never cached: a rerun asks again)."""
    return sum(bool(json.loads(line).get("error")) for p in (out / "items").rglob("*.jsonl")
               for line in p.read_text(encoding="utf-8").splitlines() if line.strip())


def _per_node(stderr: str) -> dict[str, tuple[int, int]]:
    """The last 'done per node' line: (units, items) by node."""
    lines = [line for line in stderr.splitlines() if line.startswith("ray: done per node: ")]
    assert lines, stderr[-2000:]
    found = re.findall(r"node (\w+) \([\d.]+\): (\d+) units, (\d+) items", lines[-1])
    return {node: (int(u), int(i)) for node, u, i in found}


def _ray_args(name: str) -> list[str]:
    """The shipped config's test arguments (tests/test_shipped_configs.py) with at most 2 items per set. The five
    configs CI runs send their prompts to the mock backend: what CI checks here is how the engine shares a
    config's cells out and reads their answers back, which no backend changes (real models on the actors in CI:
    SmolLM2 in the killed-actor test, the committed heads on Qwen-1.5B, one set). The others (``long``) run as
    tests/test_shipped_configs.py runs them: the embedded SmolLM2 (or the config's packaged Qwen) on the actors."""
    args = list(ARGS[name])
    if "--limit" in args:  # a round of [[compare]] cells sizes itself by contexts
        at = args.index("--limit")
        args[at + 1] = str(min(int(args[at + 1]), 2))
    if name.startswith("heads_"):
        at = args.index("--datasets")
        args[at + 1] = "DGR"
    elif "--backend" not in args and name in ON_THE_CLUSTER:
        args += ["--backend", "mock"]
    return args


#: Every shipped config runs on the cluster (`pytest -m long`, the model its own test runs); CI runs one per kind
#: of work the actors answer: label requests, likelihood (sequence) requests and ensembles with classic members on
#: the driver, hidden states for the committed heads on Qwen-1.5B, rationales (reason requests) and pairwise
#: cells (examples are chosen on the driver, before the units are cut: Table 5's k-shot cells are label requests).
ON_THE_CLUSTER = ["dstc10_zeroshot", "cpu_leaderboard_dev_q15_r4", "heads_q15_dev", "reason_q15_dev",
                  "pairwise_dev_q15"]


def test_the_cluster_configs_are_shipped():
    assert set(ON_THE_CLUSTER) <= {p.stem for p in CONFIGS}


def _cached(path: Path) -> dict[tuple[str, str], object]:
    """Every answer a cache file holds: (table, key) -> the stored value, without the work it took (when it was
    stored, and ``n_evaluated_tokens``: how much of the prompt the process that answered it had to evaluate,
    which depends on what that process evaluated just before, not on the answer)."""
    import sqlite3

    def answer(value: str) -> object:
        read = json.loads(value)
        return {k: v for k, v in read.items() if k != "n_evaluated_tokens"} if isinstance(read, dict) else read

    db = sqlite3.connect(path)
    try:
        return {(table, key): answer(value) for table in ("dists", "sequences", "hidden", "reasoned")
                for key, value in db.execute(f"SELECT key, value FROM {table}")}
    finally:
        db.close()


@pytest.mark.parametrize("config", [pytest.param(p, id=p.stem, marks=() if p.stem in ON_THE_CLUSTER else pytest.mark.long)
                                    for p in CONFIGS])
def test_a_shipped_config_on_the_cluster_writes_the_local_rows(config: Path, cluster: Cluster, tmp_path: Path,
                                                               data_dir: Path):
    """The run on the cluster (the actors compute every answer) and the local run, each on a cache of its own:
    the same rows, byte for byte, and the two cache files hold the same answers under the same keys (a key
    the driver named differently, or an answer an actor computed differently, would differ). On the mock
    backend that checks how the engine shares a config's cells out and reads their answers back; in
    heads_q15_dev the answers are Qwen-1.5B's, computed on the actors and here."""
    run = ["run", str(config), "--data-dir", str(data_dir), "--no-progress", *_ray_args(config.name)]
    remote = _on_cluster(cluster, [*run, "-o", str(tmp_path / "ray")], tmp_path / "ray.sqlite")
    assert remote.returncode == 0, remote.stderr[-3000:]
    local = _local([*run, "-o", str(tmp_path / "local")], tmp_path / "local.sqlite")
    assert local.returncode == 0, local.stderr[-3000:]
    rows = _rows(tmp_path / "ray")
    assert rows and rows == _rows(tmp_path / "local")
    if re.search(r"cache: (\d+) hits, (\d+) misses", local.stderr):  # a config of model methods
        assert sum(units for units, _ in _per_node(remote.stderr).values()) > 0  # the actors answered
        answers = _cached(tmp_path / "ray.sqlite")
        assert answers and answers == _cached(tmp_path / "local.sqlite")


def test_both_nodes_work_and_a_killed_actor_is_replaced(cluster: Cluster, tmp_path: Path, data_dir: Path):
    """SmolLM2 on 24 items of one set (one pass): both nodes answer units; one actor is killed (SIGKILL, as the
    OOM killer or a lost node ends it) while it holds work: the run says so, gives that work to the other
    actor, starts a new one, and writes the local rows."""
    run = ["run", str(ROOT / "benchmarks" / "configs" / "dstc10_zeroshot.toml"), "--data-dir", str(data_dir),
           "--no-progress", "--datasets", "DZ", "--limit", "24"]
    local = _local([*run, "-o", str(tmp_path / "local")], tmp_path / "local.sqlite")
    assert local.returncode == 0, local.stderr[-3000:]
    cluster.env["JUDGE_CACHE"] = str(tmp_path / "ray.sqlite")
    proc = cluster.popen([sys.executable, "-m", "judge", *run, "-o", str(tmp_path / "ray"), "--ray", ADDRESS])
    assert proc.stderr is not None
    lines: list[str] = []
    ready: list[int] = []
    for line in proc.stderr:
        lines.append(line)
        if m := re.search(r"ray: actor \d+ on node \w+ \(.*\), pid (\d+): ready", line):
            ready.append(int(m.group(1)))
            if len(ready) == 2:
                time.sleep(1.0)  # both hold pieces now
                cluster.kill(ready[0])
                break
    rest = proc.communicate(timeout=1800)[1]
    stderr = "".join(lines) + rest
    assert proc.returncode == 0, stderr[-3000:]
    died = re.search(r"ray: actor \d+ on node \w+ \(.*\), pid (\d+) died \(.*\); (\d+) units of work go to the others",
                     stderr)
    assert died and int(died.group(1)) == ready[0] and int(died.group(2)) >= 1, stderr[-3000:]
    assert len(re.findall(r"pid \d+: ready", stderr)) == 3  # the replacement started
    nodes = _per_node(stderr)
    assert len(nodes) == 2 and all(units > 0 for units, _ in nodes.values()), nodes
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")


def test_a_killed_driver_resumes_from_its_cache(cluster: Cluster, tmp_path: Path, data_dir: Path):
    """A config naming its cluster in ``[run]``, on the mock backend with 150 ms per prompt: the driver is
    killed (SIGKILL) once the actors answer; the next run serves what they had answered from the cache,
    computes the rest, and writes the local rows."""
    config = tmp_path / "slow.toml"
    config.write_text(f'''name = "slow"
datasets = ["DZ"]
qualities = ["overall"]
limit = 40

[[methods]]
name = "yesno"
prompt = "yesno"
backend = "mock"
options = {{ latency_ms = 150 }}

[run]
ray = "{ADDRESS}"
ray_actors = 2
''')
    run = ["run", str(config), "--data-dir", str(data_dir), "--no-progress"]
    local_config = tmp_path / "local.toml"
    local_config.write_text(config.read_text().split("[run]")[0])
    local = _local(["run", str(local_config), "--data-dir", str(data_dir), "--no-progress", "-o",
                    str(tmp_path / "local")], tmp_path / "local.sqlite")
    assert local.returncode == 0, local.stderr[-3000:]
    cluster.env["JUDGE_CACHE"] = str(tmp_path / "ray.sqlite")
    proc = cluster.popen([sys.executable, "-m", "judge", *run, "-o", str(tmp_path / "ray")])
    assert proc.stderr is not None
    for line in proc.stderr:
        if "ready" in line:
            time.sleep(2.0)
            break
    os.kill(cluster.started(proc), 9)  # the driver (Ray then ends the actors it owned)
    proc.wait(timeout=60)
    again = cluster.judge(*run, "-o", str(tmp_path / "ray"))
    assert again.returncode == 0, again.stderr[-3000:]
    hits = int(re.search(r"judge: cache: (\d+) hits, (\d+) misses", again.stderr).group(1))  # type: ignore[union-attr]
    assert 0 < hits < 40
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")


@pytest.fixture(scope="module")
def head(tmp_path_factory, data_dir: Path) -> Path:
    """A head on the mock backend's hidden states (``judge fit``), for a method whose requests are ``hidden``."""
    path = tmp_path_factory.mktemp("head") / "head.json"
    done = _local(["fit", "DZ", "--data-dir", str(data_dir), "--backend", "mock", "--prompt", "yesno-criteria",
                   "-o", str(path), "--no-progress"], path.with_suffix(".sqlite"))
    assert done.returncode == 0, done.stderr[-2000:]
    return path


CASES = {
    "failures": ["--backend-option", "fail_rate=0.3"],  # hash-chosen: the same prompts fail wherever they run
    "one-item": ["--limit", "1"],
    "likelihood": ["--likelihood", "pmi"],  # sequence requests, several per item
    "ensemble": ["--member", "prompt=yesno", "--member", "prompt=rating", "--member", "prompt=rating,rule=expected,name=r2"],
    "head": ["--prompt", "yesno-criteria", "--head", "HEAD"],
}


#: CI runs the cases whose answers are not the plain label requests the configs above send (failures, hidden
#: states); `pytest -m long` all of them.
@pytest.mark.parametrize("case", [pytest.param(c, marks=() if c in ("failures", "head") else pytest.mark.long)
                                  for c in CASES])
def test_judge_score_on_the_cluster_writes_the_local_rows(case: str, cluster: Cluster, head: Path, tmp_path: Path):
    """The rows (and exit code) of ``judge score`` on the mock backend are the local ones; a rerun finds every
    answer in the cache and ships nothing."""
    args = ["score", str(EXAMPLES), "--backend", "mock", "--format", "jsonl", "--no-progress",
            *(str(head) if a == "HEAD" else a for a in CASES[case])]
    local = _local(args, tmp_path / "local.sqlite")
    assert local.returncode in (0, 3), local.stderr[-2000:]
    first = _on_cluster(cluster, args, tmp_path / "ray.sqlite")
    assert (first.returncode, first.stdout) == (local.returncode, local.stdout), first.stderr[-3000:]
    assert len(local.stdout.splitlines()) == (1 if case == "one-item" else 12)
    errors = [json.loads(r)["error"] for r in local.stdout.splitlines()]
    assert any(errors) == (case == "failures")
    again = _on_cluster(cluster, args, tmp_path / "ray.sqlite")
    assert (again.returncode, again.stdout) == (local.returncode, local.stdout)
    hits, misses = map(int, re.search(r"cache: (\d+) hits, (\d+) misses", again.stderr).groups())  # type: ignore[union-attr]
    failed = sum(e is not None for e in errors)  # never cached: shipped again
    assert hits > 0 and misses == failed
    assert ("ray: done per node" in again.stderr) == bool(failed), again.stderr[-2000:]


def test_a_prompt_two_methods_ask_in_one_pass_is_shipped_once(cluster: Cluster, tmp_path: Path, data_dir: Path):
    """Two methods that send the same prompts (they differ in how the answer becomes a score) run in one pass:
    each prompt is evaluated once on the cluster, the second method served as a local run serves it."""
    config = tmp_path / "twice.toml"
    config.write_text('''name = "twice"
datasets = ["DZ"]
qualities = ["overall"]
limit = 8

[defaults]
backend = "mock"

[[methods]]
name = "topk"
prompt = "rating"

[[methods]]
name = "expected"
prompt = "rating"
rule = "expected"
''')
    run = ["run", str(config), "--data-dir", str(data_dir), "--no-progress"]
    local = _local([*run, "-o", str(tmp_path / "local")], tmp_path / "local.sqlite")
    remote = _on_cluster(cluster, [*run, "-o", str(tmp_path / "ray")], tmp_path / "ray.sqlite")
    assert remote.returncode == local.returncode == 0, remote.stderr[-3000:]
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
    assert sum(items for _, items in _per_node(remote.stderr).values()) == 8


def _documented() -> list[list[str]]:
    """The commands of docs/distributed.md's first example block (each ``judge ... --ray auto ...``)."""
    text = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0])[1:] for line in block.splitlines() if line.startswith("judge ")]


#: CI runs the documented commands on the mock backend (what they add is finding the cluster and sharing the work
#: out: the answers of real models on the actors are the shipped configs' and the killed-actor test's);
#: `pytest -m long` as written, with SmolLM2.
@pytest.mark.parametrize("backend", [pytest.param("mock"), pytest.param("as-written", marks=pytest.mark.long)])
def test_the_documented_commands_run_on_the_cluster(cluster: Cluster, tmp_path: Path, data_dir: Path, backend: str):
    """docs/distributed.md's ``judge run``, ``judge score`` and ``judge bench`` with ``--ray auto`` (the cluster
    found through ``RAY_ADDRESS``, as on a cluster's machine): each writes the rows of the same command
    without Ray (run and bench: the local command reads the actors' answers from the cache, so every key must
    be the local one; score: computed here too, 12 items)."""
    extra = ["--backend", "mock"] if backend == "mock" else []
    commands = {args[0]: [*(str(data_dir) if a == "../shared/data" else a for a in args), *extra]
                for args in _documented()}
    assert sorted(commands) == ["bench", "run", "score"]
    out = {"run": ["-o"], "bench": ["--results"], "score": ["--format", "jsonl", "-o"]}
    for name, args in commands.items():
        plain = [a for i, a in enumerate(args) if not (a.startswith("--ray") or (i and args[i - 1].startswith("--ray")))]
        cache = tmp_path / f"{name}.sqlite"
        remote = _on_cluster_as_is(cluster, [*args, *out[name], str(tmp_path / f"{name}-ray")], cache)
        assert remote.returncode == 0, remote.stderr[-3000:]
        assert sum(units for units, _ in _per_node(remote.stderr).values()) > 0
        local = _local([*plain, "--no-progress", *out[name], str(tmp_path / f"{name}-local")],
                       tmp_path / "score-local.sqlite" if name == "score" else cache)
        assert local.returncode == 0, local.stderr[-3000:]
        if name == "score":
            assert (tmp_path / "score-ray").read_bytes() == (tmp_path / "score-local").read_bytes()
        else:
            rows = _rows(tmp_path / f"{name}-ray")
            assert rows and rows == _rows(tmp_path / f"{name}-local")
            assert re.search(r"cache: \d+ hits, 0 misses", local.stderr), local.stderr[-2000:]


def _on_cluster_as_is(cluster: Cluster, args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    cluster.env["JUDGE_CACHE"] = str(cache)
    return cluster.judge(*args, "--no-progress")


def test_judge_bench_on_the_cluster_writes_the_local_rows(cluster: Cluster, tmp_path: Path, data_dir: Path):
    """``judge bench`` shares the flags: its results folder's rows on the mock backend equal the local ones."""
    args = ["bench", "DZ", "--data-dir", str(data_dir), "--backend", "mock", "--limit", "10", "--no-progress"]
    local = _local([*args, "--results", str(tmp_path / "local")], tmp_path / "local.sqlite")
    remote = _on_cluster(cluster, [*args, "--results", str(tmp_path / "ray")], tmp_path / "ray.sqlite")
    assert local.returncode == remote.returncode == 0, remote.stderr[-3000:]
    rows = _rows(tmp_path / "ray")
    assert rows and rows == _rows(tmp_path / "local")
    assert sum(items for _, items in _per_node(remote.stderr).values()) == 10


@pytest.mark.long
def test_the_scaling_benchmark_runs_as_documented(data_dir: Path):
    """benchmarks/ray_scaling.py at its smallest (SmolLM2, 4 items; it starts a cluster of its own): the three
    runs, both ratios and identical rows."""
    skip_unless_required(why_not(), "JUDGE_REQUIRE_RAY", "Ray")
    proc = subprocess.run([sys.executable, "benchmarks/ray_scaling.py", "--limit", "4", "--model", "smollm2-135m-instruct",
                           "--data-dir", str(data_dir)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert len(re.findall(r"items/s  driver peak RSS", proc.stdout)) == 3
    assert "two actors vs one actor:" in proc.stdout and "two actors vs one 2-thread run:" in proc.stdout
    assert "rows byte-identical across the three runs: True" in proc.stdout


def _compare_documented() -> list[str]:
    """docs/distributed.md's ``judge compare ... --ray auto`` command, without its Ray flags and output."""
    text = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    [line] = [x for x in text.splitlines() if x.startswith("judge compare ")]
    args = shlex.split(line)[1:]
    return [a for i, a in enumerate(args) if not (a.startswith(("--ray", "-o")) or args[i - 1].startswith(("--ray", "-o")))]


def test_judge_compare_on_the_cluster_writes_the_local_rows(cluster: Cluster, tmp_path: Path):
    """The documented ``judge compare --ray`` (on the mock backend): both orders of every pair and the pointwise
    method beside them are answered on the two-node cluster, and the pair rows, the summary and the printed
    report equal the local run's, each run on its own cache (so the actors computed every answer)."""
    args = [*_compare_documented(), "--backend", "mock", "--no-progress"]
    local = _local([*args, "-o", str(tmp_path / "local.jsonl")], tmp_path / "local.sqlite")
    remote = _on_cluster(cluster, [*args, "-o", str(tmp_path / "ray.jsonl")], tmp_path / "ray.sqlite")
    assert local.returncode == remote.returncode == 0, remote.stderr[-3000:]
    assert remote.stdout == local.stdout and "win rate" in local.stdout.lower()
    for suffix in (".jsonl", ".summary.json"):
        ray, here = (tmp_path / f"{name}{suffix}" for name in ("ray", "local"))
        assert ray.read_bytes() == here.read_bytes() and here.stat().st_size > 0
    assert sum(units for units, _ in _per_node(remote.stderr).values()) > 0, remote.stderr[-2000:]


def test_judge_fit_on_the_cluster_learns_the_local_head(cluster: Cluster, tmp_path: Path, data_dir: Path):
    """``judge fit --ray`` reads the hidden states on the actors (the mock backend's, one set) and writes the head
    a local fit writes, each on its own cache."""
    args = ["fit", "DZ", "--data-dir", str(data_dir), "--backend", "mock", "--prompt", "yesno-criteria", "--no-progress"]
    local = _local([*args, "-o", str(tmp_path / "local.json")], tmp_path / "local.sqlite")
    remote = _on_cluster(cluster, [*args, "-o", str(tmp_path / "ray.json")], tmp_path / "ray.sqlite")
    assert local.returncode == remote.returncode == 0, remote.stderr[-3000:]
    assert (tmp_path / "ray.json").read_bytes() == (tmp_path / "local.json").read_bytes()
    assert sum(units for units, _ in _per_node(remote.stderr).values()) > 0, remote.stderr[-2000:]
