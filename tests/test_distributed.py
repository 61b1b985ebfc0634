"""Running on a Ray cluster, the parts that need no cluster: how a window's pieces are shared out among actors
(judge.distributed.segments), and the typed options of --ray (flags, the config's [run] table, the docs).

The cluster itself (two nodes in a network namespace of their own, real actors, killed actors, a killed
driver) is tested in tests/test_ray.py (slow suite).
"""

from __future__ import annotations

import argparse
import random
import re
import shlex
from pathlib import Path

import pytest

from judge.cli import build_parser, main
from judge.core.errors import InputError
from judge.distributed.segments import Segments, cuts
from judge.engine.ray_options import RAY, RayOptions, add_ray_options, ray_from_args
from judge.harness.config import parse_experiment

ROOT = Path(__file__).resolve().parents[1]


# -- segments ------------------------------------------------------------------------------------------
def test_each_worker_gets_a_contiguous_run_cut_where_pieces_share_least():
    """Twelve pieces of equal cost for two workers: the even cut is after the sixth, but the pieces around it
    share a long prefix (one family) and the cut one piece later shares nothing: the cut goes there (within a
    quarter of a run's cost of the even one), and each worker takes its own run front to back."""
    joins = [50.0] * 12  # joins[i]: what piece i shares with piece i - 1
    joins[7] = 0.0
    seg = Segments([5.0] * 12, joins, ["a", "b"])
    assert [r.pieces for r in seg.runs] == [list(range(7)), list(range(7, 12))]
    assert [seg.take("a"), seg.take("b"), seg.take("a")] == [0, 7, 1]
    far = [50.0] * 12
    far[10] = 0.0  # a family boundary too far from the even cut: balance wins
    assert [len(r.pieces) for r in Segments([5.0] * 12, far, ["a", "b"]).runs] == [6, 6]


def test_a_worker_that_runs_out_takes_the_back_half_of_the_largest_run():
    seg = Segments([1.0] * 8, [0.0] * 8, ["a", "b"])
    for _ in range(4):
        seg.take("b")  # b finishes its half
    taken = seg.take("b")
    assert taken is not None and taken > seg.take("a")  # b stole from the back of a's run, a keeps its front
    assert seg.left() == 8 - 4 - 2


def test_pieces_of_a_dead_worker_go_first_to_whoever_runs_out():
    seg = Segments([1.0] * 6, [0.0] * 6, ["a", "b"])
    assert seg.take("a") == 0  # a dies with piece 0 in hand and pieces 1, 2 not taken yet
    seg.give_back([0])
    seg.forget("a")
    assert [seg.take("b") for _ in range(3)] == [3, 4, 5]  # b keeps to its own run
    assert seg.take("b") == 0  # then the unanswered piece, before the rest of a's run
    assert [seg.take("c"), seg.take("b"), seg.take("c")] == [1, 2, None]  # a newcomer (a's replacement) too


@pytest.mark.parametrize("seed", range(20))
def test_every_piece_is_taken_exactly_once_whatever_dies(seed):
    """Random costs, workers taking pieces in random order, some dying with pieces in hand and replaced: every
    piece is answered exactly once."""
    rng = random.Random(seed)
    n = rng.randint(0, 40)
    seg = Segments([rng.uniform(1, 10) for _ in range(n)], [rng.uniform(0, 100) for _ in range(n)],
                   list(range(rng.randint(1, 4))))
    workers = list(range(len(seg.workers)))
    held: dict[int, list[int]] = {w: [] for w in workers}
    answered: list[int] = []
    fresh = 100
    while seg.left() or any(held.values()):
        w = rng.choice(workers)
        if rng.random() < 0.05 and len(workers) > 0:  # w dies: its pieces come back, a new worker replaces it
            seg.give_back(held.pop(w))
            seg.forget(w)
            workers.remove(w)
            workers.append(fresh)
            held[fresh] = []
            fresh += 1
            continue
        if held[w] and rng.random() < 0.5:
            answered.append(held[w].pop(0))
        elif (k := seg.take(w)) is not None:
            held[w].append(k)
        elif held[w]:
            answered.append(held[w].pop(0))
    assert sorted(answered) == list(range(n))


def test_cuts_give_one_piece_each_when_there_are_few():
    assert cuts([1.0, 1.0], [0.0, 0.0], [0, 1], 3) == [0, 1, 2]
    assert cuts([5.0], [0.0], [0], 2) == [0, 1]
    assert cuts([], [], [], 2) == [0, 0]


# -- options -------------------------------------------------------------------------------------------
def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_ray_options(p)
    return p.parse_args(argv)


