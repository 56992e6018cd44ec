"""The Rules page of Settings and its rule dialog, against a real ``PermissionService`` on a
temporary store."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QMessageBox

from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import SystemClock
from fxdesk.engine.permissions import PermissionService
from fxdesk.engine.profiles import ProfileService
from fxdesk.gui.settings.dialog import SettingsDialog
from fxdesk.gui.settings.rule_editor import RuleDialog
from fxdesk.gui.settings.rules_page import RulesPage
from fxdesk.store import Store
from tests.gui.approvals.test_approvals import (  # noqa: F401 (keep_running, no_bugs: autouse)
    WORKSPACE,
    child_dialog,
    keep_running,
    no_bugs,
    shown,
)
from tests.gui.settings.test_settings import answer_message_box, unnamed_controls
from tests.gui.waiting import until


@contextlib.asynccontextmanager
async def opened_store(tmp_path: Path) -> AsyncIterator[Store]:
    store = await Store.aopen(tmp_path / "db.sqlite3")
    try:
        yield store
    finally:
        await asyncio.get_running_loop().run_in_executor(None, store.close)


@contextlib.asynccontextmanager
async def permission_service(tmp_path: Path) -> AsyncIterator[PermissionService]:
    async with opened_store(tmp_path) as store:
        yield PermissionService(store, EventBus(), SystemClock())


def table_rows(page: RulesPage) -> list[list[str]]:
    table = page.table
    return [
        [table.topLevelItem(r).text(c) for c in range(table.columnCount())]
        for r in range(table.topLevelItemCount())
    ]


def choose(combo: QComboBox, text: str) -> None:
    index = combo.findText(text)
    assert index >= 0, f"{text!r} not in {[combo.itemText(i) for i in range(combo.count())]}"
    combo.setCurrentIndex(index)


async def test_the_rules_page_adds_edits_and_deletes_rules(tmp_path: Path) -> None:
    async with permission_service(tmp_path) as service:
        await service.add_rule(
            PermissionRule("run_command", "git push", Verdict.DENY, Scope.GLOBAL)
        )
        await service.add_rule(
            PermissionRule("run_command", "npm test", Verdict.ALLOW, Scope.SESSION, scope_key="s1")
        )
        changed: list[bool] = []
        page = RulesPage(service, workspaces=lambda: {"7": WORKSPACE})
        page.rules_changed.connect(lambda: changed.append(True))
        with shown(page):
            await until(lambda: page.table.topLevelItemCount() == 2)
            assert sorted(table_rows(page)) == [
                ["Allow", "run_command", "npm test", "exact", "this session"],
                ["Deny", "run_command", "git push", "exact", "everywhere"],
            ]
            assert not page.edit_button.isEnabled() and not page.delete_button.isEnabled()

            # Add…
            page.add_button.click()
            add = await child_dialog(page, RuleDialog)
            assert add.windowModality() != Qt.WindowModality.NonModal
            choose(add.tool_combo, "run_command")
            add.pattern_edit.setText("pytest")
            choose(add.match_combo, "prefix — also longer commands starting with this")
            choose(add.scope_combo, f"workspace {WORKSPACE}")
            add.save_button.click()
            await until(lambda: page.table.topLevelItemCount() == 3)
            added = PermissionRule(
                "run_command", "pytest", Verdict.ALLOW, Scope.WORKSPACE, Match.PREFIX, scope_key="7"
            )
            stored = [dataclass_without_id(r) for r in await service.rules()]
            assert added in stored
            selected = page.selected_rule()
            assert selected is not None and selected.pattern == "pytest"
            assert ["Allow", "run_command", "pytest", "prefix", f"workspace {WORKSPACE}"] in (
                table_rows(page)
            )

            # Edit…: the edited rule is stored, the old one removed.
            page.edit_button.click()
            edit = await child_dialog(page, RuleDialog)
            assert edit.pattern_edit.text() == "pytest"
            assert edit.scope_combo.currentText() == f"workspace {WORKSPACE}"
            edit.pattern_edit.setText("pytest -q")
            choose(edit.match_combo, "exact")
            choose(edit.action_combo, "Ask")
            edit.save_button.click()
            await until(
                lambda: (
                    ["Ask", "run_command", "pytest -q", "exact", f"workspace {WORKSPACE}"]
                    in table_rows(page)
                )
            )
            rules = await service.rules()
            assert [r.pattern for r in rules if r.scope == Scope.WORKSPACE] == ["pytest -q"]
            assert len(rules) == 3

            # Saving unchanged keeps the rule (adding it again finds the same one).
            page.edit_button.click()
            same = await child_dialog(page, RuleDialog)
            same.save_button.click()
            await until(lambda: len(changed) == 3)
            assert len(await service.rules()) == 3

            # Delete asks first; Cancel keeps it.
            page.delete_button.click()
            text = await answer_message_box(QMessageBox.StandardButton.Cancel)
            assert "pytest -q" in text
            await asyncio.sleep(0.05)
            assert len(await service.rules()) == 3
            page.delete_button.click()
            await answer_message_box("Delete")
            await until(lambda: page.table.topLevelItemCount() == 2)
            assert all(r.pattern != "pytest -q" for r in await service.rules())
            assert len(changed) == 4
            assert unnamed_controls(page) == []


def dataclass_without_id(rule: PermissionRule) -> PermissionRule:
    return dataclasses.replace(rule, id=None)


async def test_a_rule_needs_a_pattern(tmp_path: Path) -> None:
    async with permission_service(tmp_path) as service:
        page = RulesPage(service)
        with shown(page):
            await until(lambda: "No rules yet" in page.status.text())
            page.add_button.click()
            add = await child_dialog(page, RuleDialog)
            assert unnamed_controls(add) == []
            add.save_button.click()
            assert add.isVisible() and add.message.text().startswith("A pattern is needed")
            assert add.match_combo.isVisible()  # commands: exact, prefix or glob
            choose(add.tool_combo, "edit_file")
            add.pattern_edit.setText("src/*")
            assert not add.message.isVisible()  # the problem follows the fields
            assert not add.match_combo.isVisible()  # paths: always globs
            assert add.rule() == PermissionRule(
                "edit_file", "src/*", Verdict.ALLOW, Scope.GLOBAL, Match.GLOB
            )
            add.reject()
            await asyncio.sleep(0.05)
            assert await service.rules() == []


async def test_settings_has_a_rules_tab_only_with_a_permission_service(tmp_path: Path) -> None:
    async with opened_store(tmp_path) as store:
        profiles = ProfileService(store)
        plain = SettingsDialog(profiles, tmp_path / "data")
        assert plain.rules_page is None
        assert "Rules" not in tab_texts(plain)
        plain.deleteLater()
        service = PermissionService(store, EventBus(), SystemClock())
        await service.add_rule(
            PermissionRule("read_file", "/etc/*", Verdict.DENY, Scope.GLOBAL, Match.GLOB)
        )
        dialog = SettingsDialog(profiles, tmp_path / "data", permissions=service)
        with shown(dialog):
            assert tab_texts(dialog) == ["Profiles", "General", "Rules", "Data"]
            dialog.tabs.setCurrentIndex(2)
            page = dialog.rules_page
            assert page is not None
            await until(lambda: page.table.topLevelItemCount() == 1)
            assert table_rows(page) == [["Deny", "read_file", "/etc/*", "glob", "everywhere"]]
            assert unnamed_controls(dialog) == []


def tab_texts(dialog: SettingsDialog) -> list[str]:
    return [dialog.tabs.tabText(i).replace("&", "") for i in range(dialog.tabs.count())]
