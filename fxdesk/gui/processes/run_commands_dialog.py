"""Edit saved run commands…: the person's run commands of one workspace, made and changed in
the window (Processes → Run ▸, or the View menu; issue 12, item 7).

A table of the commands (name, command, folder, expects a URL, keeps running) beside Add,
Remove, Move up and Move down, and under it the fields of the selected one. Nothing is saved
until Save: then ``Engine.set_run_commands`` checks the whole list, and when it refuses, the
domain's sentence shows under the field it names, that command is selected and the field has
the focus; what was typed stays. Rows left entirely blank (Add pressed, nothing typed) are not
commands and are dropped. Enter never saves (no default button); Ctrl+Enter or Alt+S does, Esc
cancels.
"""

from __future__ import annotations

import itertools

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fxdesk.engine.facade import Engine, RunCommand, RunCommandError, SessionError, StoreError
from fxdesk.gui.tasks import WidgetTasks, alive
from fxdesk.gui.widgets import (
    code_spans,
    hint_label,
    monospace,
    problem_label,
    push_button,
    show_problem,
)

COL_NAME, COL_COMMAND, COL_FOLDER, COL_URL, COL_DURABLE = range(5)
HEADERS = ("Name", "Command", "Folder", "URL", "Keeps running")
FIELDS = ("name", "command", "folder")
SAVE_SHORTCUT = "Ctrl+Return"


def _sentence(text: str) -> str:
    """The domain's lower-case message as a sentence under a field."""
    text = text[:1].upper() + text[1:] if text[:1].isalpha() else text
    return text if text.endswith((".", "…")) else text + "."


def _blank(command: RunCommand) -> bool:
    return not (command.name.strip() or command.command.strip() or command.folder.strip())


