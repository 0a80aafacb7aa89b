"""The package's import graph, read from the source (ast), not by importing it.

Two rules of the layout (issue 25): the library imports nothing from the paper reproductions
(``dpjax.experiments``), and no two modules import each other, directly or round a longer
circle. Every import counts, including those inside functions (a lazy import is still a
dependency). A module importing a name from its own enclosing package (``from . import fmt`` in
``dpjax/_display/audit.py``) is not an edge: Python initialises the package before the module
either way, so it cannot order two modules against each other.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpjax"

# the library: every part of dpjax that a user's code runs (the CLI, the demo and the
# benchmarks may run reproductions; the reproductions may use anything)
LIBRARY = (
    "dpjax.data", "dpjax.models", "dpjax.samplers", "dpjax.engine", "dpjax.accountants", "dpjax.estimators",
    "dpjax.audit", "dpjax.canaries", "dpjax.sweep", "dpjax.coupled", "dpjax._display", "dpjax._validate", "dpjax._floats", "dpjax._x64",
    "dpjax._moved",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, modules) -> set[str]:
    """The dpjax modules that ``name`` imports: for ``from X import y``, the module X.y when it
    is one, else X."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "dpjax")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "dpjax":
                continue
            for alias in node.names:
                child = f"{source}.{alias.name}"
                found.add(child if child in modules else source)
    return found


def _graph():
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        targets = _imports(name, path, modules)
        unknown = {t for t in targets if t not in modules}
        assert not unknown, f"{name} imports {sorted(unknown)}, which are not modules of dpjax"
        # an import of an enclosing package is no ordering constraint (see the module docstring)
        graph[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return graph


def _in_library(name: str) -> bool:
    return any(name == lib or name.startswith(lib + ".") for lib in LIBRARY)


def test_the_library_imports_nothing_from_the_reproductions():
    graph = _graph()
    offenders = {m: sorted(t for t in ts if t == "dpjax.experiments" or t.startswith("dpjax.experiments."))
                 for m, ts in graph.items() if _in_library(m)}
    offenders = {m: ts for m, ts in offenders.items() if ts}
    assert not offenders, f"library modules import paper reproductions: {offenders}"


def _circles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(root):
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return out


def test_no_import_circles():
    circles = _circles(_graph())
    assert not circles, f"modules that import each other (directly or round a circle): {circles}"


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_circle_finder_finds_circles(graph, expected):
    assert _circles(graph) == expected


def test_the_graph_sees_lazy_and_relative_imports():
    # a known edge of each kind, so that a parser regression cannot pass the tests above vacuously
    graph = _graph()
    assert "dpjax.accountants.composition.pld_bracket" in graph["dpjax.accountants.curve"]  # lazy, relative
    assert "dpjax.accountants.composition.pld_accountant" in graph["dpjax.accountants.composition.rdp"]
    assert "dpjax.experiments._report" in graph["dpjax.cli"]
