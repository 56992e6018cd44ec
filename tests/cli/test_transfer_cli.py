"""``fxdesk export`` and ``fxdesk import`` in real processes (issue 18 item 5): a tree round-trips
(names, messages, tool calls and results, the parent link), an import makes new sessions and
never overwrites (twice gives two copies), the imported session can go on, an API key never
leaves in an export (a profile's key pasted into a message is masked, in JSON and Markdown), and
a file that cannot be imported says why and writes nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fxdesk.app import App
from fxdesk.paths import DataPaths
from tests.cli.test_profiles import CLI

SECRET = "sk-test-EXPORT-4b1d77e0-never-leaves"


async def add_child(paths: DataPaths, parent_id: str, name: str) -> None:
    app = App(paths)
    await app.start(background=False)
    try:
        await app.sessions.create_child(parent_id, name=name)
    finally:
        await app.stop()


def sessions(cli: CLI) -> list[dict[str, Any]]:
    done = cli("sessions", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_tree_round_trips_as_new_sessions_and_keys_never_leave(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "responses": [
                    {
                        "text": "Listing.",
                        "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}],
                    },
                    {"text": "The folder holds notes.md."},
                ]
            }
        )
    )
    (cli.workspace / "notes.md").write_text("notes\n")
    keyed = cli("profiles", "add", "work", "--kind", "openai", "--model", "m", "--api-key-stdin",
                stdin=SECRET + "\n")  # fmt: skip
    assert keyed.returncode == 0, keyed.stderr
    demo = cli("profiles", "add", "demo", "--kind", "scripted", "--script", str(script),
               "--default")  # fmt: skip
    assert demo.returncode == 0, demo.stderr
    ran = cli("run", "-w", str(cli.workspace), f"What is here? (my key is {SECRET}, oops)")
    assert ran.returncode == 0, ran.stderr
    (root,) = sessions(cli)
    asyncio.run(add_child(DataPaths(cli.data, "--data-dir"), root["id"], "Helper"))

    exported = cli("export", root["id"][:8], "--tree")
    assert exported.returncode == 0, exported.stderr
    document = json.loads(exported.stdout)
    assert SECRET not in exported.stdout and SECRET[:12] not in exported.stdout
    assert [s["name"] for s in document["sessions"]][1:] == ["Helper"]
    top = document["sessions"][0]
    assert [e["kind"] for e in top["history"]] == [
        "user", "assistant", "tool_call", "tool_result", "assistant", "turn_end",
    ]  # fmt: skip
    assert "[redacted]" in top["history"][0]["content"]
    assert "notes.md" in top["history"][3]["content"]
    assert "work" not in json.dumps([s["profile"] for s in document["sessions"]])
    path = tmp_path / "tree.json"
    path.write_text(exported.stdout)

    markdown = cli("export", root["id"], "--tree", "--markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert SECRET not in markdown.stdout
    assert "**You:**" in markdown.stdout and "**Agent:**" in markdown.stdout
    assert "The folder holds notes.md." in markdown.stdout and "## Helper" in markdown.stdout

    for _ in range(2):  # twice: two copies, nothing overwritten
        imported = cli("import", str(path))
        assert imported.returncode == 0, imported.stderr
        assert len(imported.stdout.splitlines()) == 2
    listed = sessions(cli)
    assert len(listed) == 6
    assert sorted(s["name"] for s in listed).count("Helper") == 3
    copies = [s for s in listed if s["id"] != root["id"] and s["name"] != "Helper"]
    assert len(copies) == 2
    assert SECRET[:12] in root["name"]  # named after the message the key was pasted into…
    assert all(SECRET[:12] not in c["name"] for c in copies)  # …masked in the copies
    shown = json.loads(cli("show", copies[0]["id"], "--json").stdout)
    assert [e["kind"] for e in shown["transcript"]] == [e["kind"] for e in top["history"]]
    assert [e["content"] for e in shown["transcript"]] == [e["content"] for e in top["history"]]
    original = json.loads(cli("show", root["id"], "--json").stdout)
    assert SECRET in original["transcript"][0]["content"]  # the original is untouched

    # The copy goes on: its next turn reads the imported conversation back.
    script.write_text(json.dumps({"responses": [{"text": "Still notes.md."}],
                                  "record_to": str(tmp_path / "asked.jsonl")}))  # fmt: skip
    went_on = cli("send", copies[0]["id"], "And now?")
    assert went_on.returncode == 0, went_on.stderr
    asked = json.loads((tmp_path / "asked.jsonl").read_text().splitlines()[-1])
    # The imported turn (message, call, result, answer) and the new message.
    assert asked["messages"] == 5 and asked["last_role"] == "user"


def test_a_file_that_cannot_be_imported_says_why_and_writes_nothing(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    cli("profiles", "add", "demo", "--kind", "scripted", "--default")
    cases = {
        "not.json": ("{ nope", "not JSON"),
        "other.json": (json.dumps({"format": "something-else"}), "not an fxdesk export"),
        "newer.json": (
            json.dumps({"format": "fxdesk-export", "version": 99, "sessions": []}),
            "newer format (99",
        ),
        "typed.json": (
            json.dumps(
                {
                    "format": "fxdesk-export",
                    "version": 1,
                    "sessions": [{"id": "x", "parent_id": None, "name": 5}],
                }
            ),
            "session 1",
        ),
    }
    for name, (text, says) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        done = cli("import", str(path))
        assert done.returncode == 2, (name, done.stdout)
        assert says in done.stderr, (name, done.stderr)
    missing = cli("import", str(tmp_path / "absent.json"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert sessions(cli) == []
