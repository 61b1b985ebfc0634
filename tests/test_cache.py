"""The SQLite cache: hits and misses, zero model calls on a repeat, failures not stored, resume after
SIGKILL (real llama.cpp server), and two processes sharing one cache file at the same time."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.backends import Backend, Failure, LabelDist, Prompt
from judge.backends.base import Capabilities
from judge.engine.cache import Cache, CachedBackend, cache_key, default_cache_path
from tests.fault_server import FaultServer, expected_goodness

ROOT = Path(__file__).resolve().parents[1]
CANDS = ["Yes", "No"]


class Counting(Backend):
    """A wrapper around the real llama.cpp backend that counts the prompts it is asked to evaluate."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name, self.model_id, self.capabilities = inner.name, inner.model_id, inner.capabilities
        self.prompts: list[str] = []
        self.fail: set[str] = set()

    def label_logprobs(self, prompts, candidates, top_n=20):
        self.prompts += [p.text for p in prompts]
        return [Failure("injected") if p.text in self.fail else r
                for p, r in zip(prompts, self.inner.label_logprobs(prompts, candidates, top_n))]

    def count_tokens(self, prompt):
        return self.inner.count_tokens(prompt)

    def settings(self):
        return self.inner.settings()

    def close(self):
        pass


def test_hits_misses_and_zero_calls_on_repeat(smollm2, tmp_path):
    counting = Counting(smollm2)
    cached = CachedBackend(counting, Cache(tmp_path / "c.sqlite"))
    prompts = [Prompt("Is water wet? Answer:"), Prompt("Is fire cold? Answer:"), Prompt("Is water wet? Answer:")]
    first = cached.label_logprobs(prompts, CANDS)
    assert (cached.hits, cached.misses) == (0, 3)
    assert counting.prompts == [prompts[0].text, prompts[1].text]  # the duplicate is evaluated once
    assert first[0].logprobs == first[2].logprobs
    second = cached.label_logprobs(prompts, CANDS)
    assert (cached.hits, cached.misses) == (3, 3)
    assert len(counting.prompts) == 2  # no model call at all
    for a, b in zip(first, second):
        assert a.logprobs == b.logprobs and a.top == b.top and a.n_prompt_tokens == b.n_prompt_tokens
        assert b.n_evaluated_tokens == 0
    # different candidates or chat flag are different keys
    cached.label_logprobs([Prompt("Is water wet? Answer:")], ["Yes", "No", "yes"])
    cached.label_logprobs([Prompt("Is water wet? Answer:", chat=True)], CANDS)
    assert len(counting.prompts) == 4
    cached.cache.close()


def test_failures_are_not_cached(smollm2, tmp_path):
    counting = Counting(smollm2)
    counting.fail = {"Is fire cold?"}
    cache = Cache(tmp_path / "c.sqlite")
    cached = CachedBackend(counting, cache)
    res = cached.label_logprobs([Prompt("Is fire cold?"), Prompt("Is ice cold?")], CANDS)
    assert isinstance(res[0], Failure) and isinstance(res[1], LabelDist)
    assert len(cache) == 1
    counting.fail = set()
    res = cached.label_logprobs([Prompt("Is fire cold?"), Prompt("Is ice cold?")], CANDS)
    assert all(isinstance(r, LabelDist) for r in res)
    assert counting.prompts == ["Is fire cold?", "Is ice cold?", "Is fire cold?"]
    assert len(cache) == 2
    cache.close()


def test_key_covers_settings_and_file_is_wal(tmp_path, monkeypatch):
    class Fake:
        name, model_id = "fake", "m"
        capabilities = Capabilities(full_vocab=True)

        def __init__(self, s):
            self.s = s

        def settings(self):
            return self.s

    p = Prompt("x")
    assert cache_key(Fake({"a": 1}), p, CANDS, 20) != cache_key(Fake({"a": 2}), p, CANDS, 20)
    assert cache_key(Fake({"a": 1}), p, CANDS, 20) != cache_key(Fake({"a": 1}), p, CANDS, 5)
    assert cache_key(Fake({"a": 1}), p, CANDS, 20) == cache_key(Fake({"a": 1}), Prompt("x"), list(CANDS), 20)
    c = Cache(tmp_path / "w.sqlite")
    assert c._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    c.close()
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "env.sqlite"))
    assert default_cache_path() == tmp_path / "env.sqlite"
    monkeypatch.delenv("JUDGE_CACHE")
    assert default_cache_path() == Path.home() / ".cache" / "judge" / "cache.sqlite"


