"""Runs a program and reports, on file descriptor ``FXDESK_PROBE_FD``, when its main window paints.

``python -m bench.paint_probe fxdesk [ARGS]`` runs fxdesk's own entry point;
``python -m bench.paint_probe bare`` runs the reference: a bare PySide6 program that shows one
empty ``QMainWindow``. In both, ``QWidget.show`` is wrapped so that the first top-level
``QMainWindow`` shown gets an event filter; its first paint event is timed (a window is painted
before the widgets inside it), then the widgets inside it get the filter too, and the first
paint of any of them after "Ready" is timed. Two lines go to the file descriptor:

- ``paint <monotonic_ns> <rss_bytes>`` at the first paint event (the window's first frame);
- ``ready <monotonic_ns> <rss_bytes>`` at the first paint after the status bar said "Ready"
  (fxdesk only: the window showing its data).

``time.monotonic_ns`` is CLOCK_MONOTONIC, the same clock in the parent, so the parent subtracts
its own time from just before it started the process. The wrapper itself imports only what
both programs import anyway (PySide6.QtCore/QtWidgets), before the timed code runs (for fxdesk,
after its command line module, as fxdesk imports them). It leaves
the window's children alone until the first paint: a Python wrapper made for each of them (and
for the Qt types they are, with their enums) costs the program with more widgets tens of
milliseconds the program itself does not spend.
"""

from __future__ import annotations

import importlib
import os
import sys
import time

_FD = int(os.environ.get("FXDESK_PROBE_FD", "1"))
# A file: pyinstrument's report goes there; or, for a name ending in .prof, cProfile's stats
# (``python -m pstats FILE``), when pyinstrument is not installed.
_PROFILE = os.environ.get("FXDESK_PROBE_PROFILE")
_profiler = None
_cprofile = None
if _PROFILE and _PROFILE.endswith(".prof"):
    import cProfile

    _cprofile = cProfile.Profile()
    _cprofile.enable()
elif _PROFILE:
    import pyinstrument

    _profiler = pyinstrument.Profiler(interval=0.0005)
    _profiler.start()


def _stop_profile() -> None:
    if _cprofile is not None and _PROFILE:
        _cprofile.disable()
        _cprofile.dump_stats(_PROFILE)
    if _profiler is not None and _PROFILE:
        _profiler.stop()
        with open(_PROFILE, "w") as out:
            out.write(_profiler.output_text(unicode=False, show_all=False))


# fxdesk's command line first, then PySide6: the order ``python -m fxdesk`` imports them in.
# (PySide6 inspects the source of every module imported after it, looking for
# ``__feature__``; imported first, it would inspect the command line's modules too.)
if sys.argv[1:2] == ["fxdesk"]:
    importlib.import_module("fxdesk.cli.main")

from PySide6.QtCore import QEvent, QObject  # noqa: E402  (after fxdesk's command line)
from PySide6.QtWidgets import QApplication, QMainWindow, QWidget  # noqa: E402

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss() -> int:
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * _PAGE


def _say(what: str) -> None:
    os.write(_FD, f"{what} {time.monotonic_ns()} {_rss()}\n".encode())


class _PaintWatch(QObject):
    def __init__(self, window: QMainWindow) -> None:
        super().__init__()
        self.window = window
        self.painted = False
        self.ready = False  # the status bar said "Ready"
        self.reported_ready = False
        bar = window.statusBar()
        bar.messageChanged.connect(self._on_message)
        # fxdesk's status bar keeps its messages in a label rather than showMessage
        self._bar = bar

    def _on_message(self, text: str) -> None:
        if "Ready" in text:
            self.ready = True

    def _ready_now(self) -> bool:
        if self.ready:
            return True
        for label in self._bar.findChildren(QWidget):
            text = getattr(label, "text", None)
            if callable(text) and "Ready" in str(text()):
                self.ready = True
        return self.ready

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            if not self.painted:
                self.painted = True
                _say("paint")
                if os.environ.get("FXDESK_PROBE_EXIT") == "paint":
                    _stop_profile()
                    os._exit(0)  # profiling start-up: stop at the first frame
                for child in self.window.findChildren(QWidget):  # "ready" may paint only them
                    child.installEventFilter(self)
            elif not self.reported_ready and self._ready_now():
                self.reported_ready = True
                _say("ready")
                if os.environ.get("FXDESK_PROBE_EXIT") == "ready":
                    _stop_profile()
                    os._exit(0)
        elif event.type() == QEvent.Type.ChildAdded and self.painted:
            child = event.child()  # type: ignore[attr-defined]
            if isinstance(child, QWidget):
                child.installEventFilter(self)
        return False


_watch: _PaintWatch | None = None
_show = QWidget.show


def _probe_show(self: QWidget) -> None:
    global _watch
    if _watch is None and isinstance(self, QMainWindow):
        _watch = _PaintWatch(self)
        self.installEventFilter(_watch)
    _show(self)


QWidget.show = _probe_show  # type: ignore[method-assign]


def bare() -> int:
    """The reference: the least a PySide6 program does to paint one main window."""
    app = QApplication(sys.argv)
    window = QMainWindow()
    window.resize(1000, 700)
    window.show()
    return app.exec()


def main() -> int:
    what = sys.argv[1]
    if what == "bare":
        return bare()
    from fxdesk.cli import main as fxdesk_main

    return fxdesk_main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