def test_flags_give_the_options_and_override_the_config():
    assert ray_from_args(_args()) is None
    assert ray_from_args(_args("--ray", "local", "--ray-actors", "3")) == RayOptions("local", actors=3)
    base = RayOptions("auto", actors=2, cpus=2)
    assert ray_from_args(_args("--ray-cpus", "1"), base) == RayOptions("auto", actors=2, cpus=1)
    assert ray_from_args(_args("--ray-gpus", "1", "--ray", "10.0.0.1:6379"), base) == RayOptions(
        "10.0.0.1:6379", actors=2, cpus=2, gpus=1.0)


def test_a_per_actor_flag_without_a_cluster_is_refused():
    with pytest.raises(InputError, match=r"--ray-actors.*give --ray ADDRESS too"):
        ray_from_args(_args("--ray-actors", "2"))


def test_per_actor_flag_without_ray_exits_2_before_any_model_loads(capsys):
    code = main(["score", str(ROOT / "examples" / "dialogues.jsonl"), "--backend", "mock", "--ray-cpus", "2"])
    assert code == 2
    assert "--ray-cpus" in capsys.readouterr().err


def _config(run: dict) -> dict:
    return {"datasets": ["DZ"], "methods": [{"name": "m", "backend": "mock"}], "run": run}


def test_the_run_table_of_a_config():
    assert parse_experiment(_config({})).ray is None
    exp = parse_experiment(_config({"ray": "auto", "ray_actors": 4, "ray_gpus": 1}), "x.toml")
    assert exp.ray == RayOptions("auto", actors=4, gpus=1.0)


@pytest.mark.parametrize(("run", "message"), [
    ({"ray": "auto", "ray_actor": 2}, r"run\.ray_actor.*did you mean 'ray_actors'"),
    ({"ray_actors": 2}, r"run\.ray_actors.*give ray = ADDRESS too"),
    ({"ray": "auto", "ray_actors": "two"}, r"run\.ray_actors.*must be an integer"),
    ({"ray": "auto", "ray_cpus": 0}, r"run\.ray_cpus.*must be >= 1"),
    ({"ray": ""}, r"run\.ray.*must name a cluster"),
])
def test_a_bad_run_table_names_the_key(run, message):
    with pytest.raises(InputError, match=message) as err:
        parse_experiment(_config(run), "x.toml")
    assert "x.toml" in str(err.value)


def test_the_docs_list_every_option_with_its_flag_and_key():
    text = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    for flag, key, _, _ in RAY.rows():
        assert f"`{flag}`" in text and f"`{key}`" in text, flag


def test_every_judge_command_of_the_docs_parses():
    """Each ``judge ...`` line of docs/distributed.md's code blocks is accepted by the real parser, with the Ray
    options it names (tests/test_ray.py runs the first block's on a cluster)."""
    text = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    lines = [line.split("  #", 1)[0] for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)
             for line in block.splitlines() if line.startswith("judge ")]
    assert len(lines) >= 4
    for line in lines:
        args = build_parser().parse_args(shlex.split(line)[1:])
        assert ray_from_args(args) is not None, line


def test_ray_with_a_providers_batch_is_refused_before_anything_runs(monkeypatch, tmp_path, capsys):
    """A batched method's requests are answered by the provider, not by actors: exit 2 naming --batch."""
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    code = main(["score", str(ROOT / "examples" / "dialogues.jsonl"), "--backend", "openai", "--model", "gpt-4o-mini",
                 "--batch", "--cache-path", str(tmp_path / "cache.sqlite"), "--ray", "auto"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--batch" in err and "Ray cluster" in err


def test_ray_with_a_cost_cap_is_refused_before_anything_runs(monkeypatch, tmp_path, capsys):
    """Each actor's purse counts its own spend: a cap cannot bound their sum, so a capped run is refused."""
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    code = main(["score", str(ROOT / "examples" / "dialogues.jsonl"), "--backend", "openai", "--model", "gpt-4o-mini",
                 "--max-cost", "100", "--cache-path", str(tmp_path / "cache.sqlite"), "--ray", "auto"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--max-cost cannot bound their sum" in err and not (tmp_path / "cache.sqlite").exists()


def test_a_worker_with_work_queued_never_takes_another_workers_only_piece():
    """Filling a worker's queue (two pieces in flight) must not steal the single piece of a worker not fed yet:
    each of two workers gets its own piece of a two-piece window."""
    seg = Segments([1.0, 1.0], [0.0, 0.0], ["a", "b"])
    assert seg.take("a") == 0
    assert seg.take("a", steal=False) is None  # a's queue is not filled from b's run
    assert seg.take("b") == 1
