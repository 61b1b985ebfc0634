"""The unit of work (``judge.scorers.units``): every method that runs a model states its work as requests,
the engine cuts a pass into units that are data only, and whoever answers them (this process, or workers
elsewhere, in any order) gives the rows a local run gives.

The mock backend answers (engine logic); real templates, selectors, data and SQLite caches. The real
model's side of the same code is covered by tests/test_schedule.py and tests/test_prefix_reuse.py.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from judge.backends import create_backend
from judge.backends.base import LabelDist, TokenLogprobs
from judge.backends.registry import backend_cost
from judge.backends.requests import Answer, Request, ask
from judge.cli.options import resolve_quality
from judge.core.config import GenerateConfig
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.datasets import load_benchmark, load_items
from judge.datasets.groups import GroupIndex
from judge.engine import BackendPool, MethodSpec, build_scorer, score_rows
from judge.engine.cache import cache_key, hidden_key, request_key, sequence_key
from judge.prompts.templates import get_prompt
from judge.scorers.likelihood import LikelihoodScorer
from judge.scorers.llm import LLMJudge
from judge.scorers.units import Executor, LocalExecutor, Unit, plan, run_lanes

ROOT = Path(__file__).resolve().parents[1]


def _mock():
    return create_backend("mock", None, GenerateConfig(cache=False))


class Reversed(Executor):
    """An executor that answers a window's units last to first, each after pickling it (as a worker
    elsewhere receives it): the scores must not depend on where or in what order units are answered."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.shipped: list[Unit] = []

    def run(self, units: Sequence[Unit]) -> Iterator[tuple[int, Sequence[Answer]]]:
        for i in reversed(range(len(units))):
            unit = pickle.loads(pickle.dumps(units[i]))
            self.shipped.append(unit)
            yield i, pickle.loads(pickle.dumps(ask(self.backend, unit.requests)))


def test_units_are_data_and_any_executor_gives_the_local_scores(data_dir):
    """Three lanes of one backend (two prompts of the criteria family and a likelihood signal, whose items
    need two requests each), windows of four items, batches of three: the units pickle, each holds one lane's
    requests, and answered in reverse order after a round trip through pickle they give every lane the
    scores it gets alone, in its items' order."""
    items = load_benchmark("dailydialog-zhao", data_dir)[:9]
    backend = _mock()
    lanes = [LLMJudge(get_prompt("yesno-criteria"), backend, batch_size=3, window=4),
             LLMJudge(get_prompt("yesno-aspect-relevant"), backend, batch_size=3, window=4),
             LikelihoodScorer(backend, "pmi")]
    windows = list(plan(lanes[:2], [items, items], window=4))
    assert [sum(len(w) for w in win.works) for win in windows] == [8, 8, 2]  # 4 + 4 + 1 items per lane
    for win in windows:
        assert all(len(u.requests) <= 3 and len(u.feeds) == len(u.requests) for u in win.units)
    alone = [list(lane.score(items)) for lane in lanes]
    executor = Reversed(backend)
    got: dict[int, list] = {0: [], 1: [], 2: []}
    for lane, score in run_lanes(lanes[:2], [items, items], executor=executor, window=4):
        got[lane].append(score)
    for lane, score in run_lanes(lanes[2:], [items], executor=executor):
        got[2 + lane].append(score)
    assert executor.shipped and all(isinstance(u, Unit) for u in executor.shipped)
    assert {r.kind for u in executor.shipped for r in u.requests} == {"label", "sequence"}
    for lane in range(3):
        assert [s.item_id for s in got[lane]] == [it.id for it in items]
        assert [(s.value, s.label_probs, s.error) for s in got[lane]] == [(s.value, s.label_probs, s.error)
                                                                          for s in alone[lane]]


def test_every_request_kind_has_its_cache_key_and_its_answer():
    """``request_key`` is the key the cache stores each kind under (a driver that answers requests
    elsewhere looks them up with it), and ``ask`` answers a mixed list in order, one call per run of a kind."""
    backend = _mock()
    label = Request("label", _prompt(), ("Yes", "No"), 5)
    hidden = Request("hidden", _prompt(), ("Yes", "No"), 5)
    seq = Request("sequence", _prompt(), continuation=" fine")
    assert request_key(backend, label) == cache_key(backend, label.prompt, ["Yes", "No"], 5)
    assert request_key(backend, hidden) == hidden_key(backend, hidden.prompt, ["Yes", "No"], 5)
    assert request_key(backend, seq) == sequence_key(backend, seq.prompt, " fine")
    answers = ask(backend, [label, seq, hidden, label])
    assert isinstance(answers[0], LabelDist) and isinstance(answers[1], TokenLogprobs)
    assert answers[2].dist == answers[0] and answers[3] == answers[0]  # type: ignore[union-attr]


def _prompt():
    from judge.backends.base import Prompt

    return Prompt("Conversation:\nUser: Hi!\nNext system reply: Hello.\nAnswer:")


def test_the_local_executor_is_one_backend_call_per_unit():
    backend = _mock()
    judge = LLMJudge(get_prompt("yesno"), backend, batch_size=2)
    items = [Item(id=str(i), level="turn", context=(Turn(USER, f"Hi {i}!"),), response="Hello.") for i in range(5)]
    (win,) = plan([judge], [items])
    seen_before = backend.prompts_seen
    answered = list(LocalExecutor(backend).run(win.units))
    assert [len(u.requests) for u in win.units] == [2, 2, 1]
    assert [i for i, _ in answered] == [0, 1, 2] and backend.prompts_seen - seen_before == 5


