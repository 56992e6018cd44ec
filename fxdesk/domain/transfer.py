"""A session or a session tree outside fxdesk (issue 18 item 5): the JSON document that holds all
of it (its sessions, their queued and finished messages, their whole history) and a Markdown
rendering a person reads.

``check_document`` is the gate for an import: it names what is wrong with a file (not JSON, not
an fxdesk export, a newer format, a field of the wrong type) before anything is written. Secrets
are never in a document: profiles are named, never included, and the engine masks every key it
knows in every text (``logs.redact``) before the document leaves it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from fxdesk.domain.images import MEDIA_TYPES, refs_of, sniff

FORMAT = "fxdesk-export"
VERSION = 1

SESSION_FIELDS = {
    "id": str,
    "parent_id": (str, type(None)),
    "name": str,
    "workspace": str,
    "mode": str,
    "permission_mode": str,
    "profile": (str, type(None)),
    "model": (str, type(None)),
    "effort": (str, type(None)),
    "state": str,
    "config": dict,
    "created_at_ms": int,
    "work_items": list,
    "history": list,
}
WORK_FIELDS = {
    "id": str,
    "position": int,
    "source_id": str,
    "kind": str,
    "content": str,
    "status": str,
    "reason": (str, type(None)),
    "created_at_ms": int,
    "updated_at_ms": int,
}
ENTRY_FIELDS = {
    "seq": int,
    "work_id": (str, type(None)),
    "step": int,
    "kind": str,
    "call_id": (str, type(None)),
    "tool_name": (str, type(None)),
    "content": str,
    "full_text": (str, type(None)),
    "data": dict,
    "created_at_ms": int,
}

# A session's attached images (optional: exports before issue 18 item 6 have none), their
# bytes as base64 in ``data``; ``id`` is what its history rows list.
IMAGE_FIELDS = {
    "id": int,
    "work_id": (str, type(None)),
    "position": int,
    "name": str,
    "media_type": str,
    "width": int,
    "height": int,
    "data": str,
    "created_at_ms": int,
}


class TransferError(Exception):
    """A file that cannot be imported, and why (nothing was written)."""


def _check_fields(where: str, value: object, fields: Mapping[str, Any]) -> None:
    if not isinstance(value, dict):
        raise TransferError(f"{where} is not an object")
    for name, kind in fields.items():
        if name not in value:
            raise TransferError(f"{where} has no {name!r}")
        if not isinstance(value[name], kind) or (kind is int and isinstance(value[name], bool)):
            raise TransferError(f"{where}: {name!r} has the wrong type")


def check_document(text: str) -> dict[str, Any]:
    """The document in ``text``, checked; ``TransferError`` says what is wrong."""
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TransferError(f"not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TransferError("not an fxdesk export (its 'format' is not 'fxdesk-export')")
    version = document.get("version")
    if not isinstance(version, int) or version < 1:
        raise TransferError("the export has no valid 'version'")
    if version > VERSION:
        raise TransferError(
            f"the export is of a newer format ({version}; this fxdesk reads {VERSION}): "
            "update fxdesk to import it"
        )
    sessions = document.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        raise TransferError("the export holds no sessions")
    ids: set[str] = set()
    for number, session in enumerate(sessions, start=1):
        _check_fields(f"session {number}", session, SESSION_FIELDS)
        if session["id"] in ids:
            raise TransferError(f"session {number}: the id {session['id']!r} appears twice")
        if session["parent_id"] is not None and session["parent_id"] not in ids:
            raise TransferError(f"session {number}: its parent is not before it in the export")
        ids.add(session["id"])
        for index, item in enumerate(session["work_items"], start=1):
            _check_fields(f"session {number}, message {index}", item, WORK_FIELDS)
        for index, entry in enumerate(session["history"], start=1):
            _check_fields(f"session {number}, history row {index}", entry, ENTRY_FIELDS)
        images = session.setdefault("images", [])
        if not isinstance(images, list):
            raise TransferError(f"session {number}: 'images' is not a list")
        for index, image in enumerate(images, start=1):
            _check_image(f"session {number}, image {index}", image)
    return document


def _check_image(where: str, image: object) -> None:
    """Check one exported image and turn its base64 ``data`` into bytes."""
    _check_fields(where, image, IMAGE_FIELDS)
    assert isinstance(image, dict)
    try:
        data = base64.b64decode(image["data"], validate=True)
    except (binascii.Error, ValueError):
        raise TransferError(f"{where}: its data is not base64") from None
    if image["media_type"] not in MEDIA_TYPES or sniff(data) != image["media_type"]:
        raise TransferError(f"{where}: its data is not the {image['media_type']} it says")
    image["data"] = data


def with_base64_images(sessions: Sequence[dict[str, Any]]) -> None:
    """The images' bytes as base64 text, for the JSON document (in place)."""
    for session in sessions:
        for image in session.get("images", ()):
            if isinstance(image["data"], bytes):
                image["data"] = base64.b64encode(image["data"]).decode("ascii")


