"""Markdown for the transcript: Qt's own Markdown reader, code blocks highlighted with Pygments.

``render`` builds a ``QTextDocument`` laid out for a width; ``code_blocks`` finds each fenced
code block's rectangle and text, so the view can draw a "Copy" button on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF
from PySide6.QtGui import (
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextLayout,
)

from fxdesk.gui.theme import Role, color
from fxdesk.gui.widgets import monospace

if TYPE_CHECKING:
    from pygments.lexer import Lexer

# pygments is imported when the first code block is highlighted, not with the window: the
# window's first frame does not need it (docs/performance.md).


@lru_cache(maxsize=1)
def _token_roles() -> dict[object, Role]:
    from pygments.token import Comment, Keyword, Name, Number, Operator, String

    return {
        Keyword: Role.SYNTAX_KEYWORD,
        Name.Builtin: Role.SYNTAX_NAME,
        Name.Function: Role.SYNTAX_NAME,
        Name.Class: Role.SYNTAX_CLASS,
        String: Role.SYNTAX_STRING,
        Number: Role.SYNTAX_NUMBER,
        Comment: Role.SYNTAX_COMMENT,
        Operator: Role.SYNTAX_OPERATOR,
        Name.Decorator: Role.SYNTAX_DECORATOR,
    }


@lru_cache(maxsize=64)
def _lexer(language: str) -> Lexer:
    from pygments.lexers import TextLexer, get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language or "text", stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


class TokenFormats:
    """The character format of each kind of pygments token, in the theme's colours (code
    blocks in the transcript, code lines in the Changes dock's diffs)."""

    def __init__(self, dark: bool) -> None:
        self._formats: dict[object, QTextCharFormat] = {}
        for token, role in _token_roles().items():
            fmt = QTextCharFormat()
            fmt.setForeground(color(role, dark=dark))
            if role is Role.SYNTAX_COMMENT:
                fmt.setFontItalic(True)
            self._formats[token] = fmt

    def format_for(self, token: object) -> QTextCharFormat | None:
        while token is not None:  # up to pygments' root Token, whose parent is None
            found = self._formats.get(token)
            if found is not None:
                return found
            token = getattr(token, "parent", None)
        return None


def lexer_for_file(name: str) -> Lexer | None:
    """The pygments lexer for a file's name, or None for one pygments does not know."""
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@dataclass(frozen=True)
class CodeBlock:
    rect: QRectF
    text: str


def render(
    text: str, width: float, *, dark: bool, font: QFont | None = None, highlight: bool = True
) -> QTextDocument:
    """A laid-out document for Markdown ``text`` at ``width`` pixels.

    With ``highlight`` False its code blocks are left uncoloured until ``highlight_code`` is
    called: colouring (pygments) is half the cost of a document, and a row's height, which the
    transcript needs for every row it loads, does not depend on it (code lines do not wrap)."""
    document = QTextDocument()
    # The layout first: created later (by size()), it would re-highlight the whole document.
    document.documentLayout()
    if font is not None:
        document.setDefaultFont(font)
    document.setDocumentMargin(2)
    document.setMarkdown(text)
    has_code = _style_code(document, dark)
    if highlight and has_code:
        highlight_code(document, dark)
    document.setTextWidth(max(width, 40.0))
    return document


def has_plain_code(document: QTextDocument) -> bool:
    """Whether ``document`` has code blocks ``highlight_code`` has not coloured yet."""
    return bool(document.property(_CODE)) and not document.property(_COLOURED)


def skip_colouring(document: QTextDocument) -> None:
    """Leave ``document``'s code uncoloured: ``highlight_code`` passes it over."""
    document.setProperty(_COLOURED, True)


def highlight_code(document: QTextDocument, dark: bool, lines: int | None = None) -> None:
    """Colour the code blocks of a rendered document (once).

    Each code line's colours are set on its block's layout (as ``QSyntaxHighlighter`` does),
    all in one edit block: the document's layout relays the changed part once at its end. A
    ``QSyntaxHighlighter`` marks each block dirty on its own, and each mark relays the rest of
    an already laid-out document: 1.2 s for a 50 KB answer, 73 s for 400 KB (issue 17).
    Only the first ``CODE_LINES_COLOURED`` code lines are coloured: pygments takes ~1 ms a
    line, on the Qt thread. With ``lines``, this call colours at most that many and the next
    one goes on from there (``has_plain_code`` stays true until all are coloured)."""
    if document.property(_COLOURED):
        return
    tokens = _token_formats(dark)
    done = document.property(_DONE) or 0  # code lines coloured by earlier calls
    step = CODE_LINES_COLOURED - done if lines is None else min(lines, CODE_LINES_COLOURED - done)
    coloured = 0
    edit = QTextCursor(document)
    edit.beginEditBlock()
    block = document.findBlockByNumber(document.property(_NEXT) or 0)
    while block.isValid() and coloured < step:
        fmt = block.blockFormat()
        if fmt.hasProperty(QTextFormat.Property.BlockCodeFence):
            coloured += 1
            language = fmt.stringProperty(QTextFormat.Property.BlockCodeLanguage)
            ranges = []
            position = 0
            for token, value in _lexer(language.lower()).get_tokens(block.text()):
                chosen = tokens.format_for(token)
                if chosen is not None and value:
                    span = QTextLayout.FormatRange()
                    span.start, span.length, span.format = position, len(value), chosen
                    ranges.append(span)
                position += len(value)
            if ranges:
                block.layout().setFormats(ranges)
        block = block.next()
    edit.endEditBlock()
    if not block.isValid() or done + coloured >= CODE_LINES_COLOURED:
        document.setProperty(_COLOURED, True)
    else:
        document.setProperty(_NEXT, block.blockNumber())
        document.setProperty(_DONE, done + coloured)


