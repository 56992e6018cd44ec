"""Full-text search of what was said in sessions (issue 18 item 4): the query language and what a
hit is. The index is SQLite FTS5 over the person's messages and the agents' answers, kept in step
with the history by triggers in the same transaction as each write (``store/history.py``).

A person types words, not FTS5 syntax: ``fts_query`` turns the text into a query that matches
every word (in any order) as the start of a word ("digit" finds "digits", and results come while
a word is being typed), and a "quoted phrase" as a phrase. Nothing typed can be an FTS5 syntax
error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Search highlights in a snippet (control characters never appear in stored text we index).
MARK_START = "\x02"
MARK_END = "\x03"
_PHRASE = re.compile(r'"([^"]*)"')
_WORD = re.compile(r"\w+", re.UNICODE)


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts_query(text: str) -> str:
    """The FTS5 query for what the person typed; "" when there is nothing to search for.

    >>> fts_query('parse numbers')
    '"parse"* "numbers"*'
    >>> fts_query('"off by one" tok')
    '"off by one" "tok"*'
    >>> fts_query('a-b "" *')
    '"a"* "b"*'
    >>> fts_query('NEAR(a b) OR')
    '"NEAR"* "a"* "b"* "OR"*'
    """
    phrases = [" ".join(_WORD.findall(p)) for p in _PHRASE.findall(text)]
    words = _WORD.findall(_PHRASE.sub(" ", text))
    parts = [_quoted(phrase) for phrase in phrases if phrase]
    parts += [_quoted(word) + "*" for word in words]  # the start of a word
    return " ".join(parts)


@dataclass(frozen=True)
class SearchHit:
    """One message that matched: where it is and a snippet with the matches marked
    (``MARK_START``/``MARK_END``)."""

    session_id: str
    session_name: str
    entry_id: int
    seq: int
    kind: str  # "user" or "assistant"
    snippet: str
    created_at_ms: int
    archived: bool = False

    def plain_snippet(self, start: str = "", end: str = "") -> str:
        """The snippet with its marks replaced (``[``/``]`` for a terminal, tags for HTML)."""
        return self.snippet.replace(MARK_START, start).replace(MARK_END, end)
