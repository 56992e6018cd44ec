"""A cheaper answer to the question PySide6 asks of every module imported after it.

PySide6 (``shibokensupport.feature``, PYSIDE-2029) decides for each newly imported module
whether it uses PySide6, so that ``from __feature__ import ...`` can be switched per module: it
calls ``inspect.getsource(module)`` and looks for the text "PySide6" in it. ``getsource``
tokenizes the file to find its encoding and keeps every line in ``linecache`` for the rest of
the process: ~0.2 ms and the whole source kept for each of the ~300 modules fxdesk imports
while it starts (issue 17, docs/performance.md). Reading the file's bytes and looking for the
same word gives the same answer (sources are UTF-8, and the word is ASCII) for ~0.05 ms and
keeps nothing. Anything that is not a readable ``.py`` file goes to PySide6's own check.

fxdesk uses no ``__feature__``; this only makes the check cheaper, and is left out if a PySide6
release no longer has the function it replaces.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType

_FEATURE = "shibokensupport.feature"
_CHECK = "_mod_uses_pyside"
_WORD = b"PySide6"


def uses_pyside(module: ModuleType, fallback: Callable[[ModuleType], bool]) -> bool:
    """Whether ``module``'s source file names PySide6; ``fallback`` for modules without one."""
    path = getattr(module, "__file__", None)
    if isinstance(path, str) and path.endswith(".py"):
        try:
            with open(path, "rb") as source:
                return _WORD in source.read()
        except OSError:
            pass
    return fallback(module)


def install() -> bool:
    """Make PySide6 use ``uses_pyside``; whether it could (False: nothing changed, e.g. PySide6
    is missing or broken, which ``fxdesk doctor`` reports in its own words)."""
    try:
        importlib.import_module("PySide6")  # loads shibokensupport.feature
    except ImportError:
        return False
    feature = sys.modules.get(_FEATURE)
    original = getattr(feature, _CHECK, None)
    if feature is None or not callable(original):
        return False
    if getattr(original, "fxdesk", False):
        return True

    def check(module: ModuleType) -> bool:
        return uses_pyside(module, original)

    check.fxdesk = True  # type: ignore[attr-defined]
    setattr(feature, _CHECK, check)
    return True