def test_backends_declare_how_their_cost_is_known():
    """``--check`` reads ``Backend.cost`` from the class (nothing is built): llama.cpp replays, the mock
    costs nothing, a hosted API is not this machine's time, the others are not counted."""
    assert [backend_cost(n) for n in ("llamacpp", "mock", "openai", "transformers", "vllm")] == [
        "replay", "free", "hosted", "unknown", "unknown"]


def test_judge_score_streams_a_jsonl_file_and_writes_the_rows_of_the_whole_file_path(tmp_path):
    """A file streamed through a method that scores each item alone (read three times: checked and grouped,
    checked against the method, scored) gives the bytes the engine gives on the whole file loaded at once:
    the same rows with the same groups (found on hashes of the texts) and scales."""
    data = tmp_path / "logs.jsonl"
    lines = []
    for i in range(40):
        context = [{"speaker": "user", "text": f"Hello {i // 3}"}, {"speaker": "system", "text": f"Hi there {i // 3}."},
                   {"speaker": "user", "text": f"Question {i}?"}]
        record = {"id": f"x{i}", "context": context[: 1 + i % 3], "response": f"Answer {i}.",
                  "scores": {"Overall": [1 + i % 5]}}
        if i == 7:
            record["scales"] = {"overall": [1, 5]}
        if i == 11:
            record["group"] = "mine"
        lines.append(json.dumps(record))
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(data), "--backend", "mock", "--quality",
                           "overall", "--no-cache", "--no-progress", "-o", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    items = load_items(data)
    assert len({it.group for it in items}) > 3  # prefixes join some items' conversations, not all
    spec = MethodSpec(backend="mock", generate=GenerateConfig(cache=False))
    quality = resolve_quality("overall", items)
    assert quality is not None
    scorer = build_scorer(spec, items, quality, backends=BackendPool())
    expected = "".join(row.to_json() + "\n" for row in score_rows(scorer, items, spec.name, quality.name, 0))
    assert out.read_text(encoding="utf-8") == expected


def test_groups_on_hashes_break_a_tie_by_the_texts():
    """Two conversations joined by a pair of turns shown at different positions, with equally long but
    different contexts: the group is named by the first in text order, whatever the file order."""
    def item(i: str, *texts: str, response: str) -> Item:
        return Item(id=i, level="turn", context=tuple(Turn(USER if k % 2 == 0 else SYSTEM, t) for k, t in enumerate(texts)),
                    response=response)

    a = item("a", "zeta", "shared one", response="shared two")
    b = item("b", "shared one", "shared two", response="alpha")
    for order in ((a, b), (b, a)):
        index = GroupIndex()
        for it in order:
            index.add(it)
        names = index.names(lambda idx, its=order: {i: tuple(t.text for t in its[i].context) for i in idx})
        assert names[0] == names[1]
    assert names[0] == "conv:" + hashlib.sha1(b"shared one\x1eshared two").hexdigest()[:16]


def test_the_memory_benchmark_reports_peak_memory_and_items_per_second(tmp_path):
    """benchmarks/memory.py at its smallest: a row per size with its peak resident memory and items/s."""
    proc = subprocess.run([sys.executable, "benchmarks/memory.py", "--items", "200", "400", "--keep", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["200", "400"] and rows[-1][-1].endswith("x"), proc.stdout
    assert all(float(r[2]) > 10 for r in rows), proc.stdout  # a Python process: tens of MB at least
    assert len((tmp_path / "scores-400.jsonl").read_text().splitlines()) == 400


def test_an_executor_that_loses_a_unit_stops_the_pass():
    """A unit never answered (a worker lost and not replaced) is an error, never a missing row."""
    backend = _mock()
    judge = LLMJudge(get_prompt("yesno"), backend, batch_size=2)
    items = [Item(id=str(i), level="turn", context=(Turn(USER, f"Hi {i}!"),), response="Hello.") for i in range(5)]

    class Lossy(Reversed):
        def run(self, units):
            for i, answers in super().run(units):
                if i != 1:
                    yield i, answers

    with pytest.raises(RuntimeError, match="answered 2 of a window's 3 units"):
        list(run_lanes([judge], [items], executor=Lossy(backend)))


def test_a_layer_that_answers_elsewhere_gets_every_pass_on_its_backend():
    """A backend whose layer registered an executor (``answer_elsewhere``: a Ray driver's) has every pass on it,
    its own ``score`` included, answered by that executor; another backend's passes stay in this process."""
    from judge.backends.layer import Layer
    from judge.scorers.units import answer_elsewhere

    items = [Item(id=str(i), level="turn", context=(Turn(USER, f"Hi {i}!"),), response="Hello.") for i in range(5)]
    inner = _mock()
    shipped: list[Reversed] = []

    def elsewhere(backend, costs):
        shipped.append(Reversed(backend.inner))
        return shipped[-1]

    layer = Layer(inner)
    answer_elsewhere(layer, elsewhere)
    there = list(LLMJudge(get_prompt("yesno"), layer, batch_size=2).score(items))
    here = list(LLMJudge(get_prompt("yesno"), inner, batch_size=2).score(items))
    assert len(shipped) == 1 and len(shipped[0].shipped) == 3
    assert [(s.item_id, s.value) for s in there] == [(s.item_id, s.value) for s in here]
