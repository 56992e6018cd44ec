"""scripts/import_cycles.py finds circles, including long ones, and nothing else."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_cycles.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_cycles"] = module
    spec.loader.exec_module(module)
    return module


def test_finds_each_circle_once_and_ignores_chains() -> None:
    cycles = _load()
    graph = {
        "a": {"b"},
        "b": {"a", "c"},  # a <-> b
        "c": {"d"},
        "d": {"e"},
        "e": {"c"},  # c -> d -> e -> c
        "f": {"a", "g"},  # f and g only point into circles or onwards: no circle
        "g": set(),
    }
    assert sorted(cycles.strongly_connected(graph)) == [["a", "b"], ["c", "d", "e"]]


def test_the_package_has_no_circles() -> None:
    cycles = _load()
    assert cycles.strongly_connected(cycles.module_graph("fxdesk")) == []
