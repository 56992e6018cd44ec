"""Data folders and databases for the benchmarks, written straight through the store.

``sessions(root, n)`` fills a data folder with ``n`` idle root sessions (every second one with a
sub-agent child) spread over a few workspaces, as a person's catalog after months of use.
``transcript(root, n)`` adds one session holding ``n`` history entries (user and assistant
messages, tool calls and results).
"""

from __future__ import annotations

from pathlib import Path

from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind, PermissionMode, SessionMode
from fxdesk.paths import DataPaths
from fxdesk.store import Store, history, repo

WORKSPACES = 5
ANSWER = (
    "The tokenizer reads **one line at a time** and hands `Token` objects to the parser, "
    "which keeps a small stack of open blocks.\n\n- read the header\n- keep *offsets*\n\n"
    "```python\ndef parse(lines):\n    return [step(line) for line in lines]\n```\n"
)


def data_paths(root: Path) -> DataPaths:
    paths = DataPaths(root, "bench")
    paths.ensure()
    return paths


def sessions(root: Path, count: int, *, children: bool = True, child_every: int = 2) -> list[str]:
    """``count`` root sessions (and a child for every ``child_every``-th one); returns the root
    ids."""
    paths = data_paths(root)
    store = Store.open(paths.database)
    folders = []
    for n in range(WORKSPACES):
        folder = root / f"workspace{n}"
        folder.mkdir(exist_ok=True)
        folders.append(folder)

    def job() -> list[str]:
        ids = []
        spaces = [repo.ensure_workspace(str(folder), folder.name, 0)[0] for folder in folders]
        for n in range(count):
            root_session = repo.create_session(
                session_id=f"s{n:06d}",
                workspace=spaces[n % WORKSPACES],
                name=f"Session {n + 1}",
                mode=SessionMode.PERSISTENT,
                permission_mode=PermissionMode.AUTO,
                at_ms=1_700_000_000_000 + n,
            )
            ids.append(root_session.id)
            if children and n % child_every == 0:
                repo.create_session(
                    session_id=f"c{n:06d}",
                    workspace=spaces[n % WORKSPACES],
                    name=f"Helper {n + 1}",
                    mode=SessionMode.PERSISTENT,
                    permission_mode=PermissionMode.AUTO,
                    at_ms=1_700_000_000_000 + n,
                    parent=root_session,
                )
        return ids

    try:
        return list(store.write_blocking(job, label="bench sessions"))
    finally:
        store.close()


def transcript(root: Path, count: int, session_id: str = "s000000") -> None:
    """Append ``count`` history entries to ``session_id`` (which must exist)."""
    paths = data_paths(root)
    store = Store.open(paths.database)
    kinds = [EntryKind.USER, EntryKind.ASSISTANT, EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT]

    def job() -> None:
        batch = []
        for n in range(count):
            kind = kinds[n % len(kinds)]
            content = {
                EntryKind.USER: f"Message {n}: make the parser report line and column.",
                EntryKind.ASSISTANT: ANSWER,
                EntryKind.TOOL_CALL: "",
                EntryKind.TOOL_RESULT: "src/parser.py:10: def parse(lines):\n" * 5,
            }[kind]
            data: dict[str, object] = {}
            call_id = None
            if kind in (EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT):
                call_id = f"call{n // 2}"
            if kind is EntryKind.TOOL_CALL:
                data = {"arguments": {"pattern": "def parse", "path": "src"}}
            batch.append(
                HistoryEntry(
                    session_id=session_id,
                    seq=0,
                    kind=kind,
                    call_id=call_id,
                    tool_name="search" if call_id else None,
                    content=content,
                    data=data,
                    created_at_ms=1_700_000_000_000 + n,
                )
            )
            if len(batch) == 1000:
                history.append_history(session_id, batch)
                batch = []
        if batch:
            history.append_history(session_id, batch)

    try:
        store.write_blocking(job, label="bench transcript")
    finally:
        store.close()


def big_answer(size: int) -> str:
    """A Markdown answer of about ``size`` characters: headings, prose, lists, code blocks."""
    part = (
        "## Step {n}: the parser\n\n"
        "The tokenizer reads **one line at a time** and hands `Token` objects to the parser, "
        "which keeps a small stack of open blocks. Nothing is copied twice.\n\n"
        "- read the header, then the body\n"
        "- keep *offsets*, not slices\n\n"
        "```python\n"
        "def parse(lines: list[str]) -> list[Block]:\n"
        "    return close([step(line, n) for n, line in enumerate(lines, 1)])\n"
        "```\n\n"
    )
    pieces, total, n = [], 0, 1
    while total < size:
        piece = part.format(n=n)
        pieces.append(piece)
        total += len(piece)
        n += 1
    return "".join(pieces)


def command_output(lines: int) -> str:
    """``lines`` lines of a build's output."""
    return "".join(
        f"[build] compiled module {n} of {lines} in 3 ms (src/components/Widget{n % 97}.tsx)\n"
        for n in range(lines)
    )


def big_rows(root: Path, answer: str, output: str) -> None:
    """Session ``s000000`` gets one question and ``answer``; ``s000001`` one command whose
    result is ``output`` (the model saw its last 16 KiB, as a command's result is cut; the
    whole of it is the entry's full text). Both sessions must exist."""
    paths = data_paths(root)
    store = Store.open(paths.database)
    at = 1_700_000_000_000

    def job() -> None:
        history.append_history(
            "s000000",
            [
                HistoryEntry("s000000", 0, EntryKind.USER, content="Write it all out.", data={}),
                HistoryEntry("s000000", 0, EntryKind.ASSISTANT, content=answer, data={}),
            ],
        )
        history.append_history(
            "s000001",
            [
                HistoryEntry("s000001", 0, EntryKind.USER, content="Build it.", data={}),
                HistoryEntry(
                    "s000001",
                    0,
                    EntryKind.TOOL_CALL,
                    call_id="call0",
                    tool_name="run_command",
                    content='{"command": "npm run build"}',
                    data={},
                    created_at_ms=at,
                ),
                HistoryEntry(
                    "s000001",
                    0,
                    EntryKind.TOOL_RESULT,
                    call_id="call0",
                    tool_name="run_command",
                    content="[… cut: the first part of the output …]\n" + output[-16 * 1024 :],
                    full_text=output,
                    data={"ok": True, "duration_ms": 4200},
                    created_at_ms=at + 4200,
                ),
                HistoryEntry("s000001", 0, EntryKind.ASSISTANT, content="It builds.", data={}),
            ],
        )

    try:
        store.write_blocking(job, label="bench big rows")
    finally:
        store.close()