def test_the_suite_never_sees_the_real_home():
    """conftest.py points HOME (and the cache variables) at a temporary folder for the whole session."""
    import pwd

    real = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert Path.home() != real and not Path.home().is_relative_to(real)
    assert not default_cache_path().is_relative_to(real)


class NaNOn(Counting):
    """The real llama.cpp backend, except that for prompts containing ``marker`` every candidate's
    log-probability is replaced by NaN. No real model produces a NaN on demand (it takes a numerical
    blow-up, e.g. an fp16 overflow), so this wrapper injects one into an otherwise real answer."""

    def __init__(self, inner, marker: str) -> None:
        super().__init__(inner)
        self.marker = marker

    def label_logprobs(self, prompts, candidates, top_n=20):
        out = super().label_logprobs(prompts, candidates, top_n)
        for p, r in zip(prompts, out):
            if self.marker in p.text and isinstance(r, LabelDist):
                r.logprobs = {k: float("nan") for k in r.logprobs}
        return out


@pytest.mark.parametrize("cache_flag", ["--cache", "--no-cache"])
def test_nan_logprob_fails_its_item_not_the_run(smollm2, tmp_path, monkeypatch, capsys, cache_flag):
    """A NaN fails that one item with a reason, with or without the cache; the cache does not store it
    (with the cache on this used to crash the whole run: NaN has no JSON form)."""
    from judge.backends import registry
    from judge.cli import main

    backend = NaNOn(smollm2, "purple elephants")
    monkeypatch.setitem(registry.BACKENDS._entries, "nan-test", lambda model, config, **options: backend)
    data = tmp_path / "in.jsonl"
    responses = ["Try a chickpea curry.", "Seventeen purple elephants.", "Pasta with garlic and oil."]
    data.write_text("".join(json.dumps({"id": f"r{i}", "context": [{"speaker": "user", "text": "Dinner ideas?"}],
                                        "response": r}) + "\n" for i, r in enumerate(responses)))
    cache = tmp_path / "c.sqlite"
    args = ["score", str(data), "--backend", "nan-test", "--cache-path", str(cache), cache_flag]
    assert main([*args, "-o", str(tmp_path / "a.jsonl")]) == 3
    assert "1 of 3 items failed" in capsys.readouterr().err
    rows = _rows(tmp_path / "a.jsonl")
    assert [r["id"] for r in rows] == ["r0", "r1", "r2"]
    assert rows[1]["score"] is None and "invalid log-probability nan" in rows[1]["error"]
    assert all(0.0 <= r["score"] <= 1.0 and r["error"] is None for r in (rows[0], rows[2]))
    if cache_flag == "--no-cache":
        assert not cache.exists()
        return
    assert _cache_rows(cache) == 2  # the two good answers; the NaN one was not stored
    # A rerun serves the good items from the cache and asks the model again only for the NaN one.
    backend.prompts.clear()
    assert main([*args, "-o", str(tmp_path / "b.jsonl")]) == 3
    assert "cache: 2 hits, 1 misses" in capsys.readouterr().err
    assert len(backend.prompts) == 1 and "purple elephants" in backend.prompts[0]
    assert _rows(tmp_path / "b.jsonl") == rows


