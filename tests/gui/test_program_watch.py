"""A frozen fxdesk whose program file is replaced on disk (a package upgrade) or removed says
that a restart is due, once, in a banner with Quit."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.gui import application
from fxdesk.gui.application import GuiController, Outcome
from fxdesk.gui.desktop.program_watch import ProgramWatch, frozen_program
from fxdesk.gui.window.banner import Banner
from fxdesk.paths import DataPaths
from tests.gui.waiting import until


def _program(folder: Path, text: str = "old") -> Path:
    program = folder / "fxdesk"
    program.write_text(text)
    return program


def _replace(program: Path, text: str) -> None:
    """As dpkg does: write the new file beside the old one, then rename it over."""
    new = program.with_suffix(".dpkg-new")
    new.write_text(text)
    os.replace(new, program)


def test_a_checkout_does_not_watch() -> None:
    assert frozen_program() is None


def test_replacing_the_program_is_noticed_once(tmp_path: Path) -> None:
    program = _program(tmp_path)
    watch = ProgramWatch(program)
    seen: list[bool] = []
    watch.replaced.connect(seen.append)
    assert not watch.check()
    _replace(program, "new")
    assert watch.check()
    assert not watch.check()
    assert seen == [False]


def test_removing_the_program_is_noticed(tmp_path: Path) -> None:
    program = _program(tmp_path)
    watch = ProgramWatch(program)
    seen: list[bool] = []
    watch.replaced.connect(seen.append)
    program.unlink()
    assert watch.check()
    assert seen == [True]


async def test_the_window_says_to_restart_after_an_upgrade(
    data_paths: DataPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program(tmp_path)
    monkeypatch.setattr(application, "frozen_program", lambda: program)
    controller = GuiController(App(data_paths))
    task = asyncio.ensure_future(controller.main())
    try:
        await until(lambda: controller.ready.is_set() or task.done())
        assert controller.program_watch is not None
        _replace(program, "new")
        assert controller.program_watch.check()
        banner = controller.window.findChild(Banner, "restart_banner")
        assert banner is not None and "updated while it runs" in banner.text()
    finally:
        controller.request_quit()
        assert await asyncio.wait_for(task, 30) == Outcome.CLOSED
