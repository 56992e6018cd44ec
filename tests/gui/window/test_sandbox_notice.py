"""The window's one-line notice where commands run without a sandbox: why, the fix, and Details
opening Settings → Permissions; nothing where the sandbox works."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from PySide6.QtWidgets import QPushButton

from fxdesk.app import App
from fxdesk.engine import health
from fxdesk.engine.health import SandboxStatus
from fxdesk.gui.application import GuiController, Outcome
from fxdesk.gui.window.banner import Banner
from fxdesk.gui.window.startup import offer_sandbox_fix
from fxdesk.paths import DataPaths
from tests.gui.waiting import until
from tests.gui.window.test_main_window import make_window

MISSING = SandboxStatus(
    False,
    reason="bubblewrap is not installed",
    fix="Install it: sudo apt install bubblewrap (Fedora: sudo dnf install bubblewrap).",
)
NO_NAMESPACES = SandboxStatus(
    False,
    "/usr/bin/bwrap",
    "0.8.0",
    reason="user namespaces are disabled (user.max_user_namespaces = 0)",
    fix="sudo sysctl -w user.max_user_namespaces=10000, and add that line to /etc/sysctl.d/ "
    "to keep it",
)


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (
            MISSING,
            "Commands run without a sandbox: bubblewrap is not installed. Install it: sudo apt "
            "install bubblewrap (Fedora: sudo dnf install bubblewrap).",
        ),
        (
            NO_NAMESPACES,
            "Commands run without a sandbox: user namespaces are disabled "
            "(user.max_user_namespaces = 0). sudo sysctl -w user.max_user_namespaces=10000, and "
            "add that line to /etc/sysctl.d/ to keep it.",
        ),
    ],
)
def test_without_a_sandbox_one_line_says_why_and_the_fix(
    qtbot: Any, status: SandboxStatus, text: str
) -> None:
    window = make_window(qtbot)
    opened: list[str] = []
    banner = offer_sandbox_fix(window, status, lambda: opened.append("details"))
    assert banner is not None
    qtbot.waitUntil(banner.isVisible)
    assert banner.text() == text
    assert window.findChildren(Banner) == [banner]
    (details,) = [
        b for b in banner.findChildren(type(banner.dismiss_button)) if b.text() == "&Details"
    ]
    details.click()
    assert opened == ["details"]


def details(banner: Banner) -> QPushButton:
    (button,) = [b for b in banner.findChildren(QPushButton) if b.text() == "&Details"]
    assert button.accessibleName() == "Sandbox details"
    return button


def test_with_a_sandbox_nothing_is_said(qtbot: Any) -> None:
    window = make_window(qtbot)
    status = SandboxStatus(True, "/usr/bin/bwrap", "0.8.0", disable_userns=True)
    assert offer_sandbox_fix(window, status, lambda: None) is None
    assert window.findChildren(Banner) == []


class Probe:
    """The sandbox probe, faked: the status it reports, and how often it was asked."""

    def __init__(self, status: SandboxStatus) -> None:
        self.status = status
        self.asked = 0

    def __call__(self) -> SandboxStatus:
        self.asked += 1
        return self.status


async def start(data_paths: DataPaths) -> tuple[GuiController, asyncio.Future[Outcome]]:
    controller = GuiController(App(data_paths))
    task = asyncio.ensure_future(controller.main())
    await until(lambda: controller.ready.is_set() or task.done())
    return controller, task


async def stop(controller: GuiController, task: asyncio.Future[Outcome]) -> None:
    controller.request_quit()
    assert await asyncio.wait_for(task, 30) == Outcome.CLOSED


async def test_the_window_shows_the_notice_and_details_opens_the_permissions_page(
    data_paths: DataPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = Probe(MISSING)
    monkeypatch.setattr(health, "sandbox_status", probe)
    controller, task = await start(data_paths)
    try:
        banner = await until(lambda: controller.window.findChild(Banner, "sandbox_banner"))
        assert isinstance(banner, Banner)
        assert banner.text().startswith("Commands run without a sandbox: bubblewrap is not")
        assert probe.asked >= 1
        (details,) = [
            b for b in banner.findChildren(type(banner.dismiss_button)) if b.text() == "&Details"
        ]
        details.click()
        settings = await until(lambda: controller.settings)
        assert settings is not None and settings.permissions_page is not None
        assert settings.tabs.currentWidget() is settings.permissions_page
        page = settings.permissions_page
        await until(lambda: page.overview is not None)
        assert page.status_label.text() == banner.text()  # the same words in both places
    finally:
        await stop(controller, task)


async def test_the_window_says_nothing_where_the_sandbox_works(
    data_paths: DataPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = Probe(SandboxStatus(True, "/usr/bin/bwrap", "0.8.0", disable_userns=True))
    monkeypatch.setattr(health, "sandbox_status", probe)
    controller, task = await start(data_paths)
    try:
        await until(lambda: probe.asked >= 1)
        await asyncio.sleep(0.2)  # the notice would follow the probe at once
        assert controller.window.findChild(Banner, "sandbox_banner") is None
    finally:
        await stop(controller, task)
