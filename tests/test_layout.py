"""How the package is laid out: rules that keep layers apart, checked by reading the source."""

from __future__ import annotations

import ast
from collections.abc import Collection
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "judge"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every check here."""
    return ast.parse(path.read_text(encoding="utf-8"))


def test_every_folder_of_modules_is_a_package():
    missing = [str(d.relative_to(PACKAGE.parent)) for d in {p.parent for p in _modules()}
               if not (d / "__init__.py").is_file()]
    assert not missing, f"folders of modules without __init__.py: {missing}"


def _imported_modules(path: Path) -> list[str]:
    """Absolute names of what a module imports (relative imports resolved against its package)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    out: list[str] = []
    for node in ast.walk(_tree(path)):
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
        for node in ast.walk(_tree(path)):
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


# --- The import graph: no loops, nothing running back up the layers -------------------------------------------

#: judge's folders from the bottom layer to the top. Data flows load -> select -> render -> backend -> score ->
#: statistics -> report, and a module imports only from its own folder and the layers below it; folders on one
#: layer are peers and import nothing from each other. Where the code's real dependencies differ from the bare
#: order of the flow:
#:
#: - ``models`` (packaged model files), ``accounting`` (prices, rates, counters) and ``stats`` (correlation,
#:   agreement, pairwise statistics) are leaves over ``core``: plain lookups and arithmetic that any stage may
#:   use (an ensemble's fit reads correlations), so they sit low although statistics come late in the flow.
#: - ``prompts`` comes before ``selectors``: the manual example sets ship beside the templates.
#: - ``backends`` answer rendered prompts and know nothing of items or templates.
#: - ``records`` (the rows a scorer's scores become) sit below ``engine``, which writes them.
#: - ``distributed`` (Ray) and ``heads`` (trained probes) build their judges through ``engine``; ``methods``
#:   (method types) plug into ``engine`` by name (``METHOD_TYPES.register_lazy``) and build on ``heads``.
#: - ``report`` renders what ``stats`` computed over ``records``; ``harness`` (``judge run``) and ``serve``
#:   drive the engine and report, ``view`` reads what a run wrote, and ``cli`` translates flags into all of them.
#: - ``label`` (people rating items in the browser) serves its page with ``view``'s server and assets.
#:
#: The root package (``judge/__init__.py``, the public API) re-exports from every layer, so no module inside
#: ``judge/`` imports it; ``judge/__main__.py`` is the command line's.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("models", "accounting", "stats"),
    ("data",),
    ("datasets",),
    ("prompts",),
    ("selectors",),
    ("backends",),
    ("scorers",),
    ("records",),
    ("engine",),
    ("distributed", "heads"),
    ("methods",),
    ("report",),
    ("harness", "serve"),
    ("view",),
    ("label",),
    ("cli",),
    ("__main__",),
)

