"""Streaming atomic JSONL output: rows go to a temp file beside the target, renamed only on success."""

from __future__ import annotations

import json

import pytest

from judge.core.io import atomic_file, dumps


def test_rows_stream_to_a_temp_file_and_appear_only_at_the_end(tmp_path):
    out = tmp_path / "scores.jsonl"
    with atomic_file(out) as f:
        f.write(dumps({"id": "a", "score": 0.5}) + "\n")
        assert not out.exists()  # nothing at the target path while the run is going
        temps = [p for p in tmp_path.iterdir() if p.name.startswith(".scores.jsonl.")]
        assert len(temps) == 1
        f.write(dumps({"id": "b", "score": 1.0}) + "\n")
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["a", "b"]
    assert [p.name for p in tmp_path.iterdir()] == ["scores.jsonl"]  # the temp file was renamed, none left


def test_a_failed_run_leaves_no_file_and_keeps_an_old_one(tmp_path):
    out = tmp_path / "scores.jsonl"

    def crash():
        with atomic_file(out) as f:
            f.write(dumps({"id": "a"}) + "\n")
            raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError):
        crash()
    assert list(tmp_path.iterdir()) == []
    out.write_text('{"id": "old"}\n')
    with pytest.raises(RuntimeError):
        crash()
    assert out.read_text() == '{"id": "old"}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["scores.jsonl"]


def test_written_files_get_the_mode_open_would_give_not_the_temp_files_0600(tmp_path):
    """A results folder or head file shared by a team must be readable as any file the user writes (under
    the usual umask 022: 0644, where the temp file starts as 0600)."""
    import os
    import stat

    from judge.core.io import FILE_MODE, atomic_write_text

    out = tmp_path / "head.json"
    atomic_write_text(out, "{}")
    assert stat.S_IMODE(out.stat().st_mode) == FILE_MODE
    os.umask(mask := os.umask(0o022))
    assert 0o666 & ~mask == FILE_MODE
