"""The distribution name, and the refusal to run beside the unrelated PyPI package ``judge``.

The unrelated package itself cannot be installed here (the tests run offline), so these tests write
its installed metadata the way pip does (a ``judge-0.2.0.dist-info`` folder with its real name, summary
and file list) or put its module files into a copy of our package: exactly what
:mod:`judge.core.distribution` reads. With the real sdist (judge 0.2.0) installed in a throwaway venv, the
import gives the same refusal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from judge.core.distribution import DISTRIBUTION, UNRELATED_SUMMARY, ShadowedError, check_not_shadowed

ROOT = Path(__file__).resolve().parents[1]


def _dist_info(site: Path, summary: str, files: list[str]) -> None:
    info = site / "judge-0.2.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: judge\nVersion: 0.2.0\nSummary: {summary}\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in [*files, "judge-0.2.0.dist-info/RECORD"]))


def _python(code: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    """``python -c code`` importing from ``paths`` (run from the first, as `python -c` puts its folder first)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=paths[0],
                          timeout=120)


def test_pyproject_names_the_distribution_and_its_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "dialogue-judge"
    assert project["scripts"] == {"judge": "judge.cli:main"}
    extras = [req for reqs in project["optional-dependencies"].values() for req in reqs]
    self_refs = [req for req in extras if "[" in req and req.split("[")[0] in ("judge", DISTRIBUTION)]
    assert self_refs and all(req.startswith(DISTRIBUTION + "[") for req in self_refs)


def test_import_refused_beside_the_unrelated_judge(tmp_path: Path) -> None:
    _dist_info(tmp_path, UNRELATED_SUMMARY, ["judge/__init__.py", "judge/decide.py", "judge/predicates.py"])
    done = _python("import judge", ROOT, tmp_path)
    assert done.returncode != 0
    assert "ShadowedError" in done.stderr and "unrelated PyPI package 'judge'" in done.stderr
    assert "pip uninstall -y judge dialogue-judge" in done.stderr


def test_this_project_under_its_former_name_is_not_refused(tmp_path: Path) -> None:
    # An older install of this project was also called `judge`: same import package, not the other one.
    _dist_info(tmp_path, "Language models as judges of dialogue quality.", ["judge/__init__.py", "judge/cli/__init__.py"])
    done = _python("import judge; print(judge.__file__)", ROOT, tmp_path)
    assert done.returncode == 0, done.stderr
    check_not_shadowed(paths=[str(tmp_path)])


def test_cli_refuses_when_the_unrelated_package_was_installed_over_ours(tmp_path: Path) -> None:
    # pip writes the other package's judge/__init__.py, decide.py and predicates.py into our folder:
    # our __init__ (and its check) no longer runs, so the command line checks again and exits 2.
    site = tmp_path / "site"
    shutil.copytree(ROOT / "judge", site / "judge", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("__init__.py", "decide.py", "predicates.py"):
        (site / "judge" / name).write_text("")
    with pytest.raises(ShadowedError, match=r"decide\.py, predicates\.py"):
        check_not_shadowed(paths=[], package_dir=site / "judge")
    done = _python("import sys; from judge.cli import main; sys.exit(main(['score', 'x.jsonl']))", site)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("judge: error: the unrelated PyPI package 'judge'")
