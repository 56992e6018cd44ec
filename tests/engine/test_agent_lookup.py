"""Finding named agents in real folders: lookup order, built-ins, broken files, the hash."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import platformdirs
import pytest

from fxdesk.app import App
from fxdesk.domain.agent_definitions import DefinitionFormat, DefinitionOrigin
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.agent_lookup import (
    EXPLORER,
    MAX_FILE_BYTES,
    agent_folders,
    built_in_entries,
    claude_user_folder,
    find,
    lookup,
    tool_names,
)
from fxdesk.engine.facade import BrokenAgent, Engine, InvalidWorkspace, UnknownAgent
from fxdesk.paths import DataPaths
from fxdesk.tools.base import ToolAccess
from fxdesk.tools.registry import all_tools


def fxdesk_file(description: str, agent_id: str | None = None, extra: str = "") -> str:
    head = f"id: {agent_id}\n" if agent_id else ""
    return f"---\n{head}description: {description}\n{extra}---\nPrompt of {description}.\n"


def claude_file(name: str, description: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\nClaude prompt.\n"


class Place:
    """A workspace, a user folder and a Claude Code user folder, all real and empty."""

    def __init__(self, root: Path) -> None:
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.user = root / "config" / "agents"
        self.claude_user = root / "claude-home" / "agents"

    def write(self, folder: Path, name: str, text: str | bytes) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    @property
    def ws_fxdesk(self) -> Path:
        return self.workspace / ".fxdesk" / "agents"

    @property
    def ws_claude(self) -> Path:
        return self.workspace / ".claude" / "agents"

    def entries(self) -> list:  # type: ignore[type-arg]
        return lookup(agent_folders(self.workspace, self.user, self.claude_user))


@pytest.fixture
def place(tmp_path: Path) -> Place:
    return Place(tmp_path)


def test_with_no_files_the_built_ins_are_there(place: Place) -> None:
    entries = place.entries()
    assert [(e.id, e.origin, e.path) for e in entries] == [
        ("explorer", DefinitionOrigin.BUILT_IN, None),
        ("general", DefinitionOrigin.BUILT_IN, None),
    ]
    general = find(entries, "general")
    assert general is not None and general.definition is not None
    assert general.definition.tools is None and general.definition.permission_mode is None
    assert general.definition.source == "built-in:general"


def test_the_explorer_has_only_real_read_tools() -> None:
    explorer = find(built_in_entries(tool_names()), "explorer")
    assert explorer is not None and explorer.definition is not None
    tools = {t.name: t for t in all_tools()}
    assert explorer.definition.tools == ("read_file", "list_dir", "glob", "grep")
    assert all(tools[name].facts.access is ToolAccess.READ for name in explorer.definition.tools)
    assert explorer.definition.permission_mode is PermissionMode.ASK
    assert explorer.definition.hash == hashlib.sha256(EXPLORER.encode()).hexdigest()


def test_lookup_order_workspace_then_claude_then_user_then_claude_user_then_built_in(
    place: Place,
) -> None:
    files = [
        place.write(place.ws_fxdesk, "explorer.md", fxdesk_file("workspace")),
        place.write(place.ws_claude, "explorer.md", claude_file("explorer", "workspace claude")),
        place.write(place.user, "explorer.md", fxdesk_file("user")),
        place.write(place.claude_user, "explorer.md", claude_file("explorer", "user claude")),
    ]
    expected = [
        ("workspace", DefinitionOrigin.WORKSPACE, DefinitionFormat.FXDESK),
        ("workspace claude", DefinitionOrigin.CLAUDE, DefinitionFormat.CLAUDE),
        ("user", DefinitionOrigin.USER, DefinitionFormat.FXDESK),
        ("user claude", DefinitionOrigin.CLAUDE, DefinitionFormat.CLAUDE),
        ("A read-only explorer", DefinitionOrigin.BUILT_IN, DefinitionFormat.FXDESK),
    ]
    for index, (description, origin, fmt) in enumerate(expected):
        entry = find(place.entries(), "explorer")
        assert entry is not None and entry.definition is not None
        assert entry.definition.description.startswith(description)
        assert (entry.origin, entry.definition.format) == (origin, fmt)
        hidden = [str(p) for p in files[index + 1 :]] + ["built-in:explorer"]
        assert entry.overrides == tuple(hidden[: len(expected) - index - 1])
        if index < len(files):
            files[index].unlink()


def test_files_are_named_in_messages_relative_to_where_they_are(place: Place) -> None:
    place.write(place.ws_fxdesk, "a.md", fxdesk_file("a"))
    place.write(place.ws_claude, "b.md", claude_file("b", "b"))
    entries = {e.id: e for e in place.entries()}
    assert entries["a"].definition is not None and entries["b"].definition is not None
    assert entries["a"].definition.source == ".fxdesk/agents/a.md"
    assert entries["b"].definition.source == ".claude/agents/b.md"


def test_a_broken_file_is_listed_with_its_error_and_hides_no_other_agent(place: Place) -> None:
    place.write(place.ws_fxdesk, "good.md", fxdesk_file("good"))
    place.write(
        place.ws_fxdesk,
        "bad.md",
        "---\ndescription: d\ntools: [read_file]\npermission_mode: x\n---\n",
    )
    place.write(place.ws_fxdesk, "typo.md", fxdesk_file("typo", extra="tools: [raed_file]\n"))
    place.write(place.ws_fxdesk, "notes.txt", "not an agent")
    (place.ws_fxdesk / "folder.md").mkdir()
    entries = {e.id: e for e in place.entries()}
    assert set(entries) == {"bad", "good", "typo", "explorer", "general"}
    assert entries["good"].definition is not None
    assert entries["bad"].broken and entries["bad"].error == (
        ".fxdesk/agents/bad.md line 4: permission_mode: 'x' is not one of ask, auto, yolo"
    )
    assert entries["typo"].error is not None
    assert "line 3: tools: 'raed_file' is not a tool" in entries["typo"].error


def test_a_broken_workspace_file_keeps_its_id_from_a_user_agent(place: Place) -> None:
    place.write(place.ws_fxdesk, "helper.md", "---\ndescription: [\n---\n")
    user = place.write(place.user, "helper.md", fxdesk_file("user helper"))
    entries = place.entries()
    first = find(entries, "helper")
    assert first is not None and first.broken and first.overrides == (str(user),)


def test_a_broken_file_that_is_overridden_is_still_listed(place: Place) -> None:
    place.write(place.ws_fxdesk, "helper.md", fxdesk_file("workspace helper"))
    place.write(place.user, "helper.md", "no front matter")
    helpers = [e for e in place.entries() if e.id == "helper"]
    assert [e.broken for e in helpers] == [False, True]


def test_two_files_of_one_id_in_a_folder_the_second_is_broken(place: Place) -> None:
    place.write(place.ws_fxdesk, "a.md", fxdesk_file("first", agent_id="same"))
    place.write(place.ws_fxdesk, "b.md", fxdesk_file("second", agent_id="same"))
    same = [e for e in place.entries() if e.id == "same"]
    assert [e.broken for e in same] == [False, True]
    assert same[1].error == ".fxdesk/agents/b.md: id 'same' is already defined by a.md"


def test_a_file_too_large_is_broken_not_read(place: Place) -> None:
    place.write(place.ws_fxdesk, "big.md", fxdesk_file("big") + "x" * MAX_FILE_BYTES)
    big = find(place.entries(), "big")
    assert big is not None and big.error is not None and "larger than 256 KiB" in big.error


def test_claude_code_user_folder_comes_from_its_variable_or_home(tmp_path: Path) -> None:
    assert claude_user_folder({"CLAUDE_CONFIG_DIR": str(tmp_path)}) == tmp_path / "agents"
    assert claude_user_folder({}) == Path.home() / ".claude" / "agents"


def test_the_user_folder_is_the_platform_config_or_the_moved_data_folder(tmp_path: Path) -> None:
    assert DataPaths(tmp_path, "FXDESK_HOME").user_agents == tmp_path / "agents"
    platform = DataPaths(tmp_path, "platform").user_agents
    assert platform == Path(platformdirs.user_config_dir("fxdesk", appauthor=False)) / "agents"


# --- through the engine facade ----------------------------------------------------------------


@pytest.fixture
async def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Engine]:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    app = App(DataPaths(tmp_path / "data", "test"))
    await app.start_store_only()
    try:
        yield app.engine
    finally:
        await app.stop()


async def test_the_facade_reads_the_users_folder_of_the_data_paths(
    engine: Engine, tmp_path: Path, place: Place
) -> None:
    place.write(tmp_path / "data" / "agents", "mine.md", fxdesk_file("mine"))
    place.write(tmp_path / "claude-home" / "agents", "cc.md", claude_file("cc", "from claude"))
    entries = await engine.agent_definitions(place.workspace)
    assert {e.id: e.origin for e in entries} == {
        "cc": DefinitionOrigin.CLAUDE,
        "explorer": DefinitionOrigin.BUILT_IN,
        "general": DefinitionOrigin.BUILT_IN,
        "mine": DefinitionOrigin.USER,
    }


async def test_the_hash_follows_the_file(engine: Engine, place: Place) -> None:
    path = place.write(place.ws_fxdesk, "r.md", fxdesk_file("researcher"))
    before = await engine.agent_definition(place.workspace, "r")
    assert before.hash == hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text(fxdesk_file("researcher, changed"))
    after = await engine.agent_definition(place.workspace, "r")
    assert after.hash == hashlib.sha256(path.read_bytes()).hexdigest() != before.hash


async def test_unknown_broken_and_bad_workspaces_are_refused(engine: Engine, place: Place) -> None:
    place.write(place.ws_fxdesk, "bad.md", "---\ndescription: d\neffort: max\n---\n")
    with pytest.raises(UnknownAgent, match=r"no agent 'nope' \(known: bad, explorer, general\)"):
        await engine.agent_definition(place.workspace, "nope")
    with pytest.raises(BrokenAgent, match=r"bad\.md line 3: effort: 'max' is not one of"):
        await engine.agent_definition(place.workspace, "bad")
    with pytest.raises(InvalidWorkspace):
        await engine.agent_definitions(place.workspace / "missing")
