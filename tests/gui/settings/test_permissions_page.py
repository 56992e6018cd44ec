"""Settings → Permissions against the real engine facade on a temporary data folder: what the
sandbox gives commands, and one workspace's writable paths, variables and network, saved at
once or refused with the reason (and then nothing saved).

The home folder and the workspaces live under /var/tmp: the sandbox refuses writable paths
under /tmp (its own is private), where the shared fixtures put the home folder.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PySide6.QtCore import QDir
from PySide6.QtWidgets import QAbstractButton, QFileDialog, QLabel, QLineEdit, QWidget

from fxdesk.app import App
from fxdesk.engine.facade import Engine, SandboxStatus, WorkspaceSandbox
from fxdesk.gui.settings.dialog import SettingsDialog
from fxdesk.gui.settings.permissions_page import NO_WORKSPACE, PermissionsPage
from fxdesk.paths import DataPaths
from tests.gui.approvals.test_approvals import (  # noqa: F401 (keep_running, no_bugs: autouse)
    child_dialog,
    keep_running,
    no_bugs,
    shown,
)
from tests.gui.settings.test_settings import focus_chain, unnamed_controls
from tests.gui.waiting import until


@dataclass
class Place:
    root: Path
    home: Path
    alpha: Path
    beta: Path


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-permissions-", dir="/var/tmp")).resolve()
    home, alpha, beta = root / "home", root / "alpha", root / "beta"
    for folder in (home / ".ssh", alpha, beta):
        folder.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name)
    yield Place(root, home, alpha, beta)
    shutil.rmtree(root, ignore_errors=True)


@contextlib.asynccontextmanager
async def engine_on(place: Place) -> AsyncIterator[Engine]:
    app = App(DataPaths(place.root / "data", "test"))
    await app.start_store_only()
    try:
        yield app.engine
    finally:
        await app.stop()


@contextlib.asynccontextmanager
async def page_for(
    engine: Engine, place: Place, current: str | None = None
) -> AsyncIterator[tuple[PermissionsPage, dict[str, str]]]:
    """The page over ``alpha`` and ``beta`` (known workspaces), loaded."""
    known = {}
    for folder in (place.alpha, place.beta):
        workspace = await engine.ensure_workspace(folder)
        known[str(workspace.id)] = workspace.path
    page = PermissionsPage(engine, workspaces=lambda: known, current_workspace=lambda: current)
    with shown(page):
        await until(lambda: page.overview is not None)
        yield page, known


def ids(known: dict[str, str], place: Place) -> tuple[int, int]:
    by_folder = {folder: int(key) for key, folder in known.items()}
    return by_folder[str(place.alpha)], by_folder[str(place.beta)]


async def saved(engine: Engine, page: PermissionsPage) -> WorkspaceSandbox:
    workspace_id = page.workspace_id()
    assert workspace_id is not None
    return await engine.workspace_sandbox(workspace_id)


async def test_it_says_what_every_command_gets(place: Place) -> None:
    async with engine_on(place) as engine, page_for(engine, place) as (page, _known):
        assert page.status_label.text().startswith("Commands run in a sandbox: bubblewrap")
        writable = page.writable_label.text()
        assert writable.startswith("the workspace (/var/tmp/") and "/tmp (the session's own)" in (
            writable
        )
        assert page.read_only_label.text() == ".git, .fxdesk"
        hidden = page.hidden_label.text()
        assert hidden.startswith("~/.ssh, ~/.gnupg, ~/.aws")
        more = re.search(r" and (\d+) more$", hidden)
        assert more is not None, hidden
        assert page.hidden_button.isVisible()
        page.hidden_button.click()
        assert page.overview is not None
        assert len(page.overview.hidden) == 6 + int(more[1])
        assert page.hidden_label.text() == ", ".join(page.overview.hidden)
        assert f"{place.root / 'data'}: the fxdesk data folder" in page.hidden_label.text()
        assert page.hidden_button.text() == "Show &fewer"
        assert page.network_label.text().startswith("Off in auto mode")


async def test_adding_and_removing_writable_paths_saves_at_once(place: Place) -> None:
    async with engine_on(place) as engine, page_for(engine, place) as (page, _known):
        page.paths.edit.setText("~/.cache/pip")
        page.paths.add_button.click()
        await until(lambda: page.paths.items() == ("~/.cache/pip",))
        assert (await saved(engine, page)).writable == ("~/.cache/pip",)
        assert page.paths.edit.text() == ""
        assert "~/.cache/pip (made when first used)" in page.writable_label.text()
        page.paths.list.setCurrentRow(0)
        assert page.paths.remove_button.isEnabled()
        page.paths.remove_button.click()
        await until(lambda: page.paths.items() == ())
        assert (await saved(engine, page)).writable == ()


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("~/.ssh/keys", "~/.ssh/keys: ~/.ssh is hidden (SSH keys) and stays hidden"),
        ("relative", "is not absolute"),
        ("/tmp/cache", "the sandbox has its own /tmp"),
    ],
)
async def test_a_path_the_sandbox_refuses_is_shown_inline_and_nothing_is_saved(
    place: Place, path: str, says: str
) -> None:
    async with engine_on(place) as engine, page_for(engine, place) as (page, _known):
        page.paths.edit.setText("~/.npm")
        page.paths.add_button.click()
        await until(lambda: page.paths.items() == ("~/.npm",))
        page.paths.edit.setText(path)
        page.paths.add_button.click()
        await until(page.problem.isVisible)
        assert page.problem.text().startswith("Not saved: ")
        assert says in page.problem.text()
        assert (await saved(engine, page)).writable == ("~/.npm",)
        assert page.paths.items() == ("~/.npm",)
        assert page.paths.edit.text() == path  # kept, to correct
        assert page.paths.isEnabled()
        page.paths.edit.setText("~/.cargo/registry")  # the next good one clears the problem
        page.paths.add_button.click()
        await until(lambda: not page.problem.isVisible())
        assert (await saved(engine, page)).writable == ("~/.npm", "~/.cargo/registry")


async def test_variables_are_saved_secret_looking_names_warned_reserved_ones_refused(
    place: Place,
) -> None:
    async with engine_on(place) as engine, page_for(engine, place) as (page, _known):
        page.variables.edit.setText("GITHUB_TOKEN")
        assert page.warning_label.isVisible()  # while typing, before it is saved
        assert page.warning_label.text() == (
            "GITHUB_TOKEN looks like a secret: commands, and so the model, can read its value"
        )
        page.variables.add_button.click()
        await until(lambda: page.variables.items() == ("GITHUB_TOKEN",))
        assert (await saved(engine, page)).extra_env == ("GITHUB_TOKEN",)
        assert "GITHUB_TOKEN looks like a secret" in page.warning_label.text()  # saved: still
        page.variables.edit.setText("GOFLAGS")
        page.variables.add_button.click()
        await until(lambda: page.variables.items() == ("GITHUB_TOKEN", "GOFLAGS"))
        page.variables.edit.setText("TMPDIR")
        page.variables.add_button.click()
        await until(page.problem.isVisible)
        assert "TMPDIR cannot be passed on: the sandbox sets it to its own /tmp" in (
            page.problem.text()
        )
        assert (await saved(engine, page)).extra_env == ("GITHUB_TOKEN", "GOFLAGS")


async def test_the_network_checkbox_is_saved_for_the_workspace(place: Place) -> None:
    async with engine_on(place) as engine, page_for(engine, place) as (page, known):
        page.network_check.click()
        await until(lambda: page.network_label.text().startswith("On for this workspace"))
        assert (await saved(engine, page)).network is True
        alpha, beta = ids(known, place)
        assert (
            await engine.workspace_sandbox(beta if page.workspace_id() == alpha else alpha)
        ) == (WorkspaceSandbox())  # the other workspace is untouched
        page.network_check.click()
        await until(lambda: page.network_label.text().startswith("Off in auto mode"))
        assert (await saved(engine, page)).network is False


async def test_the_current_sessions_workspace_comes_first_and_each_shows_its_own(
    place: Place,
) -> None:
    async with engine_on(place) as engine:
        beta = await engine.ensure_workspace(place.beta)
        await engine.set_workspace_sandbox(beta.id, WorkspaceSandbox.make(["~/.m2"], ["JAVA_OPTS"]))
        async with page_for(engine, place, current=str(beta.id)) as (page, _known):
            assert page.workspace_combo.currentText() == str(place.beta)
            assert page.paths.items() == ("~/.m2",)
            assert page.variables.items() == ("JAVA_OPTS",)
            page.workspace_combo.setCurrentIndex(1)
            await until(lambda: page.paths.items() == ())
            assert page.workspace_combo.currentText() == str(place.alpha)
            assert f"the workspace ({place.alpha})" in page.writable_label.text().replace(
                "~", str(place.home)
            )


async def test_without_a_workspace_there_is_nothing_to_edit(place: Place) -> None:
    async with engine_on(place) as engine:
        page = PermissionsPage(engine, workspaces=dict)
        with shown(page):
            await until(lambda: page.overview is not None)
            assert page.workspace_combo.currentText() == NO_WORKSPACE
            for editor in (page.paths, page.variables, page.network_check):
                assert not editor.isEnabled()
            assert page.writable_label.text().startswith("the workspace, /tmp")


async def test_without_a_sandbox_the_page_says_why_and_the_fix(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def unavailable() -> SandboxStatus:
        asked.append("status")
        return SandboxStatus(False, reason="bubblewrap is not installed", fix="Install it.")

    async with engine_on(place) as engine:
        monkeypatch.setattr(engine, "sandbox_status", unavailable)
        async with page_for(engine, place) as (page, _known):
            assert page.status_label.text() == (
                "Commands run without a sandbox: bubblewrap is not installed. Install it."
            )
            assert asked == ["status"]


async def test_browse_adds_the_folder_picked_written_from_the_home_folder(place: Place) -> None:
    cache = place.home / ".cache" / "tool"
    cache.mkdir(parents=True)
    async with engine_on(place) as engine, page_for(engine, place) as (page, _known):
        assert page.paths.browse_button is not None
        page.paths.browse_button.click()
        picker = await child_dialog(page, QFileDialog)
        assert picker.filter() & QDir.Filter.Hidden  # ~/.cache, ~/.npm are listed
        name = picker.findChild(QLineEdit, "fileNameEdit")
        name.setText(str(cache))  # typed, as with the keyboard
        picker.accept()
        await until(lambda: page.paths.items() == ("~/.cache/tool",))
        assert (await saved(engine, page)).writable == ("~/.cache/tool",)


async def test_in_the_settings_dialog_every_control_is_named_and_reachable_by_tab(
    place: Place,
) -> None:
    async with engine_on(place) as engine:
        workspace = await engine.ensure_workspace(place.alpha)
        dialog = SettingsDialog(
            engine.profiles,
            place.root / "data",
            sandbox=engine,
            workspaces=lambda: {str(workspace.id): workspace.path},
        )
        with shown(dialog):
            page = dialog.permissions_page
            assert page is not None
            index = dialog.tabs.indexOf(page)
            assert dialog.tabs.tabText(index) == "Permi&ssions"
            dialog.tabs.setCurrentWidget(page)
            await until(lambda: page.overview is not None)
            page.paths.edit.setText("x")  # enables the buttons that need text or a selection
            page.paths.list.addItem("y")
            page.paths.list.setCurrentRow(0)
            assert unnamed_controls(page) == []
            chain = focus_chain(dialog)
            for control in (
                page.workspace_combo, page.paths.list, page.paths.edit, page.paths.add_button,
                page.paths.browse_button, page.paths.remove_button, page.variables.list,
                page.variables.edit, page.variables.add_button, page.network_check,
            ):  # fmt: skip
                assert control in chain, control.accessibleName()
            assert mnemonics(dialog) == sorted(set(mnemonics(dialog)))  # none twice


def mnemonics(dialog: SettingsDialog) -> list[str]:
    """The Alt+letter keys of the visible page and the tabs, sorted."""
    texts = [dialog.tabs.tabText(i) for i in range(dialog.tabs.count())]
    visible = [w for w in dialog.findChildren(QWidget) if w.isVisible()]
    texts += [w.text() for w in visible if isinstance(w, QAbstractButton | QLabel)]
    return sorted(m[1].lower() for text in texts if (m := re.search(r"&(\w)", text)))
