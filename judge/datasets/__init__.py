"""Dataset loaders: benchmark files (DSTC10 Track 5, FED, USR, Gupta) and users' own JSONL.

Public API: :func:`load_items` (any supported file), :func:`load_benchmark` (a registered set by
name under a data dir), :func:`resolve_source` (either of those, with the quality to correlate
with and its scale), :func:`parse_scale`, :data:`FORMATS`, :func:`detect_format`, :func:`check_scale`.

Where things live: the sets' records in ``benchmarks.toml`` (read by :mod:`.benchmarks`), one loader per
file format (:mod:`.dstc10`, :mod:`.fed`, :mod:`.usr`, :mod:`.gupta`, :mod:`.jsonl`, sharing
:mod:`._common`), reading a file (:mod:`.formats`), a conversation's content fingerprint
(:mod:`.identity`) and the registered sets' conversation index it is looked up in
(:mod:`.conversations`, ``conversations.json``), the halves (:mod:`.split`), and a source given by name
or path (:mod:`.source`).
"""

from __future__ import annotations

from ..data.qualities import parse_scale
from ._common import check_scale
from .formats import FORMAT_LOADERS, FORMATS, FormatLoader, detect_format, load_items
from .source import Source, load_benchmark, resolve_source

__all__ = ["FORMATS", "FORMAT_LOADERS", "FormatLoader", "Source", "check_scale", "detect_format", "load_benchmark",
           "load_items", "parse_scale", "resolve_source"]
