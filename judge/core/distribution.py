"""This project's distribution name, and the unrelated PyPI package that shares its import name.

The project is published as ``dialogue-judge``; its import package and its command are both ``judge``.
The name ``judge`` on PyPI belongs to an unrelated package ("Choose values based on a tree of
conditions", 0.2.0), which installs a top-level ``judge`` package of its own (``judge/__init__.py``,
``decide.py``, ``predicates.py``). Installed into the same environment, the two write into one
``judge/`` folder: whichever came last owns ``judge/__init__.py``, and uninstalling either removes files
the other needs. So instead of half-working, :func:`check_not_shadowed` refuses at import with what to do.
Kept free of other ``judge`` imports: it runs first, from ``judge/__init__.py`` and the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

#: The name this project is installed and published under (``pip install dialogue-judge``).
DISTRIBUTION = "dialogue-judge"
#: The version of this source tree (pyproject.toml's), which ``judge.__version__`` re-exports; held here so that
#: modules inside the package read it without importing the package's public API.
SOURCE_VERSION = "0.1.0"
#: The unrelated PyPI package: its name, its summary, and the modules it puts into ``judge/``.
UNRELATED_NAME = "judge"
UNRELATED_SUMMARY = "Choose values based on a tree of conditions"
UNRELATED_MODULES = ("decide.py", "predicates.py")


class ShadowedError(ImportError):
    """The unrelated ``judge`` package is installed beside (or over) this one."""


def version() -> str | None:
    """This project's installed version (None when it runs from a source tree without being installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def unrelated_installed(paths: Sequence[str] | None = None, package_dir: Path | None = None) -> str | None:
    """Where the unrelated ``judge`` package shows itself, or None: its installed metadata on ``paths``
    (default ``sys.path``), or its modules inside ``package_dir`` (default: this package's folder). A
    ``judge`` distribution that is this project under its former name is not it."""
    found = metadata.distributions(name=UNRELATED_NAME) if paths is None else \
        metadata.distributions(name=UNRELATED_NAME, path=list(paths))
    for dist in found:
        files = {str(f).replace("\\", "/") for f in dist.files or ()}
        if UNRELATED_SUMMARY in (dist.metadata.get_all("Summary") or ()) or \
                any(f"judge/{m}" in files for m in UNRELATED_MODULES):
            return f"{UNRELATED_NAME} {dist.version} (installed metadata: {dist.locate_file('')})"
    folder = package_dir or Path(__file__).resolve().parents[1]
    stray = [m for m in UNRELATED_MODULES if (folder / m).is_file()]
    if stray:
        return f"its modules {', '.join(stray)} in {folder}"
    return None


def check_not_shadowed(paths: Sequence[str] | None = None, package_dir: Path | None = None) -> None:
    """Refuse to run next to the unrelated ``judge`` package (see the module docstring)."""
    where = unrelated_installed(paths, package_dir)
    if where is not None:
        raise ShadowedError(
            f"the unrelated PyPI package 'judge' (\"{UNRELATED_SUMMARY}\") is installed in this environment "
            f"[{where}] and shares the import package 'judge' with this project ({DISTRIBUTION}): each overwrites "
            f"the other's files. Remove both, then reinstall this project: pip uninstall -y judge {DISTRIBUTION} && "
            f"pip install {DISTRIBUTION} (or pip install . in a clone)")