class RunCommandsDialog(QDialog):
    """Edits the saved run commands of one workspace; ``saved`` holds them after Save.

    Args:
        engine: the facade that checks and saves them (``set_run_commands``).
        workspace_id: the workspace whose commands these are.
        folder: its folder (shown; the commands' folders are relative to it).
        commands: what is saved now, in order.
        parent: the main window.
    """

    def __init__(
        self,
        engine: Engine,
        workspace_id: int,
        folder: str,
        commands: tuple[RunCommand, ...],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.engine = engine
        self.workspace_id = workspace_id
        self.tasks = WidgetTasks(self)
        self.rows: list[RunCommand] = list(commands)
        self.saved: tuple[RunCommand, ...] | None = None
        self._showing = False  # True while the fields are filled from a row
        self.setObjectName("run-commands-dialog")
        self.setWindowTitle("Saved run commands")
        self.setMinimumSize(720, 480)
        layout = QVBoxLayout(self)
        intro = hint_label(wrap=True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        intro.setText(
            code_spans(
                f"The commands of {folder}, started from Run ▸ in Processes or with "
                "`fxdesk start -w DIR --saved NAME`. Folders are relative to the workspace. "
                "Nothing is saved until Save (Ctrl+Enter)."
            )
        )
        intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(intro)
        layout.addLayout(self._build_list(), 1)
        layout.addLayout(self._build_fields())
        self.problem = problem_label("Problem")
        layout.addWidget(self.problem)
        layout.addWidget(self._build_buttons())
        self._set_tab_order()
        for command in self.rows:
            self.table.addTopLevelItem(self._item(command))
        if not self.rows:  # opened to add one: start with its fields
            self._add_row()
        self.select_row(0)
        self._fit()
        self.name_edit.setFocus(Qt.FocusReason.OtherFocusReason)

    # --- building --------------------------------------------------------------------------

    def _build_list(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.table = QTreeWidget()
        self.table.setAccessibleName("Saved run commands")
        self.table.setHeaderLabels(list(HEADERS))
        self.table.setRootIsDecorated(False)
        self.table.setUniformRowHeights(True)
        self.table.setAllColumnsShowFocus(True)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = self.table.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COL_COMMAND, QHeaderView.ResizeMode.Stretch)
        for short in (COL_URL, COL_DURABLE):
            header.setSectionResizeMode(short, QHeaderView.ResizeMode.ResizeToContents)
        self.table.currentItemChanged.connect(self._on_table_current_item_changed)
        self.table.itemActivated.connect(self._on_table_item_activated)
        row.addWidget(self.table, 1)
        column = QVBoxLayout()
        self.add_button = push_button("&Add", "Add a command", self._on_add_button_clicked)
        self.remove_button = push_button("Remo&ve", "Remove", self._on_remove_button_clicked)
        self.up_button = push_button("Move u&p", "Move up", self._on_up_button_clicked)
        self.down_button = push_button("Move &down", "Move down", self._on_down_button_clicked)
        for button in (self.add_button, self.remove_button, self.up_button, self.down_button):
            column.addWidget(button)
        column.addStretch(1)
        row.addLayout(column)
        return row

    def _field(self, edit: QLineEdit, name: str) -> tuple[QWidget, QLabel]:
        """``edit`` with its problem line right under it."""
        box = QWidget()
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(edit)
        label = problem_label(f"Problem with the {name}")
        column.addWidget(label)
        edit.textEdited.connect(self._on_field_edited)
        return box, label

    def _build_fields(self) -> QFormLayout:
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.name_edit = QLineEdit()
        self.name_edit.setAccessibleName("Name")
        self.name_edit.setPlaceholderText("what you call it, e.g. dev server")
        self.command_edit = QLineEdit()
        self.command_edit.setAccessibleName("Command")
        self.command_edit.setFont(monospace())
        self.command_edit.setPlaceholderText("a bash line, e.g. npm run dev")
        self.folder_edit = QLineEdit()
        self.folder_edit.setAccessibleName("Folder")
        self.folder_edit.setPlaceholderText("relative to the workspace, e.g. web (empty: itself)")
        self.edits = {"name": self.name_edit, "command": self.command_edit}
        self.edits["folder"] = self.folder_edit
        self.field_problems: dict[str, QLabel] = {}
        for key, label in (("name", "&Name:"), ("command", "C&ommand:"), ("folder", "&Folder:")):
            box, self.field_problems[key] = self._field(self.edits[key], key)
            form.addRow(label, box)
        self.url_check = QCheckBox(
            "Expects a &URL: a server, its address is looked for in its output"
        )
        self.url_check.setAccessibleName("Expects a URL")
        self.durable_check = QCheckBox(
            "&Keeps running after fxdesk quits (found again at the next start)"
        )
        self.durable_check.setAccessibleName("Keeps running after fxdesk quits")
        for check in (self.url_check, self.durable_check):
            check.toggled.connect(self._on_field_edited)
            form.addRow("", check)
        return form

    def _build_buttons(self) -> QDialogButtonBox:
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.save_button = buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setText("&Save")
        self.save_button.setAccessibleName("Save")
        self.save_button.setToolTip(
            f"Check and save them ({SAVE_SHORTCUT.replace('Return', 'Enter')})"
        )
        self.cancel_button = buttons.button(QDialogButtonBox.StandardButton.Cancel)
        self.cancel_button.setAccessibleName("Cancel")
        for button in (self.save_button, self.cancel_button):
            button.setAutoDefault(False)  # Enter in a field must not press them
            button.setDefault(False)
        self.save_button.clicked.connect(self._on_save_button_clicked)
        buttons.rejected.connect(self.reject)
        save = QShortcut(QKeySequence(SAVE_SHORTCUT), self)
        save.activated.connect(self._on_save_button_clicked)
        save_enter = QShortcut(QKeySequence("Ctrl+Enter"), self)
        save_enter.activated.connect(self._on_save_button_clicked)
        return buttons

    def _set_tab_order(self) -> None:
        order: list[QWidget] = [
            self.table,
            self.name_edit,
            self.command_edit,
            self.folder_edit,
            self.url_check,
            self.durable_check,
            self.add_button,
            self.remove_button,
            self.up_button,
            self.down_button,
            self.save_button,
            self.cancel_button,
        ]
        for first, second in itertools.pairwise(order):
            QWidget.setTabOrder(first, second)

    def showEvent(self, event: QShowEvent) -> None:
        # QDialogButtonBox makes Save the default button when it is shown, whatever its
        # autoDefault: then Enter in any field would save. Undo it after the children showed.
        super().showEvent(event)
        self.save_button.setDefault(False)

    # --- rows ----------------------------------------------------------------------------

    def _item(self, command: RunCommand) -> QTreeWidgetItem:
        item = QTreeWidgetItem()
        self._fill_item(item, command)
        return item

    def _fill_item(self, item: QTreeWidgetItem, command: RunCommand) -> None:
        item.setText(COL_NAME, " ".join(command.name.split()) or "(no name)")
        item.setText(COL_COMMAND, " ".join(command.command.split()))
        item.setToolTip(COL_COMMAND, command.command)
        item.setText(COL_FOLDER, command.folder.strip() or "(workspace)")
        item.setText(COL_URL, "yes" if command.expect_url else "")
        item.setText(COL_DURABLE, "yes" if command.durable else "")

    def current_row(self) -> int:
        item = self.table.currentItem()
        return self.table.indexOfTopLevelItem(item) if item is not None else -1

    def item(self, row: int) -> QTreeWidgetItem:
        item = self.table.topLevelItem(row)
        assert item is not None, row
        return item

    def select_row(self, row: int) -> None:
        self.table.setCurrentItem(self.item(row))

    def _show_row(self, row: int) -> None:
        command = self.rows[row] if 0 <= row < len(self.rows) else RunCommand("", "")
        self._showing = True
        try:
            self.name_edit.setText(command.name)
            self.command_edit.setText(command.command)
            self.folder_edit.setText(command.folder)
            self.url_check.setChecked(command.expect_url)
            self.durable_check.setChecked(command.durable)
        finally:
            self._showing = False
        for widget in (*self.edits.values(), self.url_check, self.durable_check):
            widget.setEnabled(0 <= row < len(self.rows))
        self._update_buttons()

    def _update_buttons(self) -> None:
        row = self.current_row()
        self.remove_button.setEnabled(row >= 0)
        self.up_button.setEnabled(row > 0)
        self.down_button.setEnabled(0 <= row < len(self.rows) - 1)

    def _add_row(self) -> int:
        self.rows.append(RunCommand("", ""))
        self.table.addTopLevelItem(self._item(self.rows[-1]))
        return len(self.rows) - 1

    def _move(self, step: int) -> None:
        row = self.current_row()
        other = row + step
        if row < 0 or not 0 <= other < len(self.rows):
            return
        self.rows[row], self.rows[other] = self.rows[other], self.rows[row]
        for index in (row, other):
            self._fill_item(self.item(index), self.rows[index])
        self.select_row(other)

    def _fit(self) -> None:
        for column, cap in ((COL_NAME, 200), (COL_FOLDER, 140)):
            width = max(self.table.sizeHintForColumn(column), 60) + 16
            self.table.setColumnWidth(column, min(cap, width))

    # --- problems ------------------------------------------------------------------------

    def _clear_problems(self) -> None:
        for label in self.field_problems.values():
            show_problem(label, "")
        show_problem(self.problem, "")

    def show_refusal(self, row: int, field: str, text: str) -> None:
        """Show why the list was not saved: under ``field`` of ``row``, which gets the focus."""
        self._clear_problems()
        if 0 <= row < len(self.rows) and field in self.field_problems:
            self.select_row(row)
            show_problem(self.field_problems[field], _sentence(text))
            self.edits[field].setFocus(Qt.FocusReason.OtherFocusReason)
        else:
            show_problem(self.problem, _sentence(text))

    # --- saving --------------------------------------------------------------------------

    async def save(self) -> bool:
        """Check and save the list; True (and accepted) when saved, else the problem is shown
        and everything typed stays."""
        kept = [(row, command) for row, command in enumerate(self.rows) if not _blank(command)]
        self.save_button.setEnabled(False)
        try:
            await self.engine.set_run_commands(self.workspace_id, tuple(c for _, c in kept))
            saved = await self.engine.run_commands(self.workspace_id)
        except RunCommandError as exc:
            if alive(self):
                row = kept[exc.index][0] if exc.index is not None else -1
                self.show_refusal(row, exc.field, str(exc))
            return False
        except (StoreError, SessionError) as exc:
            if alive(self):
                said = getattr(exc, "user_message", None) or str(exc)
                self.show_refusal(-1, "", f"Nothing was saved: {said}")
            return False
        finally:
            if alive(self):
                self.save_button.setEnabled(True)
        if alive(self):
            self.saved = saved
            self.accept()
        return True

    # --- slots ---------------------------------------------------------------------------

    @Slot(QTreeWidgetItem, QTreeWidgetItem)
    def _on_table_current_item_changed(self, current: object, _previous: object) -> None:
        self._clear_problems()
        self._show_row(self.current_row() if current is not None else -1)

    @Slot(QTreeWidgetItem, int)
    def _on_table_item_activated(self, _item: object, _column: int) -> None:
        self.name_edit.setFocus(Qt.FocusReason.OtherFocusReason)  # Enter: edit it

    @Slot()
    def _on_field_edited(self) -> None:
        row = self.current_row()
        if self._showing or row < 0:
            return
        self.rows[row] = RunCommand(
            self.name_edit.text(),
            self.command_edit.text(),
            self.folder_edit.text(),
            self.url_check.isChecked(),
            self.durable_check.isChecked(),
        )
        self._fill_item(self.item(row), self.rows[row])
        sender = self.sender()
        for key, edit in self.edits.items():
            if edit is sender:  # the person is fixing it
                show_problem(self.field_problems[key], "")

    @Slot()
    def _on_add_button_clicked(self) -> None:
        self.select_row(self._add_row())
        self.name_edit.setFocus(Qt.FocusReason.OtherFocusReason)

    @Slot()
    def _on_remove_button_clicked(self) -> None:
        row = self.current_row()
        if row < 0:
            return
        del self.rows[row]
        self.table.takeTopLevelItem(row)  # may report the new current item by its old row
        if self.rows:
            self.select_row(min(row, len(self.rows) - 1))
        self._show_row(self.current_row())
        if not self.rows:
            self.add_button.setFocus(Qt.FocusReason.OtherFocusReason)

    @Slot()
    def _on_up_button_clicked(self) -> None:
        self._move(-1)

    @Slot()
    def _on_down_button_clicked(self) -> None:
        self._move(1)

    @Slot()
    def _on_save_button_clicked(self) -> None:
        if self.save_button.isEnabled():
            self.tasks.spawn(self.save(), "run-commands-save")
