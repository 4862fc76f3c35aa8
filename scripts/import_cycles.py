"""Find import circles among the modules of a package (issue #18): ``python scripts/import_cycles.py [DIR...]``.

Every ``import`` and ``from … import`` counts, wherever it stands: at the top, inside a function,
or under ``if TYPE_CHECKING:`` (a type-only circle still ties the modules together). Prints each
circle as ``a -> b -> a`` and exits 1 if there is any; with no argument it checks ``nbagent/``.
Standard library only (``ast``), so it runs without installing anything.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path, root: Path) -> str:
    """``nbagent/core/loop.py`` -> ``nbagent.core.loop``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    """The absolute module a ``from`` import names (relative imports resolved against ``current``)."""
    if not node.level:
        return node.module or ""
    base = current.split(".")
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, node.module] if node.module else base)


def imported(tree: ast.AST, current: str, is_package: bool, known: set[str]) -> set[str]:
    """The known modules ``tree`` imports (``from pkg import mod`` counts as importing ``pkg.mod``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, current, is_package)
            names = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known]
            names = names or [target]
        else:
            continue
        for name in names:
            while name and name not in known:  # ``import a.b.c`` of a package imports its module
                name = name.rpartition(".")[0]
            if name and name != current:
                out.add(name)
    return out


def graph(paths: Iterable[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules it imports, for every ``.py`` file under ``paths``."""
    files = sorted({f for p in paths for f in (p.rglob("*.py") if p.is_dir() else [p])})
    names = {module_name(f, root): f for f in files}
    known = set(names)
    return {
        name: imported(ast.parse(f.read_text(encoding="utf-8"), str(f)), name, f.name == "__init__.py", known)
        for name, f in names.items()
    }


class _Tarjan:
    """Tarjan's strongly connected components over an import graph."""

    def __init__(self, edges: dict[str, set[str]]) -> None:
        self.edges = edges
        self.index: dict[str, int] = {}
        self.low: dict[str, int] = {}
        self.stack: list[str] = []
        self.on_stack: set[str] = set()
        self.found: list[list[str]] = []

    def visit(self, v: str) -> None:
        self.index[v] = self.low[v] = len(self.index)
        self.stack.append(v)
        self.on_stack.add(v)
        for w in sorted(self.edges.get(v, ())):
            if w not in self.index:
                self.visit(w)
                self.low[v] = min(self.low[v], self.low[w])
            elif w in self.on_stack:
                self.low[v] = min(self.low[v], self.index[w])
        if self.low[v] == self.index[v]:
            self._pop_component(v)

    def _pop_component(self, root: str) -> None:
        component = []
        while True:
            w = self.stack.pop()
            self.on_stack.discard(w)
            component.append(w)
            if w == root:
                break
        if len(component) > 1:
            self.found.append(sorted(component))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module: each holds an import circle."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    tarjan = _Tarjan(edges)
    for v in sorted(edges):
        if v not in tarjan.index:
            tarjan.visit(v)
    return sorted(tarjan.found)


def circle(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """One closed path through a component, for printing: ``[a, b, …, a]``."""
    members = set(component)
    start = component[0]
    # breadth-first from start back to start, inside the component
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v] & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return [*component, start]


def main(argv: list[str]) -> int:
    targets = [Path(a).resolve() for a in argv] or [ROOT / "nbagent"]
    edges = graph(targets, ROOT)
    found = cycles(edges)
    for component in found:
        print(f"{len(component)} modules: " + " -> ".join(circle(component, edges)))
    if not found:
        print(f"no import circles among {len(edges)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
