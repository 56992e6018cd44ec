"""A message with an image in the transcript and another image waiting in the composer, held
open for a screenshot under a window manager (issue 18 item 6):

    PYTHONPATH=scripts /work/shared/tools/screenshot docs/screenshots/composer-image.png --wm \\
        --size 1280x800 --wait 12 -- .venv/bin/python scripts/composer_image_shot.py

The images are drawn here (a page with a broken layout, a chart) and go through the composer's
own paths: a PNG file dropped as a file URL, image data pasted. The model is scripted.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import qasync
from PySide6.QtCore import QMimeData, QRect, Qt, QUrl
from PySide6.QtGui import QColor, QFont, QImage, QPainter
from PySide6.QtWidgets import QApplication
from screenshots import Run, until

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.application import create_qapplication
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider


def broken_page() -> QImage:
    """A sign-up page whose button overflows its card."""
    image = QImage(960, 600, QImage.Format.Format_RGB32)
    image.fill(QColor("#f4f5f7"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.fillRect(QRect(0, 0, 960, 64), QColor("#1f2937"))
    p.setPen(QColor("white"))
    p.setFont(QFont("DejaVu Sans", 20, QFont.Weight.Bold))
    p.drawText(QRect(24, 0, 400, 64), int(Qt.AlignmentFlag.AlignVCenter), "acme · sign up")
    p.setBrush(QColor("white"))
    p.setPen(QColor("#d1d5db"))
    p.drawRoundedRect(QRect(280, 120, 400, 380), 12, 12)
    p.setFont(QFont("DejaVu Sans", 14))
    for i, label in enumerate(("Email", "Password", "Repeat password")):
        p.setPen(QColor("#374151"))
        p.drawText(QRect(310, 150 + i * 90, 300, 24), 0, label)
        p.setPen(QColor("#9ca3af"))
        p.drawRoundedRect(QRect(310, 178 + i * 90, 340, 40), 6, 6)
    p.setBrush(QColor("#2563eb"))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawRoundedRect(QRect(560, 440, 300, 48), 8, 8)  # spills out of the card
    p.setPen(QColor("white"))
    p.drawText(QRect(560, 440, 300, 48), int(Qt.AlignmentFlag.AlignCenter), "Create account")
    p.setPen(QColor("#dc2626"))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawEllipse(QRect(530, 415, 360, 100))
    p.end()
    return image


def chart() -> QImage:
    image = QImage(640, 400, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    for i, h in enumerate((120, 180, 90, 260, 300, 210)):
        p.fillRect(QRect(60 + i * 90, 360 - h, 60, h), QColor("#10b981" if i != 2 else "#ef4444"))
    p.setPen(QColor("#111827"))
    p.drawLine(40, 360, 620, 360)
    p.end()
    return image


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-images-"))
    project = tmp / "acme-web"
    project.mkdir()
    page = tmp / "signup-broken.png"
    broken_page().save(str(page), "PNG")
    answer = (
        "The **Create account** button is wider than the card: `.signup .actions` sets "
        "`width: 300px` while the card is 400px with 30px padding, so the button starts at "
        "the right edge and spills out. I'll make it `width: 100%` inside the card."
    )
    provider = ScriptedProvider([Reply(answer)])
    run = Run(DataPaths(tmp / "data", "--data-dir"), provider)
    controller = await run.started()
    controller.window.showMaximized()
    engine = run.app.engine
    session = await engine.create_session(
        project, name="Fix the sign-up layout", permission_mode=PermissionMode.AUTO
    )
    controller.window.select_session(session.id)
    sessions = controller.sessions
    assert sessions is not None
    panel = controller.window.panel
    await until(lambda: panel.session is not None)
    composer = panel.composer
    files = QMimeData()
    files.setUrls([QUrl.fromLocalFile(str(page))])
    composer.edit.insertFromMimeData(files)  # what a drop from the file manager delivers
    await until(lambda: composer.images)  # read in a worker thread
    composer.edit.setPlainText("The sign-up button is broken on this page, see the circle.")
    composer.send.click()
    await until(lambda: provider.calls == 1)
    model = controller.window.transcript_model
    await until(lambda: any(model.row_at(i).text == answer for i in range(model.rowCount())))
    # The next message: a pasted chart waits in the composer as a chip.
    pasted = QMimeData()
    pasted.setImageData(chart())
    composer.edit.insertFromMimeData(pasted)
    await until(lambda: composer.images)
    composer.edit.setPlainText("Also: why is the third bar red in this chart?")
    composer.edit.setFocus()
    await run.task


if __name__ == "__main__":
    qt = create_qapplication(sys.argv)
    assert isinstance(qt, QApplication)
    qasync.run(main())
