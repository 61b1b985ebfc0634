"""A benchmark source given by registered name or by path: its items plus the DatasetInfo built for it.

``judge bench FILE`` and path entries of ``judge run`` configs use :func:`resolve_source`, so any
supported file -- a team's own rated JSONL, or a DSTC10-format file whose name is not registered --
is benchmarked exactly like the registered sets. A registered set's file given by path (wherever it lies
and whatever it is called: it is recognised by its sha256) is that set, with its qualities and scales;
its items, like every loaded item, carry their conversations' content fingerprints, so its halves and
guards are the registered set's (:mod:`judge.datasets.identity`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError, UnknownNameError
from ..data.items import Item, Level
from ..data.qualities import Quality, Scale, declared_scales, quality_for
from ..models.packaged import sha256_file
from ._common import check_scale, dataset_name, read_text
from .benchmarks import DATASETS, DatasetInfo, dataset_info
from .formats import detect_format, load_items


@dataclass(frozen=True)
class Source:
    """Items to benchmark and what is known about them.

    ``info.overall`` is the quality to correlate with; ``info.qualities`` holds every quality of the
    file whose scale is known (registered or declared); ``annotated`` lists every quality the items
    carry ratings for, scaled or not. ``path`` is the file read (None for none).
    """

    items: tuple[Item, ...]
    info: DatasetInfo
    annotated: tuple[str, ...]
    path: Path | None = None
    registered: bool = False

    @property
    def quality(self) -> Quality:
        """The quality to correlate with, with its scale."""
        return self.info.quality(self.info.overall)


def resolve_source(spec: str | Path, data_dir: str | Path | None = None, *, name: str | None = None,
                   quality: str | None = None, scales: Mapping[str, Scale] | None = None) -> Source:
    """Load ``spec``: a registered set's name or abbreviation (read under ``data_dir``), or a file path.

    A path to a registered set's file (the published file, recognised by its sha256 wherever it lies and
    whatever it is called, or a file of its registered file name in its format: ``.../convai2-grade_eval.json``)
    is that set, named as registered unless ``name`` is given; any other supported
    file gets a DatasetInfo built from its content, named ``name`` (default: the file stem without
    ``_eval``). The quality to correlate with is
    ``quality`` when given, else the set's overall key (registered sets; a user file's ``overall``
    ratings), else the only annotated quality, else an InputError listing the candidates.
    ``scales`` (quality -> (min, max), e.g. from ``--scale``) override registered and declared
    scales; the chosen quality must end up with a scale (bench range-checks the human ratings and
    turns them into example labels), and no rating may lie outside it.
    """
    items, info, file, fmt = _load(spec, data_dir, name)
    built = _build_info(items, info, name, quality, scales or {}, str(file), fmt)
    check_scale(items, built.quality(built.overall), file=str(file))
    annotated = tuple(sorted({k for it in items for k in it.annotations}, key=str.lower))
    return Source(tuple(items), built, annotated, file, registered=info is not None)


def source_items(spec: str | Path, data_dir: str | Path | None = None) -> list[Item]:
    """``spec``'s items, read as :func:`resolve_source` reads them but with no quality chosen or checked: for what
    needs the items and not their ratings (the conversations of labelled items, ``judge label --agreement``)."""
    return _load(spec, data_dir, None)[0]


def _load(spec: str | Path, data_dir: str | Path | None,
          name: str | None) -> tuple[list[Item], DatasetInfo | None, Path, str]:
    """The items of a registered set's name or of a file (see :func:`resolve_source`), the registered set they
    are (None: none), the file read and its format."""
    path = Path(spec)
    registered = _registered(spec, data_dir)
    info: DatasetInfo | None
    if registered is not None and not path.is_file():
        info = registered
        if data_dir is None:
            raise InputError(f"benchmark '{info.name}' is read from a data directory: pass data_dir (--data-dir)",
                             field="data_dir")
        items = load_benchmark(info.name, data_dir)
        file = Path(data_dir) / info.path
        fmt = info.format
    else:
        if not path.is_file():
            known = ", ".join(sorted(DATASETS))
            raise InputError(f"neither a file nor a registered benchmark name (known: {known})", file=str(path))
        file = path
        fmt = detect_format(path, read_text(path))
        info = registered_file(path, fmt)
        items = load_items(path, format=info.format if info else fmt,
                           dataset=name or (info.name if info else dataset_name(path)))
    if not items:
        raise InputError("no items", file=str(file))
    return items, info, file, fmt


def registered_file(path: str | Path, fmt: str) -> DatasetInfo | None:
    """The registered set whose file ``path`` (in format ``fmt``) is: the published file (same sha256)
    wherever it lies and whatever it is called, or a file named as the set (``<name>_eval.json``) in that set's format."""
    same_name = DATASETS.get(dataset_name(path))
    if same_name is not None and same_name.format == fmt:
        return same_name
    size = Path(path).stat().st_size
    candidates = [d for d in DATASETS.values() if d.source is not None and d.source.size in (None, size)]
    if not candidates:
        return None
    digest = sha256_file(Path(path))
    return next((d for d in candidates if d.source is not None and d.source.sha256 == digest), None)