def test_minus_infinity_is_a_probability_of_zero_and_is_stored(tmp_path):
    """-inf is a valid log-probability (some backends mask tokens with it): cached and read back;
    NaN and +inf are refused by the serialiser itself, naming the value."""
    cache = Cache(tmp_path / "c.sqlite")
    dist = LabelDist({"Yes": -0.1, "No": float("-inf")}, [("Yes", -0.1), ("No", float("-inf"))], n_prompt_tokens=3)
    cache.put("k", "b", "m", dist)
    back = cache.get_many(["k"])["k"]
    assert back.logprobs == dist.logprobs and back.top == dist.top
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="invalid log-probability"):
            cache.put("k2", "b", "m", LabelDist({"Yes": bad}))
    assert len(cache) == 1
    cache.close()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return env


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _cache_rows(path: Path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM dists").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _same_scores(a: list[dict], b: list[dict], tol: float) -> None:
    assert [r["id"] for r in a] == [r["id"] for r in b]
    for x, y in zip(a, b):
        assert x["score"] == pytest.approx(y["score"], abs=tol), x["id"]
        assert x["label_probs"] == pytest.approx(y["label_probs"], abs=tol)
        assert x["n_prompt_tokens"] == y["n_prompt_tokens"]


@pytest.mark.slow
def test_resume_after_sigkill_computes_only_the_missing_items(llama_server, tmp_path):
    """A CLI run against the real llama.cpp server is killed with SIGKILL once a few results are in the
    cache; the rerun serves those from the cache, computes only the rest and matches an uninterrupted run.
    Tolerance 1e-5: the server reuses the KV cache of the previous prompt, and where the run restarts the
    previous prompt differs, which can move the last float bits (llama.cpp's batched kernels)."""
    n = 8
    cache = tmp_path / "cache.sqlite"
    base = ["score", str(ROOT / "examples" / "dialogues.jsonl"), "--limit", str(n), "--backend", "openai",
            "--base-url", llama_server, "--model", "smollm2", "--concurrency", "1"]
    proc = subprocess.Popen([sys.executable, "-m", "judge", *base, "--cache-path", str(cache),
                             "-o", str(tmp_path / "killed.jsonl")], cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while _cache_rows(cache) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = _cache_rows(cache)
    assert 2 <= done < n, f"the kill did not land half-way ({done} of {n} done)"
    assert not (tmp_path / "killed.jsonl").exists()  # the output is written atomically at the end only

    resumed = subprocess.run([sys.executable, "-m", "judge", *base, "--cache-path", str(cache),
                              "-o", str(tmp_path / "resumed.jsonl")], cwd=ROOT, env=_env(), capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    m = re.search(r"cache: (\d+) hits, (\d+) misses", resumed.stderr)
    assert m and (int(m.group(1)), int(m.group(2))) == (done, n - done)
    assert f"API usage: {n - done} requests" in resumed.stderr
    reference = subprocess.run([sys.executable, "-m", "judge", *base, "--no-cache",
                                "-o", str(tmp_path / "ref.jsonl")], cwd=ROOT, env=_env(), capture_output=True,
                               text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr
    assert "cache:" not in reference.stderr
    _same_scores(_rows(tmp_path / "resumed.jsonl"), _rows(tmp_path / "ref.jsonl"), 1e-5)


def _write_items(path: Path, ids: range) -> None:
    with open(path, "w") as f:
        for i in ids:
            f.write(json.dumps({"id": f"q{i}", "context": [{"speaker": "user", "text": f"Tell me fact {i}."}],
                                "response": f"Fact {i}: honey never spoils."}) + "\n")


@pytest.mark.slow
def test_two_processes_share_one_cache(tmp_path):
    cache = tmp_path / "shared.sqlite"
    _write_items(tmp_path / "a.jsonl", range(60))
    _write_items(tmp_path / "b.jsonl", range(30, 90))  # 30 items overlap
    with FaultServer(latency=0.01) as srv:
        procs = [subprocess.Popen([sys.executable, "-m", "judge", "score", str(tmp_path / f"{x}.jsonl"),
                                   "--backend", "openai", "--base-url", srv.base_url, "--model", "fault-model",
                                   "--concurrency", "8", "--cache-path", str(cache), "-o", str(tmp_path / f"{x}.out")],
                                  cwd=ROOT, env=_env(), stderr=subprocess.PIPE, text=True) for x in "ab"]
        errs = [p.communicate(timeout=300)[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], errs
        requests = srv.count()
    for x in "ab":
        rows = _rows(tmp_path / f"{x}.out")
        assert len(rows) == 60 and all(r["score"] is not None for r in rows)
    a = {r["id"]: r for r in _rows(tmp_path / "a.out")}
    b = {r["id"]: r for r in _rows(tmp_path / "b.out")}
    assert all(a[k] == b[k] for k in set(a) & set(b))
    assert _cache_rows(cache) == 90
    assert 90 <= requests <= 120  # overlapping items are computed at most twice, never more
    # every score is the one the server answers for that prompt (no mix-up between processes)
    from judge.datasets import load_items
    from judge.prompts.templates import get_prompt
    from judge.scorers.llm import LLMJudge

    class NoModel(Backend):  # only to render prompts exactly as the CLI did (chat flag, no examples)
        name, model_id = "openai", "fault-model"
        capabilities = Capabilities(full_vocab=False, top_n=20, chat_template=True)

        def count_tokens(self, p):
            return 0

    judge = LLMJudge(get_prompt("yesno"), NoModel())
    for it in load_items(tmp_path / "a.jsonl") + load_items(tmp_path / "b.jsonl"):
        row = a.get(it.id) or b[it.id]
        assert row["score"] == pytest.approx(expected_goodness(judge.build_prompt(it)[0].text), abs=1e-6)
