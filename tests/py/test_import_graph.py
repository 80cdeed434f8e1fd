"""The import graph of pgq_thin: no cycle anywhere, and the CLI only uses the public API.

The graph is read from the source (ast): every ``import`` and ``from ... import`` of a
``pgq_thin`` module, at module level, inside a function (an import deferred to call time to
dodge a cycle is still a cycle) or under ``if TYPE_CHECKING:`` (never run, but a type named
from a module that imports this one is a seam in the wrong place all the same).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pgq_thin"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package modules it imports (``from pkg import sub`` counts as ``pkg.sub``
    when ``sub`` is a module, else as ``pkg``)."""
    top = root.name
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    targets.append(candidate if candidate in paths else base)
            for target in targets:
                if target == top or target.startswith(top + "."):
                    while target not in paths and "." in target:
                        target = target.rpartition(".")[0]
                    if target in paths and target != name:
                        graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_cycle_in_the_package() -> None:
    graph = import_graph(PACKAGE)
    # the CLI's admin import is deferred to call time (a light start), and still an edge
    assert "pgq_thin.cli._common" in graph and "pgq_thin.admin" in graph["pgq_thin.cli._common"]
    assert cycles(graph) == []


def test_the_cli_uses_only_the_public_api() -> None:
    """No command keeps a query or a connection of its own: nothing under pgq_thin.cli
    imports the SQL calls or the connection factory."""
    graph = import_graph(PACKAGE)
    private = {"pgq_thin.calls", "pgq_thin.admin_calls", "pgq_thin.connection"}
    offenders = {
        name: sorted(graph[name] & private)
        for name in graph
        if name.startswith("pgq_thin.cli") and graph[name] & private
    }
    assert offenders == {}


def test_command_modules_do_not_import_the_cli_package() -> None:
    graph = import_graph(PACKAGE)
    offenders = [n for n in graph if n.startswith("pgq_thin.cli.") and "pgq_thin.cli" in graph[n]]
    assert offenders == []


def test_the_checker_finds_deferred_and_type_checking_import_cycles(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from ..a import x\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n"
    )
    (pkg / "e.py").write_text("import pkg.d\n")
    graph = import_graph(pkg)
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert graph["pkg.d"] == {"pkg.e"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"], ["pkg.d", "pkg.e"]]


def test_the_web_dashboard_uses_only_the_public_api() -> None:
    """The web pages read and act through the admin API: nothing under pgq_thin.web imports
    the SQL call modules or the connection factory."""
    graph = import_graph(PACKAGE)
    private = {
        "pgq_thin.calls",
        "pgq_thin.admin_calls",
        "pgq_thin._api",
        "pgq_thin._sql_runner",
        "pgq_thin.connection",
    }
    assert "pgq_thin.web.data" in graph and "pgq_thin.admin" in graph["pgq_thin.web.data"]
    offenders = {
        name: sorted(graph[name] & private)
        for name in graph
        if name.startswith("pgq_thin.web") and graph[name] & private
    }
    assert offenders == {}
