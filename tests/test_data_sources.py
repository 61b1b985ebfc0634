"""`judge data`: sources and checksums of the benchmark files; download against a local HTTP server."""

from __future__ import annotations

import functools
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from judge.cli import main
from judge.datasets.download import DATA_FILES, verify


@pytest.fixture()
def server():
    """A real HTTP server on 127.0.0.1 serving a folder chosen by the test."""
    state = {}

    def start(root: Path) -> str:
        handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
        handler.log_message = lambda *a, **k: None
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        state["srv"] = srv
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    if "srv" in state:
        state["srv"].shutdown()
        state["srv"].server_close()


#: Registered files that the shared data folder does not hold (tests/fixtures has small look-alikes).
NOT_SHARED = {"dstc10_track5/persona-zhao_eval.json", "dstc10_track5/convai2-grade_eval.json"}


def test_sources_are_pinned_raw_github_urls():
    assert len(DATA_FILES) == 14 + 8 + 5  # DSTC10 and originals, PandaLM and the LLMBar sets, Reliable-Eval and PE
    for f in DATA_FILES:
        assert f.source.url.startswith("https://raw.githubusercontent.com/") and f.source.commit in f.source.url
        assert len(f.source.sha256) == 64
    urls = {f.path: f.source.url for f in DATA_FILES}
    assert urls["fed/fed_data.json"].endswith("DSincerity/FED_Replication/f0a9a675ffcd134e9cb606c46afc8e0c7ad31ba4/fed_data.json")
    # A path with a character URLs reserve is sent escaped (the release's folder is "LLMEval^2").
    assert urls["llmbar/LLMEval2/dataset.json"].endswith("/Dataset/Processed/LLMEval%5E2/dataset.json")


def test_verify_shared_copy(data_dir, capsys):
    status = {f.path: s for f, s in verify(data_dir)}
    assert {p for p, s in status.items() if s != "ok"} == NOT_SHARED
    assert all(status[p] == "missing" for p in NOT_SHARED)
    assert main(["data", "verify", "--data-dir", str(data_dir)]) == 2
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "Jeiyoon/dstc10/ca5ec03881c6ee35bba7d4511064417d723eea14/dev_dataset/fed-turn_eval.json" in out
    assert "Jeiyoon/dstc10/ca5ec03881c6ee35bba7d4511064417d723eea14/dev_dataset/persona-zhao_eval.json" in out


def test_download_from_local_server_then_verify(data_dir, server, tmp_path, capsys):
    base = server(data_dir)
    dest = tmp_path / "data"
    # The mirror is a copy of the shared folder, which lacks PZ and CG: those two fail (HTTP 404).
    assert main(["data", "download", "--data-dir", str(dest), "--base-url", base]) == 2
    err = capsys.readouterr().err
    assert "persona-zhao_eval.json" in err and "convai2-grade_eval.json" in err
    for f in DATA_FILES:
        if f.path not in NOT_SHARED:
            assert (dest / f.path).read_bytes() == (data_dir / f.path).read_bytes()
    assert {f.path for f, s in verify(dest) if s != "ok"} == NOT_SHARED
    assert not list(dest.rglob("*.part"))
    # Already present and valid: nothing fetched again.
    assert main(["data", "download", "--data-dir", str(dest), "--base-url", base]) == 2
    assert "fetched" not in capsys.readouterr().out


def test_download_refuses_checksum_mismatch(data_dir, server, tmp_path, capsys):
    mirror = tmp_path / "mirror"
    shutil.copytree(data_dir, mirror)
    bad = mirror / "dstc10_track5" / "fed-turn_eval.json"
    bad.chmod(0o644)
    bad.write_bytes(bad.read_bytes().replace(b"Meena", b"Meeno", 1))
    base = server(mirror)
    dest = tmp_path / "data"
    assert main(["data", "download", "--data-dir", str(dest), "--base-url", base]) == 2
    err = capsys.readouterr().err
    assert "fed-turn_eval.json" in err and "does not match" in err
    assert not (dest / "dstc10_track5" / "fed-turn_eval.json").exists()
    assert not list(dest.rglob("*.part"))
    assert (dest / "dstc10_track5" / "fed-dial_eval.json").exists()  # the others were fetched
    assert main(["data", "verify", "--data-dir", str(dest)]) == 2


def test_download_unreachable_server(tmp_path, capsys):
    assert main(["data", "download", "--data-dir", str(tmp_path), "--base-url", "http://127.0.0.1:9"]) == 2
    assert "download of http://127.0.0.1:9/" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.json"))


def test_one_record_per_set_feeds_the_registry_the_files_and_the_docs():
    """judge/datasets/benchmarks.toml holds each set once: the registry, `judge data` and the table of
    docs/data-format.md (generated from the records) agree with it."""
    from judge.datasets.benchmarks import CORPORA, DATASETS, files_table

    root = Path(__file__).resolve().parents[1]
    assert files_table() in (root / "docs" / "data-format.md").read_text()
    assert [f.path for f in DATA_FILES] == [d.path for d in DATASETS.values()]
    assert {d.corpus for d in DATASETS.values()} == set(CORPORA)
    assert all(d.license and d.source is not None for d in DATASETS.values())
