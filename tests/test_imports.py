"""The import graph of our packages against DESIGN.md: no circle between modules and no import
against the layer table, lazy imports (inside functions) included.

Read from the source with `ast`, so nothing is imported. An edge is every ``import`` /
``from … import`` of one of our modules anywhere in a module: at the top, inside functions
(lazy) and under ``if TYPE_CHECKING:`` (a module that names another's type depends on it, and a
lazy import only hides a circle). ``from a.b import c`` is an edge to ``a.b.c`` when that is a
module, else to ``a.b``; parent packages' ``__init__`` are not edges (Python runs them first
whatever the order, and re-exports are their job).

Known violations that other work removes are listed in ``KNOWN_CIRCLES`` and ``KNOWN_LAYER_BREAKS``
with why: any other circle or layer break fails, and an entry that no longer occurs fails too
(delete it, so the list only shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the shared root (DESIGN.md's first row): the modules of ``prior/`` itself, which every layer
#: may import and which import nothing of ours but each other. A new module there must be added
#: here on purpose (the root stays small); anything else goes into a package.
ROOT_MODULES = frozenset({"prior", "prior.errors", "prior.hints", "prior.paths", "prior.progress",
                          "prior.parser_spec", "prior.shipped"})
#: the layers of DESIGN.md's table, each with what it may import (the table's "may import",
#: closed under "layers below": pipeline and trainers reach layouts through featurestore)
LAYERS = ("root", "layouts", "featurestore", "pipeline", "trainers", "cli")
MAY_IMPORT: dict[str, frozenset[str]] = {
    "root": frozenset({"root"}),
    "layouts": frozenset({"layouts", "root"}),
    "featurestore": frozenset({"featurestore", "layouts", "root"}),
    "pipeline": frozenset({"pipeline", "featurestore", "layouts", "root"}),
    "trainers": frozenset({"trainers", "featurestore", "layouts", "root"}),
    "cli": frozenset(LAYERS),
}

#: circles that exist today, each as the set of modules of one strongly connected component;
#: a component found must lie inside one of these (a smaller circle is fine)
KNOWN_CIRCLES: list[frozenset[str]] = [
]

#: (importing module, imported module) pairs that break the layer table today
KNOWN_LAYER_BREAKS: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def our_modules() -> dict[str, Path]:
    """Module name → file, for every module of ``prior``: the layer packages and the modules of
    ``prior/`` itself (the shared root)."""
    return {_module_name(path): path for path in sorted((ROOT / "prior").rglob("*.py"))}


def layer_of(module: str) -> str | None:
    """A module's layer: ``root`` for the shared root's modules, else its package below an
    optional ``prior.`` prefix; None for a module of no layer."""
    if module in ROOT_MODULES:
        return "root"
    parts = module.split(".")
    if parts[0] == "prior" and len(parts) > 1:
        parts = parts[1:]
    return parts[0] if parts[0] in MAY_IMPORT and parts[0] != "root" else None


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, wherever it stands."""
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child


def edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of ours it imports (anywhere in its file)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a non-module c
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def layer_breaks(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importing module, imported module) pairs against the layer table."""
    out = set()
    for source, targets in graph.items():
        layer = layer_of(source)
        for target in targets:
            to = layer_of(target)
            if layer is not None and to is not None and to not in MAY_IMPORT[layer]:
                out.add((source, target))
    return out


GRAPH = edges(our_modules())


def test_imports_the_check_sees_lazy_imports_and_circles(tmp_path: Path) -> None:
    """The checker on a tiny graph: a lazy import and a TYPE_CHECKING one close circles."""
    files = {"a.py": "def f():\n    from b import g\n", "b.py": "import c\n",
             "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n",
             "d.py": "import a\n", "p/__init__.py": "", "p/q.py": "from . import r\n", "p/r.py": "from p.q import x\n"}
    modules = {}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
        modules[name[:-3].replace("/__init__", "").replace("/", ".")] = tmp_path / name
    graph = edges(modules)
    assert graph == {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "p": set(), "p.q": {"p.r"}, "p.r": {"p.q"}}
    assert sorted(map(sorted, circles(graph))) == [["a", "b", "c"], ["p.q", "p.r"]]
    assert layer_breaks({"layouts.x": {"featurestore.y"}, "cli.z": {"trainers.t"}}) == {("layouts.x", "featurestore.y")}


def test_imports_the_root_is_below_every_layer() -> None:
    """Every layer may import the shared root; the root imports nothing of the layers."""
    assert layer_breaks({"prior.errors": {"prior.featurestore.x"}, "prior.paths": {"prior.errors"},
                         "prior.layouts.y": {"prior.paths"}, "prior.featurestore.z": {"prior.progress"}}) \
        == {("prior.errors", "prior.featurestore.x")}


def test_imports_every_module_has_a_layer() -> None:
    """A module of ``prior/`` itself is in ``ROOT_MODULES`` (the root grows only on purpose),
    every other one in a package of the layer table."""
    assert [m for m in GRAPH if layer_of(m) is None] == []
    assert set(GRAPH) >= ROOT_MODULES


def test_imports_find_our_modules() -> None:
    assert len(GRAPH) > 50 and {"prior.pipeline.build", "prior.trainers.loop", "prior.cli.main"} <= set(GRAPH)
    build = GRAPH["prior.pipeline.build"]
    assert "prior.pipeline.features.registry" in build  # a lazy import


def test_imports_no_new_circle() -> None:
    new = [sorted(c) for c in circles(GRAPH)
           if not any(set(c) <= known for known in KNOWN_CIRCLES)]
    assert new == [], f"import circles (lazy imports included): {new}"


def test_imports_no_new_layer_break() -> None:
    new = sorted(layer_breaks(GRAPH) - KNOWN_LAYER_BREAKS)
    assert new == [], f"imports against DESIGN.md's layer table: {new}"


def test_imports_known_violations_still_occur() -> None:
    """When a listed violation is gone, delete its entry: the allow-lists only shrink."""
    found = [set(c) for c in circles(GRAPH)]
    stale_circles = [sorted(k) for k in KNOWN_CIRCLES if not any(c <= k and len(c) > 1 for c in found)]
    stale_breaks = sorted(KNOWN_LAYER_BREAKS - layer_breaks(GRAPH))
    assert stale_circles == [] and stale_breaks == [], (stale_circles, stale_breaks)
