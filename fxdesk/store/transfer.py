"""Reading a session tree out for an export and writing an imported one in (issue 18 item 5).

``read_tree`` runs in one read transaction (a consistent snapshot). ``write_tree`` runs in one
write transaction: every session, message and history row gets a new id (an import never
overwrites anything, and the same file imported twice gives two copies); unfinished messages
come in cancelled (an import never starts work).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from fxdesk.domain.images import refs_of
from fxdesk.domain.model import PermissionMode, SessionMode
from fxdesk.domain.transfer import TransferError
from fxdesk.store import attachments, repo
from fxdesk.store.schema import database_proxy as db

_TERMINAL = ("completed", "failed", "cancelled")
_KINDS = ("prompt", "task", "continuation", "steer")


def read_tree(session_id: str, whole_tree: bool) -> list[dict[str, Any]]:
    """The session (and, ``whole_tree``, its root and every session below it), parents first,
    each with its messages and its whole history."""
    row = db.execute_sql("SELECT root_id FROM session WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return []
    top = row[0] if whole_tree else session_id
    ids = [top]
    if whole_tree:
        found = db.execute_sql(
            "WITH RECURSIVE tree(id) AS (SELECT ? UNION ALL SELECT s.id FROM session s "
            "JOIN tree t ON s.parent_id = t.id) SELECT id FROM tree",
            (top,),
        ).fetchall()
        ids = [r[0] for r in found]
    sessions = []
    for sid in ids:
        s = db.execute_sql(
            "SELECT s.id, s.parent_id, s.name, w.path, s.mode, s.permission_mode, s.profile, "
            "s.model, s.effort, s.state, s.config_json, s.created_at_ms FROM session s "
            "JOIN workspace w ON w.id = s.workspace_id WHERE s.id = ?",
            (sid,),
        ).fetchone()
        items = db.execute_sql(
            "SELECT id, position, source_id, kind, content, status, reason, created_at_ms, "
            "updated_at_ms FROM work_item WHERE session_id = ? ORDER BY position",
            (sid,),
        ).fetchall()
        entries = db.execute_sql(
            "SELECT seq, work_id, step, kind, call_id, tool_name, content, full_text, data_json, "
            "created_at_ms FROM history_entry WHERE session_id = ? ORDER BY seq",
            (sid,),
        ).fetchall()
        sessions.append(
            {
                "id": s[0],
                "parent_id": s[1] if s[0] != top else None,
                "name": s[2],
                "workspace": s[3],
                "mode": s[4],
                "permission_mode": s[5],
                "profile": s[6],
                "model": s[7],
                "effort": s[8],
                "state": s[9],
                "config": json.loads(s[10] or "{}"),
                "created_at_ms": s[11],
                "work_items": [
                    dict(
                        zip(
                            (
                                "id",
                                "position",
                                "source_id",
                                "kind",
                                "content",
                                "status",
                                "reason",
                                "created_at_ms",
                                "updated_at_ms",
                            ),
                            item,
                            strict=True,
                        )
                    )
                    for item in items
                ],
                "history": [
                    {
                        "seq": e[0],
                        "work_id": e[1],
                        "step": e[2],
                        "kind": e[3],
                        "call_id": e[4],
                        "tool_name": e[5],
                        "content": e[6],
                        "full_text": e[7],
                        "data": json.loads(e[8]) if e[8] else {},
                        "created_at_ms": e[9],
                    }
                    for e in entries
                ],
                # Bytes, not text: the export turns them into base64 after masking its texts.
                "images": attachments.session_images(sid),
            }
        )
    return sessions


def write_tree(
    sessions: list[Mapping[str, Any]], workspace_path: str, workspace_name: str, at_ms: int
) -> list[str]:
    """Write the checked sessions (``domain.transfer.check_document``) as new sessions in
    ``workspace_path``; their new ids, in order (the first is the imported top session)."""
    workspace, _ = repo.ensure_workspace(workspace_path, workspace_name, at_ms)
    new_ids: dict[str, str] = {}
    created: list[str] = []
    for session in sessions:
        parent = None
        if session["parent_id"] is not None:
            parent = repo.get_session(new_ids[session["parent_id"]])
        try:
            mode = SessionMode(session["mode"])
            permission_mode = PermissionMode(session["permission_mode"])
        except ValueError as exc:
            raise TransferError(f"session {session['name']!r}: {exc}") from None
        sid = uuid.uuid4().hex[:16]
        new_ids[session["id"]] = sid
        repo.create_session(
            session_id=sid,
            workspace=workspace,
            name=session["name"],
            mode=mode,
            permission_mode=permission_mode,
            at_ms=at_ms,
            parent=parent,
            profile=session["profile"],
            model=session["model"],
            effort=session["effort"],
            config={**session["config"], "imported_from": session["id"]},
        )
        work_ids: dict[str, str] = {}
        for item in session["work_items"]:
            work_ids[item["id"]] = wid = uuid.uuid4().hex[:16]
            status, reason = item["status"], item["reason"]
            if status not in _TERMINAL:
                status, reason = "cancelled", "imported unfinished: not run here"
            kind = item["kind"] if item["kind"] in _KINDS else "prompt"
            db.execute_sql(
                "INSERT INTO work_item (id, session_id, position, source_id, kind, content, "
                "status, reason, created_at_ms, updated_at_ms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    wid,
                    sid,
                    item["position"],
                    item["source_id"],
                    kind,
                    item["content"],
                    status,
                    reason,
                    item["created_at_ms"],
                    item["updated_at_ms"],
                ),
            )
        image_ids: dict[int, int] = {}
        for image in session.get("images", ()):
            cursor = db.execute_sql(
                "INSERT INTO image_attachment (session_id, work_id, position, name, media_type, "
                "width, height, size, data, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sid,
                    work_ids.get(image["work_id"] or ""),
                    image["position"],
                    image["name"],
                    image["media_type"],
                    image["width"],
                    image["height"],
                    len(image["data"]),
                    image["data"],
                    image["created_at_ms"],
                ),
            )
            image_ids[image["id"]] = int(cursor.lastrowid)
        for entry in session["history"]:
            data = _with_image_ids(entry["data"], image_ids)
            db.execute_sql(
                "INSERT INTO history_entry (session_id, seq, work_id, step, kind, call_id, "
                "tool_name, content, full_text, data_json, created_at_ms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sid,
                    entry["seq"],
                    work_ids.get(entry["work_id"] or ""),
                    entry["step"],
                    entry["kind"],
                    entry["call_id"],
                    entry["tool_name"],
                    entry["content"],
                    entry["full_text"],
                    json.dumps(data, sort_keys=True) if data else None,
                    entry["created_at_ms"],
                ),
            )
        # The last committed turn, as the engine would have recorded it (recovery reads it).
        db.execute_sql(
            "UPDATE session SET last_work_id = (SELECT work_id FROM history_entry "
            "WHERE session_id = ? AND kind = 'turn_end' ORDER BY seq DESC LIMIT 1) WHERE id = ?",
            (sid, sid),
        )
        created.append(sid)
    return created


def _with_image_ids(data: dict[str, Any], new_ids: Mapping[int, int]) -> dict[str, Any]:
    """A history row's data with its images' ids as imported (an image the file lacks keeps
    its name and reaches the model as ``[image: name]``)."""
    refs = refs_of(data)
    if not refs:
        return data
    moved = [{**ref, "id": new_ids.get(ref["id"], -ref["id"])} for ref in refs]
    return {**data, "images": moved}
