"""The committed history of turns: one row per message, tool call and tool result.

Plain SQL, run inside store jobs like :mod:`fxdesk.store.control`; pages of a long transcript
are read by sequence number so opening a 10,000-message session reads only what is shown.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind, WorkStatus
from fxdesk.domain.search import MARK_END, MARK_START, SearchHit, fts_query
from fxdesk.domain.text import storable
from fxdesk.domain.work import WorkItem, committed_work_id
from fxdesk.store.attachments import user_entry_data
from fxdesk.store.schema import database_proxy as db

_ENTRY_COLUMNS = (
    "id, session_id, seq, work_id, step, kind, call_id, tool_name, content, full_text, "
    "data_json, created_at_ms"
)


def _entry(row: Sequence[Any]) -> HistoryEntry:
    return HistoryEntry(
        id=row[0],
        session_id=row[1],
        seq=row[2],
        work_id=row[3],
        step=row[4],
        kind=EntryKind(row[5]),
        call_id=row[6],
        tool_name=row[7],
        content=row[8],
        full_text=row[9],
        data=json.loads(row[10]) if row[10] else {},
        created_at_ms=row[11],
    )


def append_history(session_id: str, entries: Sequence[HistoryEntry]) -> list[HistoryEntry]:
    """Append entries at the session's next sequence numbers; returns them with seq and id.

    Text holding lone surrogates (a file name that is not UTF-8, a model's ``\\ud800``) is
    stored, and returned, with U+FFFD in their place: SQLite takes only UTF-8."""
    row = db.execute_sql(
        "SELECT COALESCE(MAX(seq), 0) FROM history_entry WHERE session_id = ?", (session_id,)
    ).fetchone()
    seq = int(row[0])
    stored = []
    for entry in entries:
        seq += 1
        entry = replace(
            entry,
            content=storable(entry.content) if entry.content else entry.content,
            full_text=storable(entry.full_text) if entry.full_text else entry.full_text,
        )
        cursor = db.execute_sql(
            f"INSERT INTO history_entry ({_ENTRY_COLUMNS}) "
            "VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                seq,
                entry.work_id,
                entry.step,
                entry.kind.value,
                entry.call_id,
                entry.tool_name,
                entry.content,
                entry.full_text,
                json.dumps(entry.data, sort_keys=True) if entry.data else None,
                entry.created_at_ms,
            ),
        )
        stored.append(replace(entry, session_id=session_id, seq=seq, id=cursor.lastrowid))
    return stored


def ensure_user_entry(item: WorkItem, at_ms: int) -> list[HistoryEntry]:
    """The person's (or parent's) message opens the turn's history; added once per item."""
    data = user_entry_data(item.id)  # the images the message carries
    row = db.execute_sql(
        "INSERT INTO history_entry (session_id, seq, work_id, step, kind, content, data_json, "
        "created_at_ms) "
        "SELECT ?, COALESCE((SELECT MAX(seq) FROM history_entry WHERE session_id = ?), 0) + 1, "
        "?, 0, 'user', ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM history_entry WHERE work_id = ? "
        "AND kind = 'user') RETURNING id, seq",
        (
            item.session_id,
            item.session_id,
            item.id,
            item.content,
            json.dumps(data, sort_keys=True) if data else None,
            at_ms,
            item.id,
        ),
    ).fetchone()
    if row is None:
        return []
    return [
        HistoryEntry(
            session_id=item.session_id,
            seq=row[1],
            kind=EntryKind.USER,
            work_id=item.id,
            content=item.content,
            data=data,
            created_at_ms=at_ms,
            id=row[0],
        )
    ]


def work_entries(work_id: str) -> list[HistoryEntry]:
    rows = db.execute_sql(
        f"SELECT {_ENTRY_COLUMNS} FROM history_entry WHERE work_id = ? ORDER BY seq",
        (work_id,),
    ).fetchall()
    return [_entry(row) for row in rows]


def context_entries(session_id: str, max_turns: int) -> list[HistoryEntry]:
    """The rows of the session's last ``max_turns`` committed turns, in order, with the rows of
    the turns the person cancelled among them.

    A cancelled turn is read back as far as it went (its message, its partial answer, its calls
    with "stopped" or "not run" results), so the model knows what already happened and never
    redoes it silently. Failed turns are left out: Retry sends their message again. Interrupted
    ones are left out too: Resume continues them as they are."""
    boundary = db.execute_sql(
        "SELECT seq FROM history_entry WHERE session_id = ? AND kind = 'turn_end' "
        "ORDER BY seq DESC LIMIT 1 OFFSET ?",
        (session_id, max_turns),
    ).fetchone()
    start = boundary[0] if boundary else 0
    rows = db.execute_sql(
        f"SELECT {_ENTRY_COLUMNS} FROM history_entry WHERE session_id = ? AND seq > ? "
        "AND (work_id IN (SELECT work_id FROM history_entry WHERE session_id = ? "
        "AND kind = 'turn_end' AND seq > ?) "
        "OR work_id IN (SELECT id FROM work_item WHERE session_id = ? AND status = ?)) "
        "ORDER BY seq",
        (session_id, start, session_id, start, session_id, WorkStatus.CANCELLED.value),
    ).fetchall()
    return [_entry(row) for row in rows]


def page_history(session_id: str, after_seq: int = 0, limit: int = 200) -> list[HistoryEntry]:
    rows = db.execute_sql(
        f"SELECT {_ENTRY_COLUMNS} FROM history_entry WHERE session_id = ? AND seq > ? "
        "ORDER BY seq LIMIT ?",
        (session_id, after_seq, limit),
    ).fetchall()
    return [_entry(row) for row in rows]


