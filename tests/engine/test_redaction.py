"""A registered key an agent's command (or file tool) prints never reaches the model or the
transcript: end to end through the engine, real ``bash`` children, the real store.

Each case runs one scripted turn and looks for the key, with the tests' own detector
(``tests/leaks.py``: any 12-character piece, URL or base64 at any alignment), in every place it
could surface: the history rows, every request the model received, every event the engine
published (streamed text and approvals included), the approvals' previews, and the bytes of
the database file once it is closed. ``test_without_redaction_*`` plants the hole (the
redaction at the recording point switched off) and shows the same cases then expose the key:
what each case checks is real.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fxdesk import logs
from fxdesk.domain.approvals import Choice
from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.engine import call_facts, turn_tools
from fxdesk.engine.owner import Result
from fxdesk.providers.scripted import Reply
from fxdesk.store import approvals as approvals_store
from fxdesk.store import history
from fxdesk.tools.base import MODEL_OUTPUT_CAP, ToolRegistry
from fxdesk.tools.registry import all_tools
from fxdesk.tools.shell import CHUNK_BYTES
from tests.engine.harness import Engine, call, say
from tests.leaks import exposed, make_key

KEY_FILE = "key.txt"
VARIABLE = "FXTEST_TOKEN"
CAPTURE_LIMIT = 3 * CHUNK_BYTES  # the command's capture limit for these runs (64 MiB in use)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh key, registered as fxdesk registers an API key in use, and also in this
    process's environment (what a profile reading it from a variable looks like)."""
    monkeypatch.setattr(logs, "_SECRETS", set())
    monkeypatch.setattr(logs, "_NEEDLES", ())
    value = make_key()
    logs.register_secret(value)
    monkeypatch.setenv(VARIABLE, value)
    yield value


def pad(count: int, char: str = "x") -> str:
    """A command printing ``count`` bytes of ``char``."""
    return f"head -c {count} /dev/zero | tr '\\0' {char}"


HALF = 20  # characters of the 40-character key on each side of a boundary
# The system's python3, not this venv's: the command runs in the sandbox, where a checkout under
# /tmp (CI's may be) is out of sight behind the private /tmp.
QUOTE = (
    "python3 -c 'import urllib.parse; "
    f'print(urllib.parse.quote(open("{KEY_FILE}").read(), safe=""))\''
)


@dataclass(frozen=True)
class Case:
    name: str
    command: str
    # What keeps the key out: "redaction" alone, or the command's environment first (fxdesk
    # passes no variable holding a key), with the redaction behind it.
    layer: str = "redaction"


CASES = [
    Case("cat of a file", f"cat {KEY_FILE}"),
    Case("echo", f'echo "the key is $(< {KEY_FILE})"'),
    Case("printenv of a variable set to it", f'export T="$(cat {KEY_FILE})"; printenv T'),
    Case(
        "echo and printenv of fxdesk's variable",
        f'echo "${VARIABLE}"; printenv {VARIABLE}',
        "environment",
    ),
    Case("env of fxdesk's variable", f"env | grep {VARIABLE} || true", "environment"),
    Case("base64", f"base64 -w0 {KEY_FILE}"),
    Case("base64 URL-safe", f"base64 -w0 {KEY_FILE} | tr '+/' '-_'"),
    Case("HTTP basic auth header", f'printf "me:%s" "$(cat {KEY_FILE})" | base64 -w0'),
    Case("URL-encoded", QUOTE),
    Case("on stderr", f"cat {KEY_FILE} >&2; exit 3"),
    # The output is read in chunks of CHUNK_BYTES: the key straddles chunk boundaries (wherever
    # the pipe's reads fall, the text is whole before it is redacted).
    *(
        Case(
            f"across chunk boundary {n}",
            f"{pad(n * CHUNK_BYTES - HALF)}; cat {KEY_FILE}; {pad(1000)}",
        )
        for n in (1, 2)
    ),
    # Longer than the model's cap: the model gets the start and the end, the key cut by either.
    Case(
        "across the model's head cut",
        f"{pad(MODEL_OUTPUT_CAP // 2 - HALF)}; cat {KEY_FILE}; {pad(3 * MODEL_OUTPUT_CAP)}",
    ),
    Case(
        "across the model's tail cut",
        # 14: the line end and "[exit code 0]" after the last pad.
        f"{pad(3 * MODEL_OUTPUT_CAP)}; cat {KEY_FILE}; "
        f"{pad(MODEL_OUTPUT_CAP // 4 - HALF - 14, 'y')}; echo",
    ),
    # Longer than what is captured at all: the kept part ends inside the key.
    Case("across the capture limit", f"{pad(CAPTURE_LIMIT - HALF)}; cat {KEY_FILE}; {pad(1000)}"),
]


@dataclass
class Seen:
    """Everything a run left where the key must not be, by place."""

    texts: dict[str, str]
    tool_outputs: list[str]

    def exposures(self, key: str) -> dict[str, list[str]]:
        return {where: found for where, text in self.texts.items() if (found := exposed(text, key))}


