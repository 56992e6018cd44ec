"""The one diff colourer: the approval dialog's preview and ``edit_file`` tool cards in the
transcript both colour unified diffs through ``color_diff``.

Added lines are green and removed lines red, each on a tinted line background; hunk headers
(``@@ … @@``) are violet; the ``---``/``+++`` file headers are bold. The colours are the
``theme`` roles of a light or a dark window.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument

from fxdesk.gui.theme import Role, color

_LINES = {  # first character -> (text role, line background role or None)
    "+": (Role.DIFF_ADDED, Role.DIFF_ADDED_BACKGROUND),
    "-": (Role.DIFF_REMOVED, Role.DIFF_REMOVED_BACKGROUND),
    "@": (Role.DIFF_HUNK, None),
}


def color_diff(document: QTextDocument, *, dark: bool) -> None:
    """Colour the unified-diff lines of ``document`` (other lines are left as they are).

    Args:
        document: plain text, one diff line per block (it may hold other text too).
        dark: use the colours for a dark window.
    """
    bold = QTextCharFormat()
    bold.setFontWeight(QFont.Weight.Bold)
    formats: dict[str, tuple[QTextCharFormat, QTextBlockFormat | None]] = {}
    for first, (text_role, background_role) in _LINES.items():
        char = QTextCharFormat()
        char.setForeground(color(text_role, dark=dark))
        block_format = None
        if background_role is not None:
            block_format = QTextBlockFormat()
            block_format.setBackground(color(background_role, dark=dark))
        formats[first] = (char, block_format)
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    block = document.begin()
    while block.isValid():
        text = block.text()
        if text.startswith(("+++", "---")):
            _merge(cursor, block.position(), len(text), bold, None)
        elif text[:1] in formats:
            char, block_format = formats[text[:1]]
            _merge(cursor, block.position(), len(text), char, block_format)
        block = block.next()
    cursor.endEditBlock()


def _merge(
    cursor: QTextCursor,
    position: int,
    length: int,
    char: QTextCharFormat,
    block_format: QTextBlockFormat | None,
) -> None:
    cursor.setPosition(position)
    if block_format is not None:
        cursor.mergeBlockFormat(block_format)
    cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
    cursor.mergeCharFormat(char)


def color_code(document: QTextDocument, name: str, *, dark: bool) -> None:
    """Colour the code of a coloured diff's lines as the file ``name``'s language (each line
    on its own), over the added/removed line backgrounds; nothing for an unknown language."""
    from fxdesk.gui.transcript.markdown import TokenFormats, lexer_for_file

    lexer = lexer_for_file(name)
    if lexer is None:
        return
    tokens = TokenFormats(dark)
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    block = document.begin()
    while block.isValid():
        text = block.text()
        if text[:1] in ("+", "-", " ") and not text.startswith(("+++", "---")):
            position = block.position() + 1
            for token, value in lexer.get_tokens(text[1:]):
                chosen = tokens.format_for(token)
                if chosen is not None and value:
                    _merge(cursor, position, len(value), chosen, None)
                position += len(value)
        block = block.next()
    cursor.endEditBlock()
