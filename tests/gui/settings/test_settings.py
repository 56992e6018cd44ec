"""The first-run setup dialog, the Settings window and the theme, with a real ProfileService."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import keyring
import keyring.backends.null
import pytest
from PySide6.QtCore import QObject, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QDialog,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QProxyStyle,
    QSpinBox,
    QWidget,
)

from fxdesk import messages
from fxdesk.domain.model import KeySource, PermissionMode, Profile
from fxdesk.engine.profiles import ProfileService
from fxdesk.gui.settings.dialog import ProfileDialog, SettingsDialog
from fxdesk.gui.settings.profile_form import ProfileForm, alive
from fxdesk.gui.settings.setup_dialog import SetupDialog
from fxdesk.gui.theme import apply_appearance, current_appearance
from fxdesk.providers.demo import DEMO_SCRIPT
from fxdesk.store import Store
from fxdesk.store.secrets import NO_BACKEND_HELP
from tests.gui.waiting import until
from tests.llmock_server import LLMock

SECRET = "sk-test-settings-4b1d9e-do-not-leak"

ShownWidget = TypeVar("ShownWidget", bound=QWidget)


@contextlib.asynccontextmanager
async def profile_service(tmp_path: Path) -> AsyncIterator[ProfileService]:
    store = await Store.aopen(tmp_path / "db.sqlite3")
    try:
        yield ProfileService(store)
    finally:
        await asyncio.get_running_loop().run_in_executor(None, store.close)


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    """Wait until the async ``check`` holds (for values stored by tasks the GUI started)."""
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


@contextlib.contextmanager
def shown(widget: ShownWidget) -> Iterator[ShownWidget]:
    """``widget`` shown for the block, then closed and deleted."""
    widget.show()
    try:
        yield widget
    finally:
        widget.close()
        widget.deleteLater()


@pytest.fixture(autouse=True)
def keep_running(qapp: QApplication) -> Iterator[None]:
    """Closing a dialog that is the only window must not quit the application (and the loop)."""
    before = qapp.quitOnLastWindowClosed()
    qapp.setQuitOnLastWindowClosed(False)
    yield
    qapp.setQuitOnLastWindowClosed(before)


@pytest.fixture(autouse=True)
def no_bugs() -> Iterator[list[messages.Message]]:
    """Fails the test if a task the dialogs started ended in an unexpected error."""
    seen: list[messages.Message] = []
    detach = messages.hub.attach(seen.append)
    yield seen
    detach()
    errors = [m.text for m in seen if m.level == messages.Level.ERROR]
    assert not errors, errors


@pytest.fixture
def null_keyring() -> Iterator[None]:
    keyring.set_keyring(keyring.backends.null.Keyring())
    yield


def fill(form: ProfileForm, *, kind: str, name: str, model: str, key: str = "") -> None:
    form.set_kind(kind)
    form.name_edit.setText(name)
    form.model_edit.setText(model)
    form.key_edit.setText(key)


def focus_chain(window: QWidget) -> list[QWidget]:
    """The widgets Tab visits in ``window``, in order."""
    chain: list[QWidget] = []
    widget = window.nextInFocusChain()
    while widget is not window and widget not in chain:
        tabbable = widget.focusPolicy() & Qt.FocusPolicy.TabFocus
        if tabbable and widget.isVisible() and widget.isEnabled():
            chain.append(widget)
        widget = widget.nextInFocusChain()
    return chain


def unnamed_controls(window: QWidget) -> list[str]:
    kinds = (QLineEdit, QComboBox, QAbstractButton, QSpinBox, QListWidget)
    return [
        f"{type(w).__name__} {w.objectName() or getattr(w, 'text', lambda: '')()}"
        for w in window.findChildren(QWidget)
        if isinstance(w, kinds) and w.isVisible() and not w.accessibleName()
        and w.parent() is not None and not isinstance(w.parent(), (QSpinBox, QComboBox))
    ]  # fmt: skip


# --- first run ------------------------------------------------------------------------------


async def test_first_run_saves_an_openai_profile_with_its_key_as_default(
    tmp_path: Path, file_keyring: Path
) -> None:
    async with profile_service(tmp_path) as service:
        dialog = SetupDialog(service)
        with shown(dialog):
            assert dialog.windowTitle() == "Set up a model"
            form = dialog.form
            assert form.key_edit.echoMode() == QLineEdit.EchoMode.Password
            assert form.url_edit.placeholderText() == "https://api.openai.com/v1"
            assert "11434" in form.url_hint.text()
            fill(form, kind="openai", name="work", model="gpt-4.1-mini", key=SECRET)
            form.url_edit.setText("http://localhost:11434/v1")
            dialog.save_button.click()
            await until(lambda: dialog.result() == QDialog.DialogCode.Accepted)
        assert dialog.saved_name == "work"
        saved = await service.get("work")
        assert saved is not None
        assert (saved.kind, saved.model, saved.base_url) == (
            "openai",
            "gpt-4.1-mini",
            "http://localhost:11434/v1",
        )
        assert saved.key_source == KeySource.KEYRING
        assert await service.default_name() == "work"
        assert await service.has_key("work") is True
    assert keyring.get_password("fxdesk", "profile:work") == SECRET
    assert any(p.is_file() for p in file_keyring.rglob("*"))  # in the test's own file keyring
    assert not any(SECRET.encode() in p.read_bytes() for p in tmp_path.glob("db.sqlite3*"))


async def test_the_demo_button_creates_the_demo_profile_as_default(tmp_path: Path) -> None:
    async with profile_service(tmp_path) as service:
        dialog = SetupDialog(service)
        with shown(dialog):
            assert dialog.demo_button.accessibleName() == "Try the offline demo agent"
            dialog.demo_button.click()
            await until(lambda: dialog.result() == QDialog.DialogCode.Accepted)
        demo = await service.get("demo")
        assert demo is not None
        assert (demo.kind, demo.script_path, demo.key_source) == (
            "scripted",
            DEMO_SCRIPT,
            KeySource.NONE,
        )
        assert await service.default_name() == "demo"


async def test_a_missing_model_is_explained_and_nothing_is_saved(tmp_path: Path) -> None:
    async with profile_service(tmp_path) as service:
        dialog = SetupDialog(service)
        with shown(dialog):
            fill(dialog.form, kind="anthropic", name="claude", model="", key=SECRET)
            assert not dialog.form.message.isVisible()  # not before the person tries to save
            dialog.save_button.click()
            await until(dialog.form.message.isVisible)
            assert dialog.form.message.text() == "A model name is needed."
            # The keyboard goes to the field to fix, and the message is shown whole.
            dialog.activateWindow()
            await until(dialog.form.model_edit.hasFocus)
            message = dialog.form.message
            assert message.height() >= message.heightForWidth(message.width())
            assert dialog.isVisible() and dialog.result() == 0
            dialog.form.model_edit.setText("claude-sonnet-4-5")  # the message follows the fields
            assert not dialog.form.message.isVisible()
            dialog.later_button.click()
            assert dialog.result() == QDialog.DialogCode.Rejected
        assert await service.list() == []
        assert await service.default_name() is None


async def test_without_a_keyring_the_plain_message_shows_and_nothing_is_saved(
    tmp_path: Path, null_keyring: None
) -> None:
    async with profile_service(tmp_path) as service:
        dialog = SetupDialog(service)
        with shown(dialog):
            fill(dialog.form, kind="openai", name="work", model="gpt-4.1-mini", key=SECRET)
            dialog.save_button.click()
            await until(lambda: NO_BACKEND_HELP in dialog.form.message.text())
            assert dialog.isVisible() and dialog.result() == 0
            assert dialog.save_button.isEnabled()
            assert SECRET not in dialog.form.message.text()
            # The way out the message names: the key from an environment variable.
            dialog.form.key_source_combo.setCurrentIndex(
                dialog.form.key_source_combo.findData(KeySource.ENV.value)
            )
            assert dialog.form.key() is None
            dialog.save_button.click()
            await until(lambda: dialog.result() == QDialog.DialogCode.Accepted)
        saved = await service.get("work")
        assert saved is not None
        assert (saved.key_source, saved.key_env) == (KeySource.ENV, "OPENAI_API_KEY")


async def test_test_connection_shows_the_result_and_waits_for_it(tmp_path: Path) -> None:
    async with profile_service(tmp_path) as service:
        dialog = SetupDialog(service)
        with shown(dialog):
            form = dialog.form
            form.set_kind("scripted")
            assert not form.url_edit.isVisible() and not form.key_edit.isVisible()
            assert form.demo_note.isVisible()
            form.test_button.click()
            assert not form.test_button.isEnabled() and form.test_result.text() == "Testing…"
            await until(lambda: form.test_result.text().startswith("✓"))
            assert form.test_button.isEnabled()
            # A provider problem is a plain ✗ with what went wrong, never an exception.
            fill(form, kind="openai", name="work", model="gpt-4.1-mini")
            form.key_source_combo.setCurrentIndex(form.key_source_combo.findData("env"))
            form.env_edit.setText("FXDESK_TEST_UNSET_KEY")
            form.test_button.click()
            await until(lambda: form.test_result.text().startswith("✗"))
            assert "FXDESK_TEST_UNSET_KEY" in form.test_result.text()
            assert form.test_button.isEnabled()
        assert await service.list() == []


async def test_a_typed_key_is_tested_before_it_is_saved(tmp_path: Path, llmock: LLMock) -> None:
    llmock.scenario({"type": "reply", "text": "pong", "match": {"provider": "openai"}})
    async with profile_service(tmp_path) as service:
        dialog = SetupDialog(service)
        with shown(dialog):
            form = dialog.form
            fill(form, kind="openai", name="work", model="gpt-test")
            form.url_edit.setText(f"{llmock.base}/v1")
            form.key_source_combo.setCurrentIndex(form.key_source_combo.findData("keyring"))
            form.key_edit.setText(SECRET)  # typed, not stored anywhere yet
            form.test_button.click()
            await until(lambda: form.test_result.text().startswith("✓"))
            assert "replied 'pong'" in form.test_result.text()
            assert SECRET not in form.test_result.text()
        assert len(llmock.requests()) == 1
        assert await service.list() == []  # testing saved nothing


def test_the_form_shows_only_the_fields_of_its_kind(qtbot: object, qapp: QApplication) -> None:
    form = ProfileForm(ProfileService(None))  # type: ignore[arg-type]  # no calls are made
    form.show()
    try:
        form.set_kind("anthropic")
        assert form.url_edit.placeholderText() == "https://api.anthropic.com"
        assert form.name_edit.text() == "anthropic"  # suggested until the person types one
        form.key_source_combo.setCurrentIndex(form.key_source_combo.findData("env"))
        assert form.env_edit.isVisible() and not form.key_edit.isVisible()
        assert not form.effort_combo.isVisible()
        form.more_button.setChecked(True)
        assert form.effort_combo.isVisible() and form.price_in_edit.isVisible()
        form.model_edit.setText("claude-opus-4")
        form.effort_combo.setCurrentIndex(form.effort_combo.findData("high"))
        form.max_tokens_spin.setValue(8192)
        form.price_in_edit.setText("15")
        form.price_out_edit.setText("x")
        assert form.problem() is not None and "Prices" in (form.problem() or "")
        form.price_out_edit.setText("75")
        assert form.problem() is None
        profile = form.profile()
        assert (profile.effort, profile.max_tokens) == ("high", 8192)
        assert (profile.price_in_per_mtok, profile.price_out_per_mtok) == (15.0, 75.0)
        assert (profile.key_source, profile.key_env) == (KeySource.ENV, "ANTHROPIC_API_KEY")
        # Editing: the name is fixed, an empty key keeps the stored one.
        stored = Profile("work", "openai", model="gpt-4.1", read_timeout_s=300.0)
        form.set_profile(stored)
        assert form.name_edit.isReadOnly() and form.key_edit.text() == ""
        assert "keep the stored key" in form.key_edit.placeholderText()
        assert form.problem() is None and form.key() is None
        assert form.profile().read_timeout_s == 300.0  # fields the form does not show survive
    finally:
        form.close()
        form.deleteLater()


def test_the_form_says_and_stores_whether_the_model_takes_images(
    qtbot: object, qapp: QApplication
) -> None:
    """Issue 18 item 6: by default a guess by the model's name, which the form shows; "No"
    keeps images from a model whose name suggests it takes them."""
    form = ProfileForm(ProfileService(None))  # type: ignore[arg-type]  # no calls are made
    form.show()
    try:
        form.set_kind("openai")
        form.model_edit.setText("gpt-4o")
        assert form.images_combo.isVisible()
        assert form.images_combo.itemText(0) == "By model name (yes)"
        form.model_edit.setText("gpt-3.5-turbo")
        assert form.images_combo.itemText(0) == "By model name (no)"
        assert form.profile().accepts_images is None
        form.images_combo.setCurrentIndex(form.images_combo.findData(True))
        assert form.profile().accepts_images is True
        form.set_profile(Profile("vision", "openai", model="gpt-4o", accepts_images=False))
        assert form.images_combo.currentText() == "No (text only)"
        assert form.profile().accepts_images is False
    finally:
        form.close()
        form.deleteLater()


# --- settings -------------------------------------------------------------------------------


async def seed(service: ProfileService) -> None:
    await service.save(
        Profile("demo", "scripted", script_path=DEMO_SCRIPT, key_source=KeySource.NONE),
        make_default=True,
    )
    local = Profile("local", "openai", base_url="http://localhost:11434/v1", model="llama3.1")
    await service.save(dataclasses.replace(local, key_source=KeySource.NONE))


async def answer_message_box(click: QMessageBox.StandardButton | str) -> str:
    box = await until(
        lambda: next(
            (w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)), None
        )
    )
    assert isinstance(box, QMessageBox)
    await until(box.isVisible)
    text = box.text()
    if isinstance(click, str):
        next(b for b in box.buttons() if b.text() == click).click()
    else:
        box.button(click).click()
    return text


async def test_settings_lists_profiles_sets_default_and_removes_after_asking(
    tmp_path: Path,
) -> None:
    async with profile_service(tmp_path) as service:
        await seed(service)
        dialog = SettingsDialog(service, tmp_path / "data")
        with shown(dialog):
            await until(lambda: dialog.profile_list.count() == 2)
            rows = [dialog.profile_list.item(i).text() for i in range(2)]
            assert "default" in rows[0] and rows[0].startswith("demo")
            assert "default" not in rows[1] and "llama3.1" in rows[1]
            dialog.profile_list.setCurrentRow(1)
            assert dialog.default_button.isEnabled()
            dialog.default_button.click()
            await eventually(lambda: _default_is(service, "local"))
            await until(lambda: "default" in dialog.profile_list.item(1).text())
            assert not dialog.default_button.isEnabled()

            # Remove asks first; Cancel keeps the profile.
            dialog.profile_list.setCurrentRow(0)
            dialog.remove_button.click()
            text = await answer_message_box(QMessageBox.StandardButton.Cancel)
            assert "Remove the profile “demo”?" in text
            await asyncio.sleep(0.05)
            assert len(await service.list()) == 2
            dialog.remove_button.click()
            await answer_message_box("Remove")
            await until(lambda: dialog.profile_list.count() == 1)
            assert [p.name for p in await service.list()] == ["local"]
            assert "Removed" in dialog.profile_status.text()


async def _default_is(service: ProfileService, name: str) -> bool:
    return await service.default_name() == name


async def test_settings_adds_and_edits_profiles_in_a_sub_dialog(tmp_path: Path) -> None:
    async with profile_service(tmp_path) as service:
        await seed(service)
        dialog = SettingsDialog(service, tmp_path / "data")
        with shown(dialog):
            await until(lambda: dialog.profile_list.count() == 2)
            dialog.add_button.click()
            add = await until(lambda: dialog.findChild(ProfileDialog))
            assert isinstance(add, ProfileDialog)
            await until(add.isVisible)
            assert add.isModal() or add.windowModality() != Qt.WindowModality.NonModal
            fill(add.form, kind="openai", name="local", model="qwen3")
            add.form.key_source_combo.setCurrentIndex(add.form.key_source_combo.findData("none"))
            add.save_button.click()
            await until(lambda: "already exists" in add.form.message.text())
            add.form.name_edit.setText("second")
            add.save_button.click()
            await until(lambda: dialog.profile_list.count() == 3)
            assert dialog.selected_name() == "second"

            dialog.edit_button.click()
            edit = await until(
                lambda: next((d for d in dialog.findChildren(ProfileDialog) if d.isVisible()), None)
            )
            assert isinstance(edit, ProfileDialog)
            assert edit.form.name_edit.text() == "second" and edit.form.name_edit.isReadOnly()
            edit.form.model_edit.setText("qwen3-coder")
            edit.save_button.click()
            await until(lambda: "qwen3-coder" in (dialog.profile_list.currentItem().text()))
        second = await service.get("second")
        assert second is not None and second.model == "qwen3-coder"
        assert await service.default_name() == "demo"


async def test_test_on_the_demo_profile_shows_a_tick(tmp_path: Path) -> None:
    async with profile_service(tmp_path) as service:
        await seed(service)
        dialog = SettingsDialog(service, tmp_path / "data")
        with shown(dialog):
            await until(lambda: dialog.profile_list.count() == 2)
            dialog.profile_list.setCurrentRow(0)
            dialog.test_button.click()
            assert not dialog.test_button.isEnabled()
            await until(lambda: dialog.profile_status.text().startswith("✓ demo:"))
            assert dialog.test_button.isEnabled()


async def test_general_settings_are_stored_and_the_appearance_applies_at_once(
    tmp_path: Path, qapp: QApplication
) -> None:
    lightness = qapp.palette().color(QPalette.ColorRole.Window).lightness()
    changed: list[str] = []
    async with profile_service(tmp_path) as service:
        dialog = SettingsDialog(service, tmp_path / "data")
        dialog.appearance_changed.connect(changed.append)
        try:
            with shown(dialog):
                await dialog.load()
                assert dialog.mode_buttons[PermissionMode.AUTO].isChecked()
                assert dialog.appearance_combo.currentData() == "system"
                assert all(" " in b.text() for b in dialog.mode_buttons.values())  # explained
                dialog.mode_buttons[PermissionMode.ASK].click()
                await eventually(lambda: _mode_is(service, PermissionMode.ASK))

                dialog.appearance_combo.setCurrentIndex(dialog.appearance_combo.findData("dark"))
                assert qapp.palette().color(QPalette.ColorRole.Window).lightness() < 80
                assert current_appearance(qapp) == "dark" and changed == ["dark"]
                await eventually(lambda: _appearance_is(service, "dark"))

                dialog.appearance_combo.setCurrentIndex(dialog.appearance_combo.findData("light"))
                assert qapp.palette().color(QPalette.ColorRole.Window).lightness() > 180
                await eventually(lambda: _appearance_is(service, "light"))
            again = SettingsDialog(service, tmp_path / "data")  # what was stored is shown
            with shown(again):
                await again.load()
                assert again.mode_buttons[PermissionMode.ASK].isChecked()
                assert again.appearance_combo.currentData() == "light"
        finally:
            apply_appearance(qapp, "system")
    assert qapp.palette().color(QPalette.ColorRole.Window).lightness() == lightness


async def _mode_is(service: ProfileService, mode: PermissionMode) -> bool:
    return await service.default_permission_mode() == mode


async def _appearance_is(service: ProfileService, value: str) -> bool:
    return await service.appearance() == value


def test_appearance_can_be_applied_again_and_again(qapp: QApplication) -> None:
    window = QPalette.ColorRole.Window
    original = qapp.palette().color(window).name()
    try:
        for value in ("dark", "dark", "light", "dark", "system", "nonsense", "light"):
            apply_appearance(qapp, value)
        apply_appearance(qapp, "dark")
        style = qapp.style()  # Fusion, under the proxy that outlines indicators on dark
        if isinstance(style, QProxyStyle):
            style = style.baseStyle()
        assert style.name().lower() == "fusion"
        assert qapp.palette().color(window).name() == "#2b2b2b"
        assert qapp.palette().color(QPalette.ColorRole.Base).name() == "#1e1e1e"
    finally:
        apply_appearance(qapp, "system")
    assert qapp.palette().color(window).name() == original


class _UrlCatcher(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


async def test_the_data_page_shows_and_opens_the_data_folder(
    tmp_path: Path, null_keyring: None
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    catcher = _UrlCatcher()
    QDesktopServices.setUrlHandler("file", catcher, "open")
    try:
        async with profile_service(tmp_path) as service:
            dialog = SettingsDialog(service, folder)
            with shown(dialog):
                await dialog.load()
                assert dialog.folder_edit.text() == str(folder)
                assert dialog.folder_edit.isReadOnly()
                assert dialog.keyring_label.text() == NO_BACKEND_HELP  # the null test keyring
                dialog.open_button.click()
                assert [u.toLocalFile() for u in catcher.urls] == [str(folder)]
    finally:
        QDesktopServices.unsetUrlHandler("file")


async def test_every_control_is_named_and_reachable_with_tab(tmp_path: Path) -> None:
    async with profile_service(tmp_path) as service:
        await seed(service)
        setup = SetupDialog(service)
        with shown(setup):
            form = setup.form
            chain = focus_chain(setup)
            expected = [
                form.kind_combo,
                form.name_edit,
                form.url_edit,
                form.model_edit,
                form.key_source_combo,
                form.key_edit,
                form.more_button,
                form.test_button,
                setup.demo_button,
                setup.save_button,
                setup.later_button,
            ]
            assert [w for w in chain if w in expected] == expected
            form.more_button.setChecked(True)
            assert unnamed_controls(setup) == []
        settings = SettingsDialog(service, tmp_path / "data")
        with shown(settings):
            await settings.load()
            for page in range(settings.tabs.count()):
                settings.tabs.setCurrentIndex(page)
                assert unnamed_controls(settings) == []
            settings.tabs.setCurrentIndex(0)
            settings.profile_list.setCurrentRow(0)
            chain = focus_chain(settings)
            for widget in (
                settings.profile_list,
                settings.add_button,
                settings.edit_button,
                settings.remove_button,
                settings.test_button,
            ):
                assert widget in chain


async def test_closing_the_window_mid_test_cancels_quietly(tmp_path: Path) -> None:
    async with profile_service(tmp_path) as service:
        await seed(service)
        dialog = SettingsDialog(service, tmp_path / "data")
        await dialog.load()
        dialog.show()  # loaded already: no second load
        dialog.profile_list.setCurrentRow(0)
        dialog.test_button.click()
        assert len(dialog.tasks) == 1
        tasks = dialog.tasks
        dialog.close()
        dialog.deleteLater()
        await until(lambda: not alive(dialog))
        await until(lambda: len(tasks) == 0)  # cancelled, not failing on deleted widgets


async def test_ctrl_tab_and_ctrl_page_down_switch_pages_from_a_list(tmp_path: Path) -> None:
    """Found walking the window under openbox: with a list or a field focused, Ctrl+Tab and
    Ctrl+PgDown did nothing (the list took the keys): the pages were out of the keyboard's reach."""
    async with profile_service(tmp_path) as service:
        await seed(service)
        settings = SettingsDialog(service, tmp_path / "data")
        with shown(settings):
            await settings.load()
            settings.tabs.setCurrentIndex(0)
            settings.profile_list.setFocus()
            await until(lambda: settings.profile_list.hasFocus())
            pages = settings.tabs.count()
            QTest.keyClick(
                settings.profile_list, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier
            )
            assert settings.tabs.currentIndex() == 1
            focused = QApplication.focusWidget()
            QTest.keyClick(focused, Qt.Key.Key_PageDown, Qt.KeyboardModifier.ControlModifier)
            assert settings.tabs.currentIndex() == 2
            focused = QApplication.focusWidget()
            QTest.keyClick(focused, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ControlModifier)
            assert settings.tabs.currentIndex() == 1
            settings.tabs.setCurrentIndex(0)
            settings.profile_list.setFocus()
            QTest.keyClick(
                settings.profile_list,
                Qt.Key.Key_Backtab,
                Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
            )
            assert settings.tabs.currentIndex() == pages - 1  # wraps, as browsers' tabs do