#: Edges (importer, imported) that still make a loop, run back up or import the root package, each with the
#: area whose modules hold it. Nothing may be added here; each entry goes when its edge does (the test below
#: fails on an entry that is no longer needed).
ALLOWED: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _edges(name: str, tree: ast.Module, modules: Collection[str], *, package: bool) -> dict[str, int]:
    """The judge modules that module ``name`` imports -> the line of the first such import. Every import counts:
    at the top, inside a function (a loop closed at call time is still a loop) and under ``TYPE_CHECKING``.
    ``from . import x`` names the submodule ``x`` where there is one, else the package."""
    here = name if package else name.rpartition(".")[0]
    edges: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = ".".join(here.split(".")[: len(here.split(".")) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
        for target in targets:
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != name:
                edges.setdefault(target, node.lineno)
    return edges


@cache
def _import_graph() -> dict[str, dict[str, int]]:
    """Every module of judge/ -> the judge modules it imports -> the line (see ``_edges``)."""
    paths = {_module_name(p): p for p in _modules()}
    return {name: _edges(name, _tree(path), paths, package=path.name == "__init__.py") for name, path in paths.items()}


def _layer(module: str) -> tuple[int, str]:
    """The layer index and folder of a module (``judge.scorers.classic.nsp`` -> scorers' layer)."""
    folder = module.split(".")[1] if "." in module else ""
    for index, layer in enumerate(LAYERS):
        if folder in layer:
            return index, folder
    raise AssertionError(f"{module}: its folder '{folder}' has no layer in LAYERS; add it where its imports fit")


def _loops(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def _without_allowed(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {a: {b: line for b, line in bs.items() if (a, b) not in ALLOWED} for a, bs in graph.items()}


def _upward(graph: dict[str, dict[str, int]]) -> dict[tuple[str, str], str]:
    """Imports from a lower layer into a higher one, between peers of one layer, or of the root package."""
    out = {}
    for a, bs in sorted(graph.items()):
        if a == "judge":
            continue
        (la, fa) = _layer(a)
        for b, line in sorted(bs.items()):
            if b == "judge":
                out[a, b] = f"{a}:{line} imports the root package judge"
                continue
            (lb, fb) = _layer(b)
            if fa != fb and lb >= la:
                out[a, b] = f"{a}:{line} imports {b} ({fa} is {'a peer of' if la == lb else 'below'} {fb})"
    return out


def test_the_import_graph_has_no_loop():
    """A loop makes the modules' import order matter and hides which one depends on which: no module of judge/
    reaches itself through its imports, function-local and ``TYPE_CHECKING`` ones included."""
    loops = _loops(_without_allowed(_import_graph()))
    assert not loops, "import loops inside judge/:\n" + "\n".join(" <-> ".join(group) for group in loops)


def test_no_import_runs_back_up_the_layers():
    """Each module imports only from its folder and the layers below, following the flow load -> select ->
    render -> backend -> score -> statistics -> report: core < models, accounting, stats < data < datasets <
    prompts < selectors < backends < scorers < records < engine < distributed, heads < methods < report <
    harness, serve < view < cli (``LAYERS`` says where and why the code's dependencies differ from the bare
    flow). Nothing imports the root package."""
    offenders = _upward(_without_allowed(_import_graph()))
    assert not offenders, "\n".join(offenders.values())


def test_every_allowed_edge_is_still_needed():
    """An entry of ``ALLOWED`` whose import is gone, or no longer closes a loop or runs up, is removed."""
    graph = _import_graph()
    loops = _loops(graph)
    upward = _upward(graph)
    stale = [f"{a} -> {b}" for a, b in ALLOWED if b not in graph.get(a, {})
             or not ((a, b) in upward or any(a in group and b in group for group in loops))]
    assert not stale, f"no longer needed in ALLOWED: {stale}"


def test_the_graph_checks_see_what_they_forbid():
    """The scan finds imports in every form, and loops and upward imports where they are (a test that cannot
    fail is no test)."""
    source = """
from typing import TYPE_CHECKING
from . import b
from ..engine import build
if TYPE_CHECKING:
    from judge.stats.floor import has_interval
def f():
    from .c import g
    import judge.view
"""
    modules = {"judge", "judge.data", "judge.data.b", "judge.data.c", "judge.engine", "judge.engine.build",
               "judge.stats", "judge.stats.floor", "judge.view"}
    assert _edges("judge.data.a", ast.parse(source), modules, package=False) == {
        "judge.data.b": 3, "judge.engine.build": 4, "judge.stats.floor": 6, "judge.data.c": 8, "judge.view": 9}
    assert _import_graph()["judge.cli.score"]["judge.accounting.counters"]  # the real package is scanned
    made_up = {"judge.data.items": {"judge.engine.build": 1}, "judge.engine.build": {"judge.data.items": 1}}
    assert _loops(made_up) == [["judge.data.items", "judge.engine.build"]]
    assert _upward({"judge.data.items": {"judge.engine.build": 3}}) == {
        ("judge.data.items", "judge.engine.build"): "judge.data.items:3 imports judge.engine.build (data is below engine)"}
    assert list(_upward({"judge.serve.app": {"judge": 5, "judge.harness.cost": 6}}).values()) == [
        "judge.serve.app:5 imports the root package judge",
        "judge.serve.app:6 imports judge.harness.cost (serve is a peer of harness)"]