WHO = {"user": "You", "assistant": "Agent"}


def to_markdown(document: Mapping[str, Any]) -> str:
    """The exported sessions as a person reads them: each session a heading (sub-agents one
    level deeper), its messages and answers, each tool call with its command or arguments and
    the start of its output."""
    sessions: Sequence[Mapping[str, Any]] = document["sessions"]
    depth: dict[str, int] = {}
    out: list[str] = []
    for session in sessions:
        parent = session["parent_id"]
        level = depth[session["id"]] = (depth.get(parent, 0) + 1) if parent else 1
        hashes = "#" * min(level, 6)
        out.append(f"{hashes} {session['name']}\n")
        about = [f"Workspace: `{session['workspace']}`"]
        if session.get("profile"):
            about.append(f"profile {session['profile']}")
        if session.get("model"):
            about.append(f"model {session['model']}")
        out.append(" · ".join(about) + "\n")
        calls: dict[str, Mapping[str, Any]] = {}
        for entry in session["history"]:
            kind = entry["kind"]
            if kind in WHO:
                text = entry["content"].strip()
                cut = " *(cut off: cancelled)*" if entry["data"].get("partial") else ""
                out.append(f"**{WHO[kind]}:**\n\n{text}{cut}\n")
                shown = [_image_words(ref) for ref in refs_of(entry["data"])]
                if shown:  # the bytes are in the JSON export only
                    out.append("*Attached images: " + ", ".join(shown) + "*\n")
            elif kind == "tool_call":
                calls[entry.get("call_id") or ""] = entry
            elif kind == "tool_result":
                call = calls.get(entry.get("call_id") or "", {})
                out.append(_tool_markdown(entry, call))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _image_words(ref: Mapping[str, Any]) -> str:
    size = f", {ref['width']}×{ref['height']}" if ref.get("width") and ref.get("height") else ""
    return f"🖼 {ref.get('name') or 'image'} ({ref.get('media_type') or 'image'}{size})"


def _tool_markdown(result: Mapping[str, Any], call: Mapping[str, Any]) -> str:
    name = result.get("tool_name") or call.get("tool_name") or "tool"
    try:
        arguments = json.loads(call.get("content") or "{}")
    except json.JSONDecodeError:
        arguments = {}
    target = arguments.get("command") if isinstance(arguments, dict) else None
    head = f"`$ {target}`" if target else f"`{name}`"
    ok = result["data"].get("ok")
    mark = "✓" if ok else ("⊘ denied" if result["data"].get("denied") else "✗")
    output = result["content"].strip()
    lines = output.splitlines()
    shown = "\n".join(lines[:20]) + (
        f"\n… ({len(lines) - 20} more lines)" if len(lines) > 20 else ""
    )
    fence = "````" if "```" in shown else "```"
    body = f"\n{fence}\n{shown}\n{fence}\n" if shown else "\n"
    return f"> {mark} {head}\n{body}"
