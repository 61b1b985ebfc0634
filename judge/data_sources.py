"""Where the benchmark files come from (public raw URLs at fixed commits), their sha256, and
verifying / downloading a local copy. The files themselves are never shipped with `judge`."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .errors import JudgeError
from .io import atomic_file
from .models import sha256_file

_RAW = "https://raw.githubusercontent.com"
_DSTC10 = ("Jeiyoon/dstc10", "ca5ec03881c6ee35bba7d4511064417d723eea14")
_FED = ("DSincerity/FED_Replication", "f0a9a675ffcd134e9cb606c46afc8e0c7ad31ba4")
_USR = ("SmartDataAnalytics/proxy_indicators", "5017317f0d03cdbc64a3a52c09fc0a6bf5c492b3")
_GUPTA = ("prakharguptaz/multirefeval", "2a4b5440e21dba518dffd6d535dfb1450ab9c4a7")


@dataclass(frozen=True)
class DataFile:
    """One benchmark file: its path under a data dir, its public source and its checksum."""

    path: str
    repo: str
    commit: str
    source_path: str
    sha256: str
    #: Bytes, where recorded (None: only the sha256 was published with the entry).
    size: int | None
    sets: str

    @property
    def url(self) -> str:
        return f"{_RAW}/{self.repo}/{self.commit}/{self.source_path}"


def _d10(name: str, sha: str, size: int | None, abbrev: str) -> DataFile:
    return DataFile(f"dstc10_track5/{name}_eval.json", *_DSTC10, f"dev_dataset/{name}_eval.json", sha, size, abbrev)


DATA_FILES: tuple[DataFile, ...] = (
    _d10("fed-turn", "9feb0d8911d0b85bcc69f3f011f1e5bb24ac9be403298aedf10a0df601e8c3db", 730507, "FT"),
    _d10("fed-dial", "0b4f0459f71d1a8bbafe1ee3cbeabd106737f96d1f612440891f49105302ad3f", 439628, "FD"),
    _d10("topical-usr", "936a0963c6476bd29edb5710f6f6b510ae450e174655773f9d5a2ce18dd96ad3", 878893, "TU"),
    _d10("persona-usr", "a9ec370dec3ae60aa8f2f4f1d40041661c6060ea1e6a89e23c12df08ba663fab", 478413, "PU"),
    _d10("dailydialog-zhao", "fe9479aaf91c45887cc84085c281aab4591ac01766bde5aae6ee79bcbd9d99bb", 916594, "DZ"),
    _d10("dailydialog-gupta", "d2e92474e39849572df78a6735e62af1367160b905279f2afd5737c0a41288aa", 388610, "DGU"),
    _d10("dailydialog-grade", "212d19bafc2d717c51eb69a4b0b8a55153e5ead3dbe912061f8db2f3e9357c5c", 174394, "DGR"),
    _d10("empathetic-grade", "b2e7a72e675d6817ea5f57041757f20c7547b3b6bd82688dd6c20b0592ae3051", 184889, "EG"),
    # The release's other two dev sets (not in the paper's eight); sizes were not recorded with them.
    _d10("persona-zhao", "f4ff1886b08979bd2a0d24ba0a46fdf1cb2d0cf46d242bd9e6e3ba6ae039c86e", None, "PZ"),
    _d10("convai2-grade", "ea7f44fd347b2bc40e862c39f2fd54e4d1c4cfc2aa372c217d02623f60e518ac", None, "CG"),
    DataFile("fed/fed_data.json", *_FED, "fed_data.json",
             "69a608314d982e202c46a095ea99f4174332745b513034f6244f7551556e7e46", 832081, "FED (original)"),
    DataFile("usr/tc_usr_data.json", *_USR, "data/usr_topical_chat.json",
             "8e4e6961585f58edb573c0153766547442bde69577e8df6ba9e24a84dc9483e5", 318219, "TU (original)"),
    DataFile("usr/pc_usr_data.json", *_USR, "data/usr_percona_chat.json",
             "7acf3ff80c02e791138bc9a0db440a36d07d700fe1457066adbf73b8f0c64a4b", 241036, "PU (original)"),
    DataFile("dailydialog_gupta/mturk_rating_processed_output.csv", *_GUPTA,
             "multiref-dataset/mturk_rating_processed_output.csv",
             "55a7c5c01b22ebfed631b28eb0e658eaa9a300a05ef95c09a26853ba6eb45c37", 277577, "DGU (original)"),
)


class ChecksumError(JudgeError):
    """A downloaded or local file does not have the published sha256."""


sha256_of = sha256_file


def verify(data_dir: str | Path) -> list[tuple[DataFile, str]]:
    """Status of every known file under ``data_dir``: "ok", "missing" or "sha256 mismatch (...)"."""
    out = []
    for f in DATA_FILES:
        p = Path(data_dir) / f.path
        if not p.is_file():
            out.append((f, "missing"))
            continue
        got = sha256_of(p)
        out.append((f, "ok" if got == f.sha256 else f"sha256 mismatch (got {got[:12]}…, want {f.sha256[:12]}…)"))
    return out


def source_url(f: DataFile, base_url: str | None = None) -> str:
    """The public URL, or with ``base_url`` a mirror that lays files out as a data dir does."""
    if base_url:
        return base_url.rstrip("/") + "/" + f.path
    return f.url


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
        if h.hexdigest() != f.sha256:
            raise ChecksumError(f"{url}: sha256 {h.hexdigest()} does not match the published {f.sha256}; "
                                f"the file was not saved")
    return dest
