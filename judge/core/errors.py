"""Error types that carry enough context for a user to find the bad input."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class JudgeError(Exception):
    """Base class for every error `judge` raises on purpose (the CLI prints these without a traceback)."""


class InputError(JudgeError):
    """Bad input data: names the file, the record (line or index) and the field."""

    def __init__(self, message: str, *, file: str | None = None, record: str | int | None = None,
                 field: str | None = None) -> None:
        self.file = file
        self.record = record
        self.field = field
        self.reason = message
        where = []
        if file is not None:
            where.append(str(file))
        if record is not None:
            where.append(f"record {record}" if not isinstance(record, int) else f"line {record}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class MissingInputError(InputError):
    """The data lacks an input a scorer needs (references, a next user turn, a level it supports).

    A property of the set rather than a mistake in it: the harness lists such classic cells as skipped,
    and an ensemble leaves out a member declared optional for them; every other InputError stops."""


class UnknownNameError(JudgeError):
    """An unknown prompt / selector / backend / quality / dataset name, with the closest valid names."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        valid = sorted(valid)
        self.kind = kind
        self.name = name
        self.valid = valid
        close = difflib.get_close_matches(name, valid, n=3, cutoff=0.5)
        if not close:
            close = [v for v in valid if v.lower() == name.lower()][:3]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        listing = ", ".join(valid) if len(valid) <= 40 else ", ".join(valid[:40]) + ", ..."
        super().__init__(f"unknown {kind} '{name}'.{hint} Valid {kind} names: {listing}")


class TemplateError(JudgeError):
    """A prompt template that does not parse, uses an undefined variable or breaks the sandbox."""


class BackendError(JudgeError):
    """A backend could not be created or could not answer (model file, missing extra, API failure)."""


class MissingExtraError(BackendError):
    """An optional dependency is not installed; names the extra that provides it."""

    def __init__(self, what: str, extra: str, module: str) -> None:
        super().__init__(f"{what} needs the optional dependency '{module}'. Install it with: pip install "
                         f"'dialogue-judge[{extra}]'")


class RunStopped(Exception):
    """A run that stopped on purpose before scoring, having done what was asked (``--batch-file``: the requests
    are written for another runner). Not an error: the CLI prints the message, which says what to do next,
    and exits 0."""
