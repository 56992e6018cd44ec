#!/usr/bin/env python3
"""List import circles between fxdesk's modules; exit 1 if there is any.

import-linter's layers contract catches circles *between layers*; this catches them anywhere,
also inside one layer or one package (``a`` imports ``b`` and ``b`` imports ``a``, directly or
through others). Imports inside functions and under ``TYPE_CHECKING`` count too: a circle that
only works because one side imports late is still a circle for the reader.

The graph is grimp's (the library import-linter is built on). A package's ``__init__`` importing
its own submodules to re-export them is not counted as a circle with those submodules.

Usage: scripts/import_cycles.py [PACKAGE]   (default: fxdesk; run from the repository root)
"""

from __future__ import annotations

import sys

import grimp


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the groups of modules that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
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


def module_graph(package: str) -> dict[str, set[str]]:
    built = grimp.build_graph(package)
    graph: dict[str, set[str]] = {}
    for module in built.modules:
        if not module.startswith(package):
            continue
        targets = set()
        for imported in built.find_modules_directly_imported_by(module):
            if not imported.startswith(package) or imported == module:
                continue
            if imported.startswith(module + "."):
                continue  # a package's __init__ re-exporting its own submodule
            targets.add(imported)
        graph[module] = targets
    return graph


def main(argv: list[str]) -> int:
    package = argv[1] if len(argv) > 1 else "fxdesk"
    graph = module_graph(package)
    circles = strongly_connected(graph)
    edges = sum(len(t) for t in graph.values())
    print(f"{len(graph)} modules, {edges} imports between them, {len(circles)} import circle(s)")
    for group in circles:
        print("  circle: " + " <-> ".join(group))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
