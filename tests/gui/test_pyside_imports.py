"""PySide6's per-module "does it use PySide6?" check, made cheaper, answers as PySide6's own."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fxdesk.gui import pyside_imports
from tests.helpers import child_env

# Modules that name PySide6 and modules that do not, ours and the standard library's.
SAMPLE = (
    "fxdesk.gui.launch",
    "fxdesk.gui.window.main_window",
    "fxdesk.gui.transcript.markdown",
    "fxdesk.domain.model",
    "fxdesk.paths",
    "json",
    "enum",
    "asyncio.events",
)


def pyside_check() -> object:
    return sys.modules["shibokensupport.feature"]._mod_uses_pyside  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", SAMPLE)
def test_the_same_answer_as_pyside6s_own_check(name: str) -> None:
    module = importlib.import_module(name)
    inspected: list[ModuleType] = []

    def pyside_own(m: ModuleType) -> bool:
        import inspect

        inspected.append(m)
        return "PySide6" in inspect.getsource(m)

    assert pyside_imports.uses_pyside(module, pyside_own) == pyside_own(module)
    assert inspected == [module]  # asked once: by the comparison, never by uses_pyside


def test_a_module_without_a_source_file_goes_to_pyside6s_check(tmp_path: Path) -> None:
    asked: list[str] = []
    built_in = sys.modules["sys"]
    gone = ModuleType("gone")
    gone.__file__ = str(tmp_path / "gone.py")  # no such file
    compiled = ModuleType("compiled")
    compiled.__file__ = str(tmp_path / "compiled.so")
    for module in (built_in, gone, compiled):
        assert pyside_imports.uses_pyside(module, lambda m: asked.append(m.__name__) or True)
    assert asked == ["sys", "gone", "compiled"]


def test_the_window_package_installs_it_once() -> None:
    import fxdesk.gui  # noqa: F401  (installs it)

    check = pyside_check()
    assert getattr(check, "fxdesk", False)
    assert pyside_imports.install()
    assert pyside_check() is check  # not wrapped twice


def test_the_first_frame_keeps_no_module_sources_in_linecache() -> None:
    """PySide6's own check read every module through inspect, which kept its lines."""
    code = (
        "import linecache, sys\n"
        "from fxdesk.cli.main import main\n"
        "import fxdesk.gui.launch, fxdesk.gui.window.main_window\n"
        "print(sum(1 for name in linecache.cache if '/fxdesk/' in name))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "0"