def load_benchmark(name: str, data_dir: str | Path) -> list[Item]:
    """Load a registered benchmark set (``benchmarks.DATASETS``: name or abbreviation) from ``data_dir``."""
    info = dataset_info(name)
    path = Path(data_dir) / info.path
    if not path.is_file():
        where = "it does not exist (see the data README for where to get it)"
        if not Path(data_dir).is_dir() and not Path(data_dir).is_absolute():
            # A config's data_dir is read from where judge runs, which is easy to forget outside the repo.
            where = (f"no such directory relative to the working directory {Path.cwd()} (run from the folder "
                     "the path is written for, or pass --data-dir)")
        raise InputError(f"benchmark '{info.name}' ({info.abbrev}) expects the file '{info.path}' under the data "
                         f"directory '{data_dir}', but {where}", file=str(path))
    return load_items(path, format=info.format, dataset=info.name)


def _registered(spec: str | Path, data_dir: str | Path | None) -> DatasetInfo | None:
    """The registered set ``spec`` names, if it is a name rather than a path."""
    if isinstance(spec, Path) or any(sep in spec for sep in ("/", "\\")) or "." in Path(spec).name:
        return None
    try:
        return dataset_info(spec)
    except UnknownNameError:  # maybe a file in the working directory
        return None


def _build_info(items: Sequence[Item], registered: DatasetInfo | None, name: str | None, quality: str | None,
                scales: Mapping[str, Scale], file: str, fmt: str) -> DatasetInfo:
    """A DatasetInfo for these items: registered scales, then the file's declared ones, then ``scales``."""
    annotated = sorted({k for it in items for k in it.annotations}, key=str.lower)
    known = registered.qualities if registered else ()
    declared = {**declared_scales(items), **declared_scales(scales)}
    level = _level(items, registered)
    chosen = _choose(quality, registered, annotated, declared, file)
    qualities: list[Quality] = []
    seen: set[str] = set()
    for q_name in [q.name for q in known] + annotated + list(declared):
        if q_name.lower() in seen:
            continue
        seen.add(q_name.lower())
        q_level = next((q.level for q in known if q.name.lower() == q_name.lower()), level)
        q = quality_for(q_name, declared, q_level, known=known, strict=False)
        q = Quality(_spelled(q_name, annotated), q.level, q.min, q.max, q.description, q.negative)
        if q.has_scale:
            qualities.append(q)
        elif q_name.lower() == chosen.lower():
            try:
                q.scale(f"benchmarking '{q_name}' (range checks, example labels, yes/no thresholds)")
            except InputError as exc:
                raise InputError(exc.reason, file=file, field=exc.field) from None
    set_name = name or (registered.name if registered else items[0].dataset or Path(file).stem)
    return DatasetInfo(name=set_name, abbrev=registered.abbrev if registered and not name else set_name,
                       path=registered.path if registered else file, format=fmt, level=level,
                       overall=_spelled(chosen, annotated), qualities=tuple(qualities))


def _choose(quality: str | None, registered: DatasetInfo | None, annotated: list[str],
            declared: Mapping[str, Scale], file: str) -> str:
    """The quality to correlate with (see resolve_source)."""
    candidates = annotated or sorted(declared)
    if quality is not None:
        if quality.lower() not in {c.lower() for c in candidates}:
            raise InputError(f"no item has ratings for quality '{quality}'; the file rates: "
                             f"{', '.join(candidates) or 'nothing'}", file=file, field="quality")
        return quality
    if registered is not None:
        return registered.overall
    overall = [c for c in annotated if c.lower() == "overall"]
    if overall:
        return overall[0]
    if len(annotated) == 1:
        return annotated[0]
    if not annotated:
        raise InputError("no item carries human ratings ('scores'), so there is nothing to correlate with",
                         file=file, field="scores")
    raise InputError(f"the file rates several qualities ({', '.join(annotated)}) and none is 'overall': "
                     "name the one to correlate with (--quality)", file=file, field="quality")


def _level(items: Sequence[Item], registered: DatasetInfo | None) -> Level:
    if registered is not None:
        return registered.level
    levels = {it.level for it in items}
    return "dialog" if levels == {"dialog"} else "turn"


def _spelled(name: str, annotated: Sequence[str]) -> str:
    return next((a for a in annotated if a.lower() == name.lower()), name)
