"""Where the benchmark files come from (public raw URLs at fixed commits), their sha256, and
verifying / downloading a local copy. The files themselves are never shipped with `judge`."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import JudgeError
from ..core.io import atomic_file
from ..models.packaged import sha256_file
from .benchmarks import DATASETS, DatasetInfo, SourceFile


@dataclass(frozen=True)
class DataFile:
    """One benchmark file: its path under a data dir, the sets it holds (as ``judge data list`` names them),
    and its public source and checksum."""

    path: str
    sets: str
    source: SourceFile


def _label(info: DatasetInfo) -> str:
    """How ``judge data list`` names the set a file holds: its abbreviation, "(original)" for a release."""
    return f"{info.abbrev.removesuffix('-orig')} (original)" if info.original else info.abbrev


#: Every registered set's file, from the sets' records (judge/datasets/benchmarks.toml).
DATA_FILES: tuple[DataFile, ...] = tuple(
    DataFile(d.path, _label(d), d.source) for d in DATASETS.values() if d.source is not None)


class ChecksumError(JudgeError):
    """A downloaded or local file does not have the published sha256."""


def verify(data_dir: str | Path) -> list[tuple[DataFile, str]]:
    """Status of every known file under ``data_dir``: "ok", "missing" or "sha256 mismatch (...)"."""
    out = []
    for f in DATA_FILES:
        p = Path(data_dir) / f.path
        if not p.is_file():
            out.append((f, "missing"))
            continue
        got, want = sha256_file(p), f.source.sha256
        out.append((f, "ok" if got == want else f"sha256 mismatch (got {got[:12]}…, want {want[:12]}…)"))
    return out


def source_url(f: DataFile, base_url: str | None = None) -> str:
    """The public URL, or with ``base_url`` a mirror that lays files out as a data dir does."""
    if base_url:
        return base_url.rstrip("/") + "/" + f.path
    return f.source.url


def download(f: DataFile, data_dir: str | Path, base_url: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch one file, check its sha256 while streaming, and move it into place only if it matches."""
    dest = Path(data_dir) / f.path
    dest.parent.mkdir(parents=True, exist_ok=True)
    url = source_url(f, base_url)
    h = hashlib.sha256()
    with atomic_file(dest, "wb", suffix=".part") as out:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                while chunk := resp.read(1 << 16):
                    h.update(chunk)
                    out.write(chunk)
        except (urllib.error.URLError, OSError) as exc:
            raise JudgeError(f"download of {url} failed: {exc}") from None
        if h.hexdigest() != f.source.sha256:
            raise ChecksumError(f"{url}: sha256 {h.hexdigest()} does not match the published {f.source.sha256}; "
                                f"the file was not saved")
    return dest
