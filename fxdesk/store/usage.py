"""Usage totals read from the history: one query over the finished model calls.

Every ``assistant`` entry is one finished model call; its ``data_json`` holds ``usage`` (input
and output tokens), ``cost_usd`` when priced, and ``usage_reported: false`` when its server said
nothing (``engine.turn``). An external agent's turn (``engine.turn_acp``) is one call: its
final ``assistant`` row holds the turn's usage; its other ``assistant`` rows (text before a tool
call, a plan, data ``acp: true``) are steps within it and not counted. Called on the store's
reader threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fxdesk.domain.model import EntryKind
from fxdesk.domain.usage import DayUsage, SessionUsage, UsageTotals
from fxdesk.store.schema import database_proxy

_SUMS = """
    COUNT(*),
    SUM(CASE WHEN unreported THEN 0 ELSE COALESCE(json_extract(data_json, '$.usage[0]'), 0) END),
    SUM(CASE WHEN unreported THEN 0 ELSE COALESCE(json_extract(data_json, '$.usage[1]'), 0) END),
    SUM(COALESCE(json_extract(data_json, '$.cost_usd'), 0)),
    SUM(unreported),
    SUM(CASE WHEN NOT unreported AND json_extract(data_json, '$.cost_usd') IS NULL
        THEN 1 ELSE 0 END)
"""

_CALLS = """
    SELECT h.session_id, h.created_at_ms, h.data_json,
           COALESCE(json_extract(h.data_json, '$.usage_reported'), 1) = 0 AS unreported
    FROM history_entry h WHERE h.kind = ? AND json_extract(h.data_json, '$.acp') IS NULL
"""


def _totals(row: Sequence[Any] | None) -> UsageTotals:
    if row is None or not row[0]:
        return UsageTotals()
    calls, sent, received, cost, unreported, unpriced = row
    return UsageTotals(
        int(calls),
        int(sent or 0),
        int(received or 0),
        float(cost or 0),
        int(unreported or 0),
        int(unpriced or 0),
    )


def totals(session_ids: Sequence[str] | None = None, since_ms: int | None = None) -> UsageTotals:
    """The calls of these sessions (None: all), since ``since_ms`` (None: ever)."""
    where, params = _filters(session_ids, since_ms)
    sql = f"SELECT {_SUMS} FROM ({_CALLS}{where})"
    return _totals(database_proxy.execute_sql(sql, params).fetchone())


def tree_ids(root_id: str) -> list[str]:
    """The root session and every session under it."""
    rows = database_proxy.execute_sql("SELECT id FROM session WHERE root_id = ?", (root_id,))
    return [root_id, *(r[0] for r in rows.fetchall() if r[0] != root_id)]


def by_day(since_ms: int, utc_offset_s: int) -> list[DayUsage]:
    """Every day with calls since ``since_ms``, newest first (days in local time)."""
    where, params = _filters(None, since_ms)
    day = f"date((created_at_ms / 1000) + {int(utc_offset_s)}, 'unixepoch')"
    sql = f"SELECT {day} AS day, {_SUMS} FROM ({_CALLS}{where}) GROUP BY day ORDER BY day DESC"
    return [DayUsage(row[0], _totals(row[1:])) for row in database_proxy.execute_sql(sql, params)]


def by_session(since_ms: int | None, limit: int = 20) -> list[SessionUsage]:
    """The sessions that used the most since ``since_ms``, by cost then tokens."""
    where, params = _filters(None, since_ms)
    sql = (
        f"SELECT c.session_id, s.name, {_SUMS} FROM ({_CALLS}{where}) c "
        "JOIN session s ON s.id = c.session_id GROUP BY c.session_id "
        "ORDER BY 6 DESC, 4 DESC LIMIT ?"
    )
    rows = database_proxy.execute_sql(sql, (*params, limit)).fetchall()
    return [SessionUsage(row[0], row[1], _totals(row[2:])) for row in rows]


def _filters(session_ids: Sequence[str] | None, since_ms: int | None) -> tuple[str, list[Any]]:
    where = ""
    params: list[Any] = [EntryKind.ASSISTANT.value]
    if session_ids is not None:
        marks = ", ".join("?" for _ in session_ids) or "NULL"
        where += f" AND h.session_id IN ({marks})"
        params += list(session_ids)
    if since_ms is not None:
        where += " AND h.created_at_ms >= ?"
        params.append(since_ms)
    return where, params
