"""Full-text search of what was said (issue 18 item 4): the FTS5 index follows the history in the
same transaction (inserts, updates, a session's deletion), finds every word in any order with the
last as a prefix, marks its snippets, and no typed text is ever an FTS5 syntax error. A real
SQLite file in WAL mode, migrated like a user's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind, PermissionMode, SessionMode
from fxdesk.domain.search import MARK_END, MARK_START, fts_query
from fxdesk.store import Store, history, migrations, repo
from fxdesk.store.schema import database_proxy as db


def _session(store: Store, session_id: str, name: str) -> None:
    def write() -> None:
        workspace, _ = repo.ensure_workspace("/p", "p", 1)
        repo.create_session(
            session_id=session_id,
            workspace=workspace,
            name=name,
            mode=SessionMode.PERSISTENT,
            permission_mode=PermissionMode.ASK,
            at_ms=1,
        )

    store.write_blocking(write)


def _say(
    store: Store, session_id: str, *lines: tuple[EntryKind, str], at_ms: int = 10
) -> list[HistoryEntry]:
    entries = [
        HistoryEntry(session_id, 0, kind, content=text, created_at_ms=at_ms) for kind, text in lines
    ]
    return store.write_blocking(lambda: history.append_history(session_id, entries))


def test_messages_and_answers_are_found_tool_output_is_not(store: Store) -> None:
    _session(store, "s1", "Parser")
    _session(store, "s2", "Docs")
    _say(
        store,
        "s1",
        (EntryKind.USER, "The tokenizer drops the last digit of numbers"),
        (EntryKind.ASSISTANT, "I will fix the tokenizer so numbers keep every digit."),
        (EntryKind.TOOL_RESULT, "tokenizer.py: 120 lines, numbers everywhere"),
    )
    _say(store, "s2", (EntryKind.USER, "Write the README about numbers"), at_ms=20)

    hits = store.read_blocking(lambda: history.search("tokenizer digit"))
    assert sorted((h.session_id, h.kind) for h in hits) == [("s1", "assistant"), ("s1", "user")]
    assert all(h.session_name == "Parser" for h in hits)
    marked = {h.plain_snippet("[", "]") for h in hits}
    assert "The [tokenizer] drops the last [digit] of numbers" in marked
    assert all(MARK_START in h.snippet and MARK_END in h.snippet for h in hits)

    # Every word, any order, the last as a prefix (results while typing).
    found = store.read_blocking(lambda: history.search("numb"))
    assert {h.session_id for h in found} == {"s1", "s2"}
    assert {h.kind for h in found} == {"user", "assistant"}  # never the tool output
    assert store.read_blocking(lambda: history.search("digit README")) == []
    # Diacritics and case do not matter.
    _say(store, "s2", (EntryKind.ASSISTANT, "Ein naïve Café-Beispiel"), at_ms=5)
    (cafe,) = store.read_blocking(lambda: history.search("NAIVE cafe"))
    assert cafe.session_id == "s2"
    # The filter box's sessions, most recently active first.
    assert store.read_blocking(lambda: history.sessions_mentioning("numbers")) == ["s2", "s1"]


def test_the_index_follows_updates_and_deletions_in_the_same_transaction(store: Store) -> None:
    _session(store, "s1", "Kept")
    _session(store, "s2", "Deleted")
    (entry,) = _say(store, "s1", (EntryKind.ASSISTANT, "first wording"))
    _say(store, "s2", (EntryKind.USER, "first thing to delete"))

    def reword() -> None:
        db.execute_sql(
            "UPDATE history_entry SET content = 'second wording' WHERE id = ?", (entry.id,)
        )

    store.write_blocking(reword)
    assert [h.session_id for h in store.read_blocking(lambda: history.search("first"))] == ["s2"]
    assert [h.entry_id for h in store.read_blocking(lambda: history.search("second"))] == [entry.id]

    store.write_blocking(lambda: db.execute_sql("DELETE FROM session WHERE id = 's2'"))
    assert store.read_blocking(lambda: history.search("delete")) == []
    check = store.write_blocking(
        lambda: db.execute_sql(
            "INSERT INTO history_fts (history_fts, rank) VALUES ('integrity-check', 1)"
        ).fetchall()
    )  # raises if the index and the table disagree
    assert check == []


def test_an_older_database_is_indexed_when_it_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = wal")
    for migration in migrations.MIGRATIONS[:7]:
        conn.execute("BEGIN IMMEDIATE")
        migration.apply(conn.execute)
        conn.execute(f"PRAGMA user_version = {migration.version}")
        conn.execute("COMMIT")
    conn.execute("INSERT INTO workspace (id, path, name, created_at_ms) VALUES (1, '/p', 'p', 1)")
    conn.execute(
        "INSERT INTO session (id, workspace_id, root_id, is_child, name, mode, permission_mode, "
        "state, created_at_ms, updated_at_ms) VALUES "
        "('old', 1, 'old', 0, 'Before search', 'persistent', 'ask', 'idle', 1, 1)"
    )
    conn.execute(
        "INSERT INTO history_entry (session_id, seq, step, kind, content, created_at_ms) "
        "VALUES ('old', 1, 0, 'user', 'remember the flaky integration test', 1)"
    )
    conn.close()

    store = Store.open(path)
    try:
        assert store.migrated_from == 7
        (hit,) = store.read_blocking(lambda: history.search("flaky"))
        assert (hit.session_id, hit.session_name) == ("old", "Before search")
    finally:
        store.close()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_no_typed_text_is_a_syntax_error(text: str) -> None:
    query = fts_query(text)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t VALUES ('some words here')")
    if query:
        conn.execute("SELECT * FROM t WHERE t MATCH ?", (query,)).fetchall()
    conn.close()
