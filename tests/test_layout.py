"""How the package is laid out: rules that keep layers apart, checked by reading the source."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "judge"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_folder_of_modules_is_a_package():
    missing = [str(d.relative_to(PACKAGE.parent)) for d in {p.parent for p in _modules()}
               if not (d / "__init__.py").is_file()]
    assert not missing, f"folders of modules without __init__.py: {missing}"


def _imported_modules(path: Path) -> list[str]:
    """Absolute names of what a module imports (relative imports resolved against its package)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            out.append(name)
            out.extend(f"{name}.{alias.name}" for alias in node.names)
    return out


def test_nothing_outside_the_command_line_imports_from_it():
    """``judge/cli`` is a thin layer over the library; the library (serve included) never reaches into it.
    ``judge/__main__.py`` is the command line's own entry point and may."""
    offenders = []
    for path in _modules():
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "cli" or rel == Path("__main__.py"):
            continue
        offenders += [f"{rel}: {name}" for name in _imported_modules(path)
                      if name == "judge.cli" or name.startswith("judge.cli.")]
    assert not offenders, offenders


def test_the_import_scan_sees_relative_imports():
    """The scan above must catch the form it forbids (a test that cannot fail is no test)."""
    cli_module = PACKAGE / "cli" / "score.py"
    assert "judge.accounting.counters.report_counters" in _imported_modules(cli_module)
    assert any(n.startswith("judge.cli.options") for n in _imported_modules(cli_module))


def test_ensemble_rule_names_live_with_the_ensemble_scorer():
    """COMBINE_RULES and FIT_RULES are defined where they are applied (judge/scorers/ensemble.py); the spec
    only imports them."""
    defined = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined += [(t.id, str(path.relative_to(PACKAGE))) for t in targets if isinstance(t, ast.Name)
                            and t.id in ("COMBINE_RULES", "FIT_RULES")]
    assert sorted(defined) == [("COMBINE_RULES", "scorers/ensemble.py"), ("FIT_RULES", "scorers/ensemble.py")]


def _named_classes(path: Path) -> set[str]:
    """Names of the concrete classes a module imports from scorers, heads and backends (what it could branch
    on); the contracts themselves (``Backend``, ``Scorer``) are what every layer speaks."""
    kinds = ("judge.scorers.", "judge.heads.", "judge.backends.")
    out = set()
    for name in _imported_modules(path):
        last = name.rsplit(".", 1)[-1]
        if (name.startswith(kinds) and last not in ("Backend", "Scorer")
                and last.endswith(("Judge", "Scorer", "Backend", "Replay"))):
            out.add(last)
    return out


def test_the_engine_and_the_harness_name_no_scorer_or_backend_class():
    """What scores together and how a run's cost is counted are declared (``MethodType.share_key``,
    ``Scorer.lane``, ``Backend.cost``): ``judge/engine`` and ``judge/harness`` import no scorer or backend
    class to decide it, and never compare a backend's name to a literal."""
    offenders = []
    for folder in ("engine", "harness"):
        for path in sorted((PACKAGE / folder).glob("*.py")):
            rel = path.relative_to(PACKAGE)
            offenders += [f"{rel}: imports {name}" for name in sorted(_named_classes(path))]
            source = path.read_text(encoding="utf-8")
            offenders += [f"{rel}: compares a backend name" for lit in ('== "llamacpp"', '== "mock"', '== "openai"')
                          if lit in source]
    assert not offenders, offenders
    # The scan sees such an import where one is (a test that cannot fail is no test).
    assert "LLMJudge" in _named_classes(PACKAGE / "methods" / "llm.py")
    assert "LlamaCppBackend" in _named_classes(PACKAGE / "backends" / "llamacpp_replay.py")