async def run_agent(
    tmp_path: Path,
    key: str,
    steps: list[Reply],
    *,
    mode: PermissionMode = PermissionMode.YOLO,
    approve: int = 0,
) -> Seen:
    """One turn of a scripted agent in a workspace holding ``key.txt`` and a ``.env`` with the
    key; ``approve`` approvals are allowed once as they come."""
    registry = ToolRegistry(all_tools())
    command = registry.get("run_command")
    assert command is not None
    command.capture_limit = CAPTURE_LIMIT  # type: ignore[attr-defined]
    engine = await Engine.create(tmp_path / "data", steps, permissions=True, tools=registry)
    texts: dict[str, str] = {}
    outputs: list[str] = []
    try:
        (engine.workspace / KEY_FILE).write_text(key)
        (engine.workspace / ".env").write_text(f"NAME=demo\nAPI_KEY={key}\n")
        created = await engine.sessions.create_root(
            engine.workspace, name="leak", permission_mode=mode, first_message="go"
        )
        engine.owner.start(created.id)
        assert engine.permissions is not None
        for _ in range(approve):
            found = await pending(engine)
            await engine.permissions.resolve(found.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(created.id), 60) == Result.IDLE
        rows = await engine.store.read(lambda: history.page_history(created.id, 0, 10_000))
        outputs = [row.content for row in rows if row.kind is EntryKind.TOOL_RESULT]
        texts["history"] = "\n".join(
            f"{row.content}\n{row.full_text}\n{json.dumps(row.data)}" for row in rows
        )
        texts["model requests"] = "\n".join(repr(request) for request in engine.provider.requests)
        texts["events"] = "\n".join(repr(event) for event in engine.events)
        approvals = await engine.store.read(lambda: approvals_store.approvals_of(created.id))
        texts["approvals"] = "\n".join(json.dumps(a.detail) for a in approvals)
    finally:
        await engine.close()
    database = tmp_path / "data" / "fxdesk.sqlite3"
    texts["database"] = "".join(
        path.read_bytes().decode("latin-1")
        for path in (database, database.with_name(database.name + "-wal"))
        if path.exists()
    )
    return Seen(texts, outputs)


async def pending(engine: Engine) -> object:
    assert engine.permissions is not None
    for _ in range(2000):
        found = await engine.permissions.pending()
        if found:
            return found[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no approval was raised")


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_a_key_a_command_prints_reaches_neither_the_model_nor_the_transcript(
    tmp_path: Path, key: str, case: Case
) -> None:
    seen = await run_agent(tmp_path, key, [call("run_command", command=case.command), say("done")])
    assert seen.exposures(key) == {}
    (output,) = seen.tool_outputs
    assert "[exit code" in output  # the command ran to its end
    if case.layer == "redaction":
        assert logs.REDACTED in output


@pytest.mark.parametrize(
    "step",
    [
        call("read_file", path=KEY_FILE),
        call("read_file", path=".env"),
        call("grep", pattern="API_KEY"),
        call("grep", pattern="fx", path=KEY_FILE),
    ],
    ids=lambda step: f"{step.tool_calls[0].name} {step.tool_calls[0].arguments}",
)
async def test_a_key_a_file_tool_reads_reaches_neither_the_model_nor_the_transcript(
    tmp_path: Path, key: str, step: Reply
) -> None:
    seen = await run_agent(tmp_path, key, [step, say("done")])
    assert seen.exposures(key) == {}
    (output,) = seen.tool_outputs
    assert logs.REDACTED in output


@pytest.mark.parametrize(
    "step",
    [
        call("write_file", path=".env", content="NAME=demo\n"),
        call("edit_file", path=".env", old_text="NAME=demo\nAPI_KEY=", new_text="OLD_KEY="),
    ],
    ids=lambda step: step.tool_calls[0].name,
)
async def test_the_approval_preview_of_a_file_holding_the_key_is_redacted(
    tmp_path: Path, key: str, step: Reply
) -> None:
    """In ask mode the person sees the tool's diff before it runs; the diff shows the line
    with the key (removed, or kept around the edit)."""
    seen = await run_agent(tmp_path, key, [step, say("done")], mode=PermissionMode.ASK, approve=1)
    assert seen.exposures(key) == {}
    assert logs.REDACTED in seen.texts["approvals"]  # the preview showed that line, masked
    assert "-API_KEY=[redacted]" in seen.texts["approvals"]


REDACTION_CASES = [case for case in CASES if case.layer == "redaction"]


@pytest.mark.parametrize("case", REDACTION_CASES, ids=lambda case: case.name)
async def test_without_redaction_the_same_commands_expose_the_key(
    tmp_path: Path, key: str, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planted hole: the recording point passes results through unredacted. Each case
    then exposes the key in the history, the model's requests and the database file: so the
    test above can fail, and each case really prints (a piece of) the key."""
    monkeypatch.setattr(turn_tools, "redacted", lambda result: result)
    seen = await run_agent(tmp_path, key, [call("run_command", command=case.command), say("done")])
    assert {"history", "model requests", "database"} <= set(seen.exposures(key))


async def test_without_redaction_the_approval_preview_exposes_the_key(
    tmp_path: Path, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(call_facts, "redact", lambda text: text)
    step = call("write_file", path=".env", content="NAME=demo\n")
    seen = await run_agent(tmp_path, key, [step, say("done")], mode=PermissionMode.ASK, approve=1)
    assert "approvals" in seen.exposures(key)
