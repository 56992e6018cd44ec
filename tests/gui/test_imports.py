"""The window's modules import each other in one direction: no module of ``fxdesk.gui`` reaches
itself again through its imports (function-level and type-checking imports included)."""

from __future__ import annotations

import grimp


def test_no_import_circles_between_the_modules_of_the_window() -> None:
    graph = grimp.build_graph("fxdesk")
    modules = sorted(m for m in graph.modules if m.startswith("fxdesk.gui"))
    circles = [
        (first, second)
        for first in modules
        for second in modules
        if first < second
        and graph.chain_exists(importer=first, imported=second)
        and graph.chain_exists(importer=second, imported=first)
    ]
    assert circles == []
