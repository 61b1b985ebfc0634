"""Output files are written atomically: a reader (or a crash) never sees half a file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import InputError

#: Characters that str.splitlines() (and JavaScript) treat as line breaks but JSON leaves unescaped.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def dumps(obj: Any) -> str:
    """Compact, key-order-stable JSON on exactly one line (UTF-8 kept readable).

    Besides the control characters JSON always escapes, U+0085, U+2028 and U+2029 are escaped
    too, so a JSONL row stays one line for every line splitter (they only occur inside strings).
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)
    for char, escape in _LINE_BREAKS.items():
        if char in text:
            text = text.replace(char, escape)
    return text


def _umask() -> int:
    """The process's umask, read once: ``os.umask`` can only be read by setting it, which is safe at import
    time (before any thread of ours writes a file)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: Mode of the files written here: what ``open`` would give (``mkstemp`` makes its temp files 0600, which
#: a results folder or cache shared by a team must not inherit).
FILE_MODE = 0o666 & ~_umask()


@contextmanager
def atomic_file(path: str | Path, mode: str = "w", suffix: str = ".tmp") -> Iterator[IO[Any]]:
    """Yield a temp file beside ``path``; when the block ends normally it is fsynced and renamed over
    ``path``. On any exception the temp file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file, fsync, rename)."""
    with atomic_file(path) as f:
        f.write(text)


def check_output_path(path: str | Path, flag: str = "--output") -> None:
    """Refuse an output path that cannot be written, before any work is done (InputError naming it)."""
    path = Path(path)
    try:
        if path.is_dir():
            raise InputError("is a directory, expected a file name", file=str(path), field=flag)
        parent = next((p for p in [path.parent, *path.parent.parents] if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise InputError(f"'{parent}' is not a directory", file=str(path), field=flag)
        if parent == path.parent:
            # Probe with the same kind of temp file the atomic write will use (permissions, name
            # length, read-only file systems): a run must not score for minutes and then fail to save.
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
            os.close(fd)
            os.unlink(tmp)
    except OSError as exc:
        raise InputError(f"cannot write here: {exc.strerror or exc}", file=str(path), field=flag) from None