def history_proof(session_id: str) -> str | None:
    """The work id the committed history proves finished (spec §3.7, scenario 4)."""
    row = db.execute_sql(
        "SELECT s.last_work_id, h.kind, h.work_id FROM session s LEFT JOIN history_entry h "
        "ON h.session_id = s.id AND h.seq = (SELECT MAX(seq) FROM history_entry "
        "WHERE session_id = s.id) WHERE s.id = ?",
        (session_id,),
    ).fetchone()
    last_work_id = row[0] if row else None
    tail = (row[1], row[2]) if row and row[1] is not None else None
    # The history "ends in an interrupted turn" when rows of another turn follow the last
    # committed one.
    interrupted = tail is not None and (tail[0] != "turn_end" or tail[1] != last_work_id)
    return committed_work_id(last_work_id, tail is None, interrupted)


def existing_call_ids(session_id: str, call_ids: Sequence[str]) -> set[str]:
    """Which of ``call_ids`` the session's history already holds."""
    if not call_ids:
        return set()
    rows = db.execute_sql(
        f"SELECT call_id FROM history_entry WHERE session_id = ? AND call_id IN "
        f"({', '.join('?' * len(call_ids))})",
        (session_id, *call_ids),
    ).fetchall()
    return {row[0] for row in rows}


def tool_result_of(session_id: str, call_id: str) -> HistoryEntry | None:
    """The result row of one tool call, if the history holds it (one at most: a unique index)."""
    row = db.execute_sql(
        f"SELECT {_ENTRY_COLUMNS} FROM history_entry WHERE session_id = ? AND call_id = ? "
        "AND kind = ?",
        (session_id, call_id, EntryKind.TOOL_RESULT.value),
    ).fetchone()
    return _entry(row) if row else None


def history_before(session_id: str, before_seq: int | None, limit: int) -> list[HistoryEntry]:
    """The ``limit`` rows just before ``before_seq`` (the newest when None), oldest first."""
    if before_seq is None:
        rows = db.execute_sql(
            f"SELECT {_ENTRY_COLUMNS} FROM history_entry WHERE session_id = ? "
            "ORDER BY seq DESC LIMIT ?",
            (session_id, limit),
        ).fetchall()
    else:
        rows = db.execute_sql(
            f"SELECT {_ENTRY_COLUMNS} FROM history_entry WHERE session_id = ? AND seq < ? "
            "ORDER BY seq DESC LIMIT ?",
            (session_id, before_seq, limit),
        ).fetchall()
    return [_entry(row) for row in reversed(rows)]


def sessions_mentioning(text: str, limit: int = 500) -> list[str]:
    """Sessions whose messages or answers contain every word of ``text`` (each as the start
    of a word), the one with the newest such message first: the matches are walked newest
    first and the walk stops at ``limit`` sessions (a word said everywhere costs ~30 ms over
    100,000 messages instead of ~55 ms for grouping them all; bench/search.py)."""
    query = fts_query(text)
    if not query:
        return []
    cursor = db.execute_sql(
        "SELECT h.session_id FROM history_fts JOIN history_entry h ON h.id = history_fts.rowid "
        "WHERE history_fts MATCH ? ORDER BY history_fts.rowid DESC",
        (query,),
    )
    found: dict[str, None] = {}
    for (session_id,) in cursor:
        found.setdefault(session_id, None)
        if len(found) >= limit:
            break
    cursor.close()
    return list(found)


def search(text: str, limit: int = 50) -> list[SearchHit]:
    """The messages and answers that contain every word of ``text``, newest first, each with
    a snippet whose matches are marked (``domain.search``).

    Newest first rather than by rank: the index walks its matches backwards and stops at
    ``limit``, so a word found in every message costs what a rare one does (ranking every
    match of a common word took ~100 ms over 100,000 messages; bench/search.py)."""
    query = fts_query(text)
    if not query:
        return []
    rows = db.execute_sql(
        "SELECT h.session_id, s.name, h.id, h.seq, h.kind, "
        "snippet(history_fts, 0, ?, ?, '…', 16), h.created_at_ms, s.state "
        "FROM history_fts JOIN history_entry h ON h.id = history_fts.rowid "
        "JOIN session s ON s.id = h.session_id "
        "WHERE history_fts MATCH ? ORDER BY history_fts.rowid DESC LIMIT ?",
        (MARK_START, MARK_END, query, limit),
    ).fetchall()
    return [
        SearchHit(
            session_id=row[0],
            session_name=row[1],
            entry_id=row[2],
            seq=row[3],
            kind=row[4],
            snippet=row[5],
            created_at_ms=row[6],
            archived=row[7] == "archived",
        )
        for row in rows
    ]


def tool_entries(
    session_id: str, tools: Sequence[str], *, whole_tree: bool = False
) -> list[HistoryEntry]:
    """The session's calls to ``tools`` and their results, oldest first (what its file tools
    were asked and did); ``whole_tree``: those of every session of its tree (root and
    sub-agents)."""
    if not tools:
        return []
    sessions = "SELECT ?"
    if whole_tree:
        sessions = (
            "WITH RECURSIVE tree(id) AS (SELECT root_id FROM session WHERE id = ? UNION ALL "
            "SELECT s.id FROM session s JOIN tree t ON s.parent_id = t.id) SELECT id FROM tree"
        )
    rows = db.execute_sql(
        f"SELECT {_ENTRY_COLUMNS} FROM history_entry WHERE session_id IN ({sessions}) "
        "AND kind IN ('tool_call', 'tool_result') "
        f"AND tool_name IN ({', '.join('?' * len(tools))}) ORDER BY session_id, seq",
        (session_id, *tools),
    ).fetchall()
    return [_entry(row) for row in rows]
