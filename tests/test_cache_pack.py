"""Cache packs (`judge cache export/import`): answers carried between machines' caches, exactly, never twice,
never over an answer a cache already holds; bad packs refused naming file, line and field."""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import subprocess
from pathlib import Path

import pytest

from judge.backends import LabelDist
from judge.cli import main
from judge.core.errors import JudgeError
from judge.engine.cache import Cache
from judge.engine.cache_pack import export, import_packs, read_pack

VECTOR = [0.1, -2.5, 3.0000001192092896, 1e-30]


def _cli(*args: str) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _filled(path: Path) -> Cache:
    cache = Cache(path)
    cache.put("k-label", "llamacpp", "model-a", LabelDist({"Yes": -0.25, "No": -1.5}, [("Yes", -0.25)], 12))
    cache.put("k-hidden", "llamacpp", "model-a", VECTOR, "hidden")
    cache.put("k-other", "mock", "model-b", LabelDist({"Yes": -0.7, "No": -0.7}, [], 3))
    return cache


def test_a_pack_carries_answers_exactly_and_the_same_answers_give_the_same_bytes(tmp_path):
    source = _filled(tmp_path / "a.sqlite")
    assert export(source, tmp_path / "p.xz") == 3
    target = Cache(tmp_path / "b.sqlite")
    done = import_packs(target, [tmp_path / "p.xz"])
    assert (done.added, done.present, done.differing) == (3, 0, 0)
    assert target.get_many(["k-hidden"], "hidden") == {"k-hidden": VECTOR}  # every bit of every float
    got, want = target.get_many(["k-label"])["k-label"], source.get_many(["k-label"])["k-label"]
    assert (got.logprobs, got.top, got.n_prompt_tokens) == (want.logprobs, want.top, want.n_prompt_tokens)
    assert target.rows("dists", ["model-b"]) == source.rows("dists", ["model-b"])
    # Exported again from the copy: byte for byte the same pack (sorted rows, no timestamps).
    export(target, tmp_path / "q.xz")
    assert (tmp_path / "p.xz").read_bytes() == (tmp_path / "q.xz").read_bytes()
    # A second import adds nothing.
    again = import_packs(target, [tmp_path / "p.xz"])
    assert (again.added, again.present) == (0, 3)


def test_an_import_never_replaces_a_cached_answer_and_counts_the_ones_that_differ(tmp_path):
    export(_filled(tmp_path / "a.sqlite"), tmp_path / "p.xz")
    target = Cache(tmp_path / "b.sqlite")
    target.put("k-hidden", "llamacpp", "model-a", [9.0], "hidden")
    done = import_packs(target, [tmp_path / "p.xz"])
    assert (done.added, done.present, done.differing) == (2, 1, 1)
    assert target.get_many(["k-hidden"], "hidden") == {"k-hidden": [9.0]}


def test_export_chooses_models_and_kinds_and_leaves_out_what_earlier_packs_hold(tmp_path):
    source = _filled(tmp_path / "a.sqlite")
    assert export(source, tmp_path / "a-hidden.xz", models=["model-a"], kinds=["hidden"]) == 1
    assert [r.key for r in read_pack(tmp_path / "a-hidden.xz")] == ["k-hidden"]
    assert export(source, tmp_path / "a.xz", models=["model-a"]) == 2
    source.put("k-new", "llamacpp", "model-a", [1.0, 2.0], "hidden")
    assert export(source, tmp_path / "a-next.xz", models=["model-a"], exclude=[tmp_path / "a.xz"]) == 1
    assert [r.key for r in read_pack(tmp_path / "a-next.xz")] == ["k-new"]
    with pytest.raises(JudgeError, match="unknown answer kind 'vectors'"):
        export(source, tmp_path / "x.xz", kinds=["vectors"])


def _pack(path: Path, lines: list[object]) -> Path:
    with lzma.open(path, "wt", encoding="utf-8") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


HEADER = {"format": "judge-cache-pack", "version": 1, "rows": 1}
ROW = {"table": "dists", "key": "k", "backend": "b", "model": "m", "value": "{}"}


@pytest.mark.parametrize("lines, message", [
    ([{"format": "other"}], "line 1: not a cache pack header"),
    ([{**HEADER, "version": 7}], "line 1: field 'version' is 7"),
    ([HEADER, "{oops"], "line 2: not JSON"),
    ([HEADER, {**ROW, "model": None}], "line 2: field 'model' is missing or not a string"),
    ([HEADER, ROW, {**ROW, "table": "passwords"}], "line 3: field 'table' is 'passwords'"),
])
def test_a_bad_pack_is_refused_naming_file_line_and_field_and_nothing_is_added(tmp_path, lines, message):
    path = _pack(tmp_path / "bad.xz", lines)
    cache = Cache(tmp_path / "c.sqlite")
    with pytest.raises(JudgeError, match=message) as caught:
        import_packs(cache, [path])
    assert str(path) in str(caught.value)
    assert cache.rows("dists") == []


def test_a_file_that_is_not_xz_is_refused(tmp_path):
    (tmp_path / "plain.jsonl").write_text(json.dumps(HEADER) + "\n")
    with pytest.raises(JudgeError, match=r"plain\.jsonl: not a cache pack"):
        list(read_pack(tmp_path / "plain.jsonl"))


def test_a_fit_on_another_machine_reads_every_answer_from_the_pack(tmp_path, data_dir, monkeypatch):
    """The documented round trip: `judge fit` fills one cache, `judge cache export` packs the model's answers,
    `judge cache import` fills a new cache, and the same fit there asks the model nothing and writes the same
    head."""
    fit = ["fit", "EG", "--split", "dev", "--data-dir", str(data_dir), "--backend", "mock", "--prompt",
           "yesno-criteria", "--with-answer", "--no-progress"]
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "here.sqlite"))
    first = _cli(*fit, "-o", str(tmp_path / "here.json"))
    assert first.returncode == 0 and " 0 misses" not in first.stderr, first.stderr
    info = _cli("cache", "info")
    assert info.returncode == 0 and "hidden\tmock\t" in info.stdout, info.stdout
    packed = _cli("cache", "export", "--model", "mock", "-o", str(tmp_path / "mock.xz"))
    assert packed.returncode == 0, packed.stderr
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "there.sqlite"))
    loaded = _cli("cache", "import", str(tmp_path / "mock.xz"))
    assert loaded.returncode == 0 and "0 already cached" in loaded.stderr, loaded.stderr
    second = _cli(*fit, "-o", str(tmp_path / "there.json"))
    assert second.returncode == 0 and " 0 misses" in second.stderr, second.stderr
    here, there = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("here", "there"))
    assert here == there


def test_a_missing_pack_is_refused_naming_it(tmp_path):
    missing = _cli("cache", "import", "--cache-path", str(tmp_path / "c.sqlite"), str(tmp_path / "none.xz"))
    assert missing.returncode == 2 and "none.xz" in missing.stderr, missing.stderr
