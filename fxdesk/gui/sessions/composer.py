"""The composer: where the person writes to the selected session.

Enter sends, Shift+Enter makes a new line, Ctrl+Enter sends too. While a turn runs, a message is
queued by default; "Steer" delivers it into the running turn at its next step instead. The
session's profile and permission mode can be changed here for its next turns. Images dropped or
pasted in go with the message as chips above the box (``image_chips``); when the session's model
takes no images the composer says so and does not send.

Signals:
    submitted(str, bool, object): the text, whether to steer the running turn with it, and the
        images it carries (a tuple of ``ImageAttachment``).
    images_changed(): an image was added or removed.
    profile_chosen(str): a profile name ("" for the default profile).
    mode_chosen(str): a permission mode value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, Qt, Signal, Slot
from PySide6.QtGui import QImage, QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.images import ImageAttachment
from fxdesk.domain.model import PermissionMode
from fxdesk.gui.sessions import modes
from fxdesk.gui.sessions.image_chips import ImageChips, from_file, from_qimage, is_image_file
from fxdesk.gui.widgets import problem_label, show_problem

_COMPLETER_KEYS = frozenset(
    {Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab, Qt.Key.Key_Backtab, Qt.Key.Key_Escape}
)


class MessageEdit(QPlainTextEdit):
    """Multi-line input where Enter (or Ctrl+Enter) sends and Shift+Enter breaks the line.

    It is as tall as its text, from ``MIN_LINES`` to ``MAX_LINES`` lines (then it scrolls), so
    an empty box leaves the transcript its room and a long message is seen whole."""

    send_requested = Signal()
    # An image dropped or pasted in: how to read it (a callable giving an ImageAttachment or
    # raising ImageProblem), run off the UI thread by the chips.
    image_offered = Signal(object)
    MIN_LINES = 2
    MAX_LINES = 10

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._fit_height()
        # Up in an empty box brings back what the person sent before (the open session's
        # messages, newest first), Down goes forward again and back to an empty box; typing
        # keeps the recalled text as a new draft.
        self.history_source: Callable[[], list[str]] = list
        self.completing: Callable[[], bool] = lambda: False  # the @ list is open
        self.workspace: Path | None = None  # the open session's folder (dropped files)
        self._recalled: int | None = None  # how far back (1 = the last message sent)
        self.textChanged.connect(self._on_text_changed)

    def _recall(self, step: int) -> bool:
        sent = [text for text in self.history_source() if text.strip()]
        back = (self._recalled or 0) + step
        if not sent or back < 0 or back > len(sent):
            return False
        self._recalled = back or None
        self.blockSignals(True)
        self.setPlainText(sent[-back] if back else "")
        self.blockSignals(False)
        self._fit_height()
        self.moveCursor(QTextCursor.MoveOperation.End)
        return True

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        if source.hasUrls() and any(url.isLocalFile() for url in source.urls()):
            return True
        return source.hasImage() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        """Image files dropped (or pasted) and pasted image data become image chips; other
        files from the file manager become mentions: ``@src/app.py`` for a workspace file (its
        text goes to the model with the message), the full path for anything else."""
        files = [Path(url.toLocalFile()) for url in source.urls() if url.isLocalFile()]
        if not files and source.hasImage():
            image = source.imageData()
            if isinstance(image, QImage):
                self._attach(functools.partial(from_qimage, image, "pasted-image.png"))
                return
        if not files:
            super().insertFromMimeData(source)
            return
        words = []
        for path in files:
            if is_image_file(path):
                self._attach(functools.partial(from_file, path))
            else:
                words.append(self.mention_for(path))
        if any(words):
            self.insertPlainText(" ".join(w for w in words if w) + " ")

    def _attach(self, read: Callable[[], ImageAttachment]) -> None:
        self.image_offered.emit(read)

    def mention_for(self, path: Path) -> str:
        if not str(path):
            return ""
        root = self.workspace
        if root is not None and path.is_file():
            try:
                return "@" + path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                pass
        return str(path)

    @Slot()
    def _on_text_changed(self) -> None:
        self._recalled = None  # edited: a draft of its own now

    def height_for(self, lines: int) -> int:
        """The box's height showing ``lines`` lines of text."""
        margins = self.contentsMargins()
        frame = 2 * int(self.document().documentMargin()) + margins.top() + margins.bottom()
        return lines * self.fontMetrics().lineSpacing() + frame + 2

    @Slot()
    def _fit_height(self) -> None:
        # A plain-text document's layout counts its size in lines (wrapped ones included).
        lines = int(self.document().documentLayout().documentSize().height())
        self.setFixedHeight(self.height_for(max(self.MIN_LINES, min(lines, self.MAX_LINES))))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_height()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.completing() and event.key() in _COMPLETER_KEYS:
            event.ignore()  # the @ completion's list takes them (Enter picks, Escape closes)
            return
        plain = event.modifiers() == Qt.KeyboardModifier.NoModifier
        browsing = self._recalled is not None or not self.toPlainText()
        arrow = event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down)
        if plain and browsing and arrow and self._recall(1 if event.key() == Qt.Key.Key_Up else -1):
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
                return
            self.send_requested.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    """The message box and its controls. See the module docstring for signals."""

    submitted = Signal(str, bool, object)
    images_changed = Signal()
    profile_chosen = Signal(str)
    mode_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.edit = MessageEdit()
        self.edit.setPlaceholderText(
            "Message the agent…  (Enter sends, Shift+Enter for a new line)"
        )
        self.edit.setAccessibleName("Message")
        self.edit.setTabChangesFocus(True)
        self.edit.send_requested.connect(self._on_edit_send_requested)
        self.chips = ImageChips()
        self.chips.changed.connect(self._on_chips_changed)
        self.edit.image_offered.connect(self.chips.read_in)
        self.chips.problem.connect(self.show_image_problem)
        # What the session's model does with images: None until the controller says.
        self.images_refusal = ""  # why images cannot go to it ("" when they can)
        self.image_note = problem_label("Image problem")
        layout.addWidget(self.chips)
        layout.addWidget(self.image_note)
        layout.addWidget(self.edit)
        row = QHBoxLayout()
        self.profile = QComboBox()
        self.profile.setAccessibleName("Model profile")
        self.profile.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.profile.setToolTip("The model profile this session's next turns use")
        self.profile.activated.connect(self._on_profile_activated)
        row.addWidget(QLabel("Model:"))
        row.addWidget(self.profile)
        self.mode = QComboBox()
        self.mode.setAccessibleName("Permission mode")
        self.unrestricted = False  # offered once turned on in Settings → General
        modes.fill(self.mode, modes.offered(False), modes.SHORT)
        self.mode.setToolTip(modes.TIP)
        self.mode.activated.connect(self._on_mode_activated)
        row.addWidget(QLabel("Permissions:"))
        row.addWidget(self.mode)
        row.addStretch(1)
        self.delivery = QComboBox()
        self.delivery.setAccessibleName("While a turn runs")
        self.delivery.addItem("Queue it", False)
        self.delivery.addItem("Steer the running turn", True)
        self.delivery.setToolTip(
            "While a turn runs: queue the message after it, or deliver it "
            "into the running turn at its next step"
        )
        self.delivery.setVisible(False)
        row.addWidget(self.delivery)
        self.send = QPushButton("Send")
        self.send.setAccessibleName("Send message")
        self.send.setToolTip("Send (Enter or Ctrl+Enter)")
        self.send.clicked.connect(self._on_edit_send_requested)
        row.addWidget(self.send)
        layout.addLayout(row)
        self.set_running(False)

    def set_profiles(
        self, names: list[str], current: str | None, default: str | None = None
    ) -> None:
        self.profile.blockSignals(True)
        self.profile.clear()
        self.profile.addItem(f"Default ({default})" if default else "Default profile", "")
        for name in names:
            self.profile.addItem(name, name)
        index = self.profile.findData(current or "")
        self.profile.setCurrentIndex(max(index, 0))
        self.profile.blockSignals(False)

    def set_mode(self, mode: PermissionMode) -> None:
        """Show the session's mode (listed even if no longer offered: the picker says the
        truth), in the warning colour when it is unrestricted."""
        modes.fill(self.mode, modes.offered(self.unrestricted, mode), modes.SHORT)
        self.mode.blockSignals(True)
        self.mode.setCurrentIndex(max(self.mode.findData(mode.value), 0))
        self.mode.blockSignals(False)
        modes.colour(self.mode)

    def set_unrestricted(self, offered: bool) -> None:
        """Offer ``unrestricted`` or not (the Settings → General switch)."""
        self.unrestricted = offered
        shown = self.mode.currentData()
        current = PermissionMode(shown) if shown else None
        modes.fill(self.mode, modes.offered(offered, current), modes.SHORT)

    def set_running(self, running: bool) -> None:
        """While a turn runs, offer queue vs steer; the send button says which."""
        self.delivery.setVisible(running)
        self.send.setText("Queue" if running and not self.delivery.currentData() else "Send")

    @property
    def images(self) -> list[ImageAttachment]:
        return self.chips.images

    def set_images_refusal(self, refusal: str) -> None:
        """Why the session's model cannot take images ("" when it can); said while images
        wait to be sent."""
        self.images_refusal = refusal
        self.show_image_problem(refusal if self.chips.images else "")

    def show_image_problem(self, text: str) -> None:
        show_problem(self.image_note, text)

    def restore(self, text: str, images: tuple[ImageAttachment, ...], problem: str) -> None:
        """Put a message that was refused back, with why (nothing the person wrote is lost)."""
        if not self.edit.toPlainText().strip():
            self.edit.setPlainText(text)
        for image in images:
            self.chips.add(image)
        self.show_image_problem(problem)

    @Slot()
    def _on_chips_changed(self) -> None:
        self.show_image_problem(self.images_refusal if self.chips.images else "")
        self.images_changed.emit()

    @Slot()
    def _on_edit_send_requested(self) -> None:
        text = self.edit.toPlainText().strip()
        if not text and not self.chips.images and not self.chips.reading:
            return
        if self.chips.reading:  # an image still being read would be left behind
            self.show_image_problem("Still reading the image; send again in a moment.")
            return
        if self.chips.images and self.images_refusal:
            self.show_image_problem(self.images_refusal)  # kept: never sent without them
            return
        steer = bool(self.delivery.isVisible() and self.delivery.currentData())
        self.edit.clear()
        self.submitted.emit(text, steer, self.chips.take())

    @Slot(int)
    def _on_profile_activated(self, index: int) -> None:
        self.profile_chosen.emit(str(self.profile.itemData(index) or ""))

    @Slot(int)
    def _on_mode_activated(self, index: int) -> None:
        modes.colour(self.mode)
        self.mode_chosen.emit(str(self.mode.itemData(index)))
