"""Images in the composer, driven the way a person does it (issue 18 item 6): a real PNG file
dropped from the file manager and image data pasted become chips; sending takes them to the
model and the transcript row shows their thumbnails; a model that takes no images is named
before anything is sent, and nothing is lost.

The real App (SQLite file, engine, bus) runs under the GUI controller; only the model is
scripted, and it records the images each request carried."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QDragEnterEvent, QDragMoveEvent, QDropEvent, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QToolButton

from fxdesk.domain.model import Profile
from fxdesk.gui.transcript.model import RowKind
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider
from tests.gui.sessions.test_session_flow import Window
from tests.gui.waiting import until


def write_png(path: Path, width: int, height: int, colour: str) -> bytes:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor(colour))
    assert image.save(str(path), "PNG")  # type: ignore[call-overload]
    return path.read_bytes()


def drop(widget: object, data: QMimeData) -> None:
    """What a drag from the file manager delivers, event by event."""
    at, action = QPointF(10, 10), Qt.DropAction.CopyAction
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    for event in (
        QDragEnterEvent(at.toPoint(), action, data, buttons, keys),
        QDragMoveEvent(at.toPoint(), action, data, buttons, keys),
        QDropEvent(at, action, data, buttons, keys),
    ):
        QApplication.sendEvent(widget, event)  # type: ignore[arg-type]


async def test_a_dropped_png_and_a_pasted_image_go_with_the_message_and_show_in_the_row(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shot = write_png(tmp_path / "screenshot.png", 64, 40, "#2a7ae2")
    provider = ScriptedProvider([Reply("A blue and a red box.")])
    run = await Window(data_paths, provider).started()
    try:
        await run.app.sessions.create_root(project, name="Look")
        await until(lambda: run.panel.session is not None)
        composer = run.panel.composer
        edit = composer.edit

        files = QMimeData()
        files.setUrls([QUrl.fromLocalFile(str(tmp_path / "screenshot.png"))])
        drop(edit.viewport(), files)
        await until(lambda: len(composer.images) == 1)  # read off the UI thread
        pasted = QMimeData()
        red = QImage(30, 30, QImage.Format.Format_RGB32)
        red.fill(QColor("#d03030"))
        pasted.setImageData(red)
        assert edit.canInsertFromMimeData(pasted)
        edit.insertFromMimeData(pasted)  # what Ctrl+V does with image data on the clipboard
        await until(lambda: len(composer.images) == 2)

        assert [(i.name, i.media_type) for i in composer.images] == [
            ("screenshot.png", "image/png"),
            ("pasted-image.png", "image/png"),
        ]
        assert composer.images[0].data == shot  # a small file goes as it is
        assert composer.chips.isVisible()
        assert edit.toPlainText() == ""  # an image is not a mention
        removes = composer.chips.findChildren(QToolButton)
        assert [b.accessibleName() for b in removes] == [
            "Remove image screenshot.png",
            "Remove image pasted-image.png",
        ]

        run.type_and_send("What are these?")
        await until(lambda: provider.calls == 1)
        message = provider.requests[0].messages[-1]
        assert message.content == "What are these?"
        assert [(i.name, i.width, i.height) for i in message.images] == [
            ("screenshot.png", 64, 40),
            ("pasted-image.png", 30, 30),
        ]
        assert message.images[0].data == shot
        assert composer.images == [] and not composer.chips.isVisible()

        row = await until(
            lambda: next(
                (
                    run.transcript.row_at(i)
                    for i in range(run.transcript.rowCount())
                    if run.transcript.row_at(i).kind == RowKind.USER
                ),
                None,
            )
        )
        assert [r["name"] for r in row.data["images"]] == ["screenshot.png", "pasted-image.png"]
        # The row is taller by its thumbnail strip, and the thumbnails are read and painted.
        delegate = run.panel.transcript.delegate
        layout = delegate.layout(row)
        assert len(layout.thumbs) == 2
        thumbnails = delegate.thumbnails
        assert thumbnails is not None
        first_id = row.data["images"][0]["id"]
        run.panel.transcript.viewport().repaint()
        pixmap = await until(lambda: thumbnails.pixmap(first_id))
        assert not pixmap.isNull() and pixmap.width() > pixmap.height()  # 64×40, kept in shape
        await until(lambda: run.rows(RowKind.ASSISTANT) == ["A blue and a red box."])
    finally:
        await run.stop()


async def test_a_model_that_takes_no_images_is_named_and_nothing_is_sent(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_png(tmp_path / "diagram.png", 20, 20, "#20a040")
    provider = ScriptedProvider([Reply("never")])
    run = await Window(data_paths, provider).started()
    try:
        await run.app.profiles.save(Profile("text-only", "openai", model="gpt-3.5-turbo"))
        await run.app.sessions.create_root(project, name="Text", profile="text-only")
        await until(lambda: run.panel.session is not None)
        composer = run.panel.composer
        checks = run.controller.sessions.image_support.checks
        files = QMimeData()
        files.setUrls([QUrl.fromLocalFile(str(tmp_path / "diagram.png"))])
        drop(composer.edit.viewport(), files)
        await until(lambda: composer.images)
        await until(lambda: run.controller.sessions.image_support.checks > checks)
        note = composer.image_note
        await until(note.isVisible)
        assert "gpt-3.5-turbo (profile text-only) does not accept images" in note.text()

        run.type_and_send("Explain the diagram")
        QTest.keyClick(composer.edit, Qt.Key.Key_Return)  # again: still refused
        assert provider.calls == 0
        assert composer.edit.toPlainText() == "Explain the diagram"  # nothing lost
        assert [i.name for i in composer.images] == ["diagram.png"]
        items = await run.app.engine.queue(run.panel.session.id)
        assert items == []

        # Removing the image lets the message go, as text.
        composer.chips.findChildren(QToolButton)[0].click()
        assert not note.isVisible()
        QTest.keyClick(composer.edit, Qt.Key.Key_Return)
        await until(lambda: provider.calls == 1)
        assert provider.requests[0].messages[-1].images == ()
    finally:
        await run.stop()


def test_a_large_image_is_shrunk_and_a_file_that_is_no_image_is_named(
    qapp: QApplication, tmp_path: Path
) -> None:
    from fxdesk.gui.sessions.image_chips import MAX_SIDE, ImageProblem, from_file

    write_png(tmp_path / "wide.png", 3000, 1000, "#445566")
    image = from_file(tmp_path / "wide.png")
    assert (image.width, image.height) == (MAX_SIDE, 682)
    assert image.media_type == "image/png" and image.data.startswith(b"\x89PNG")
    (tmp_path / "fake.png").write_text("not an image")
    try:
        from_file(tmp_path / "fake.png")
    except ImageProblem as exc:
        assert str(exc) == "fake.png could not be read as an image"
    else:
        raise AssertionError("a text file was taken for an image")


async def test_retry_of_a_failed_message_sends_its_images_again(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    from fxdesk.providers.scripted import Fault

    project = tmp_path / "project"
    project.mkdir()
    shot = write_png(tmp_path / "error.png", 12, 8, "#aa0000")
    provider = ScriptedProvider([Fault("server_error", "upstream 500"), Reply("Seen now.")])
    run = await Window(data_paths, provider).started()
    try:
        await run.app.sessions.create_root(project, name="Retry")
        await until(lambda: run.panel.session is not None)
        composer = run.panel.composer
        files = QMimeData()
        files.setUrls([QUrl.fromLocalFile(str(tmp_path / "error.png"))])
        drop(composer.edit.viewport(), files)
        await until(lambda: composer.images)
        run.type_and_send("What does this error say?")
        notice = await until(
            lambda: next(
                (
                    run.transcript.row_at(i)
                    for i in range(run.transcript.rowCount())
                    if run.transcript.row_at(i).kind == RowKind.NOTICE
                ),
                None,
            )
        )
        run.panel.transcript.action.emit("retry", notice.work_id)
        await until(lambda: "Seen now." in run.rows(RowKind.ASSISTANT))
        retried = provider.requests[-1].messages[-1]
        assert retried.content == "What does this error say?"
        assert [i.data for i in retried.images] == [shot]
    finally:
        await run.stop()
