"""The labels file: append-only, synced per label, a crash-cut last line skipped and then cut off, malformed
complete lines refused with file and line."""

from __future__ import annotations

import pytest

from judge.core.errors import InputError
from judge.records.labels import Label, append_label, latest_labels, read_labels


def test_labels_append_and_read_back_in_order(tmp_path):
    path = tmp_path / "labels.jsonl"
    first = Label(id="a/1", scores={"overall": 4.0}, rater="ann", time="2026-12-02T05:00:00Z")
    second = Label(id="a/2", scores={"overall": 2.0, "fluent": 1.0}, rater="bob", probability=0.25, position=3)
    append_label(path, first)
    append_label(path, second)
    assert read_labels(path) == [first, second]
    assert path.read_text().splitlines()[1] == (
        '{"id": "a/2", "scores": {"overall": 2.0, "fluent": 1.0}, "rater": "bob", "probability": 0.25, '
        '"position": 3}')


def test_a_line_cut_by_a_crash_is_skipped_and_the_next_label_does_not_join_it(tmp_path):
    path = tmp_path / "labels.jsonl"
    append_label(path, Label(id="a/1", scores={"overall": 4.0}))
    with open(path, "a") as f:
        f.write('{"id": "a/2", "sco')
    assert [label.id for label in read_labels(path)] == ["a/1"]
    append_label(path, Label(id="a/3", scores={"overall": 1.0}))
    assert [label.id for label in read_labels(path)] == ["a/1", "a/3"]


def test_a_malformed_label_names_the_file_line_and_key(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"id": "a/1", "scores": {"overall": 4}}\n{"id": "a/2", "scores": {"overall": "good"}}\n')
    with pytest.raises(InputError, match=r"labels.jsonl:2.*scores"):
        read_labels(path)


def test_the_latest_label_of_a_rater_wins():
    labels = [Label(id="x", scores={"q": 1.0}, rater="r"), Label(id="x", scores={"q": 3.0}, rater="r"),
              Label(id="x", scores={"q": 5.0}, rater="s")]
    latest = latest_labels(labels)
    assert latest[("x", "r")].scores == {"q": 3.0} and latest[("x", "s")].scores == {"q": 5.0}