@lru_cache(maxsize=2)
def _token_formats(dark: bool) -> TokenFormats:
    return TokenFormats(dark)


COMMON_LANGUAGES = ("python", "bash", "javascript", "typescript", "json", "diff", "text")


def warm_lexers(languages: tuple[str, ...] = COMMON_LANGUAGES) -> None:
    """Import pygments and build the lexers of ``languages`` now. The first use of each costs
    10-100 ms (the import, then compiling its rules), which the Qt thread paid in one go when
    the first code block was coloured: run this in a worker thread (pure Python, no Qt)."""
    _token_roles()
    for language in languages:
        _lexer(language)


def plain(text: str, width: float, *, font: QFont | None = None) -> QTextDocument:
    document = QTextDocument()
    if font is not None:
        document.setDefaultFont(font)
    document.setDocumentMargin(2)
    document.setPlainText(text)
    document.setTextWidth(max(width, 40.0))
    return document


CODE_LINES_COLOURED = 200  # of one document (an answer, a piece of a streaming one)
_CODE = "fxdesk_has_code"  # document property: it has fenced code blocks
_COLOURED = "fxdesk_code_coloured"  # document property: highlight_code coloured them
_NEXT = "fxdesk_code_next"  # document property: the block highlight_code goes on from
_DONE = "fxdesk_code_done"  # document property: code lines highlight_code coloured so far


def _style_code(document: QTextDocument, dark: bool) -> bool:
    """Give fenced code blocks their background and font; whether there were any."""
    background = color(Role.CODE_BACKGROUND, dark=dark)
    char = QTextCharFormat()
    char.setFont(monospace())
    found = False
    # One edit block: the layout (created before, see render) hears of the changes once, at
    # its end, instead of relaying the rest of the document at each block (quadratic: 4 s for
    # a 100 KB answer with 560 code lines, seconds more for each further 100 KB).
    edit = QTextCursor(document)
    edit.beginEditBlock()
    block = document.begin()
    while block.isValid():
        if block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence):
            found = True
            edit.setPosition(block.position())
            fmt = QTextBlockFormat(block.blockFormat())
            fmt.setBackground(background)
            fmt.setLeftMargin(6)
            fmt.setRightMargin(6)
            edit.setBlockFormat(fmt)
            edit.select(QTextCursor.SelectionType.BlockUnderCursor)
            edit.mergeCharFormat(char)
        block = block.next()
    edit.endEditBlock()
    document.setProperty(_CODE, found)
    return found


def code_blocks(document: QTextDocument) -> list[CodeBlock]:
    """Each fenced code block: where it is in the document, and its text."""
    found: list[CodeBlock] = []
    layout = document.documentLayout()
    block = document.begin()
    current: list[str] = []
    rect: QRectF | None = None
    while block.isValid():
        fenced = block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence)
        if fenced:
            current.append(block.text())
            box = layout.blockBoundingRect(block)
            rect = box if rect is None else rect.united(box)
        elif rect is not None:
            found.append(CodeBlock(rect, "\n".join(current)))
            current, rect = [], None
        block = block.next()
    if rect is not None:
        found.append(CodeBlock(rect, "\n".join(current)))
    return found


SEGMENT_CHARS = 1500


def stream_segments(text: str, size: int = SEGMENT_CHARS) -> list[str]:
    """``text`` cut into pieces of about ``size`` characters at paragraph breaks outside code
    fences, for text that is still streaming in.

    Every piece but the last is closed: more text never changes it (the cuts depend only on the
    text before them), so its rendering can be kept while the last piece grows.
    """
    pieces: list[str] = []
    start = 0
    fence = ""
    position = 0
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        position += len(line)
        blank = not line.strip()
        if blank and not fence and position - start >= size and position < len(text):
            pieces.append(text[start:position])
            start = position
    pieces.append(text[start:])
    return pieces
