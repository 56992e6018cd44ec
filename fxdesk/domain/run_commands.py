"""The person's own commands for a workspace: "dev server", "tests --watch", started from the
window or the command line and tracked like the agent's background tasks (issue 12, item 7).

Kept per workspace in the store's settings (``workspace.<id>.run_commands``), in the order the
person gave them. A name is how the person picks one (``fxdesk run NAME``), so names are unique
within a workspace, whatever their case.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_NAME_CHARS = 60
MAX_COMMAND_CHARS = 4000


class RunCommandError(ValueError):
    """A run command that cannot be saved, with what is wrong with it.

    Attributes:
        field: The field the message is about ("name", "command" or "folder"), so an editor
            can show it there.
        index: The command's position in what ``checked`` was given (None from ``make``).
    """

    def __init__(self, message: str, field: str, index: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.index = index


@dataclass(frozen=True)
class RunCommand:
    """One saved command.

    Attributes:
        name: What the person calls it ("dev server"): one line, unique in the workspace.
        command: The bash line it runs.
        folder: Where it starts, relative to the workspace ("" for the workspace itself).
        expect_url: It is a server: its URL is looked for in its output.
        durable: It keeps running when fxdesk quits (found again at the next start); otherwise
            it is stopped at quit.
    """

    name: str
    command: str
    folder: str = ""
    expect_url: bool = False
    durable: bool = False

    @classmethod
    def make(
        cls,
        name: str,
        command: str,
        folder: str = "",
        *,
        expect_url: bool = False,
        durable: bool = False,
    ) -> RunCommand:
        """A checked command: a name of one line, a command that is not blank, a folder inside
        the workspace.

        Raises:
            RunCommandError: naming what is wrong.
        """
        name = " ".join(name.split())
        if not name:
            raise RunCommandError("a run command needs a name, e.g. 'dev server'", "name")
        if len(name) > MAX_NAME_CHARS:
            raise RunCommandError(
                f"the name {name[:20]!r}… is longer than {MAX_NAME_CHARS} characters", "name"
            )
        if not command.strip():
            raise RunCommandError(f"{name!r} has no command to run", "command")
        if "\0" in command:
            raise RunCommandError(f"the command of {name!r} contains a NUL character", "command")
        if len(command) > MAX_COMMAND_CHARS:
            raise RunCommandError(
                f"the command of {name!r} is longer than {MAX_COMMAND_CHARS} characters",
                "command",
            )
        return cls(name, command.strip(), _folder(name, folder), bool(expect_url), bool(durable))

    def to_value(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "command": self.command,
            "folder": self.folder,
            "expect_url": self.expect_url,
            "durable": self.durable,
        }


def _folder(name: str, raw: str) -> str:
    folder = raw.strip()
    if not folder or folder == ".":
        return ""
    if folder.startswith(("/", "~")):
        raise RunCommandError(
            f"the folder of {name!r} must be inside the workspace, relative to it (not {folder!r})",
            "folder",
        )
    normal = posixpath.normpath(folder)
    if normal == ".." or normal.startswith("../"):
        raise RunCommandError(
            f"the folder of {name!r} ({folder!r}) leads out of the workspace", "folder"
        )
    return "" if normal == "." else normal


def checked(commands: Iterable[RunCommand]) -> tuple[RunCommand, ...]:
    """``commands`` with each checked again and names unique (case-insensitive).

    Raises:
        RunCommandError: the first problem, naming the command (its ``index`` is the position
            of the command at fault: the second of two with one name).
    """
    seen: set[str] = set()
    result: list[RunCommand] = []
    for index, given in enumerate(commands):
        try:
            command = RunCommand.make(
                given.name,
                given.command,
                given.folder,
                expect_url=given.expect_url,
                durable=given.durable,
            )
        except RunCommandError as exc:
            exc.index = index
            raise
        key = command.name.casefold()
        if key in seen:
            raise RunCommandError(f"two run commands are named {command.name!r}", "name", index)
        seen.add(key)
        result.append(command)
    return tuple(result)


def from_value(value: Any) -> tuple[RunCommand, ...]:
    """Commands as the store keeps them (a JSON list). An entry that is damaged or repeats a
    name is left out, so one bad entry never hides the others."""
    if not isinstance(value, list):
        return ()
    result: list[RunCommand] = []
    seen: set[str] = set()
    for entry in value:
        if not isinstance(entry, dict):
            continue
        name, command, folder = entry.get("name"), entry.get("command"), entry.get("folder", "")
        if not (isinstance(name, str) and isinstance(command, str) and isinstance(folder, str)):
            continue
        try:
            item = RunCommand.make(
                name,
                command,
                folder,
                expect_url=entry.get("expect_url") is True,
                durable=entry.get("durable") is True,
            )
        except RunCommandError:
            continue
        if item.name.casefold() not in seen:
            seen.add(item.name.casefold())
            result.append(item)
    return tuple(result)


def to_value(commands: Iterable[RunCommand]) -> list[dict[str, Any]]:
    return [command.to_value() for command in commands]


def find(commands: Iterable[RunCommand], name: str) -> RunCommand | None:
    """The command called ``name`` (case and spacing as typed do not matter)."""
    wanted = " ".join(name.split()).casefold()
    return next((c for c in commands if c.name.casefold() == wanted), None)


def setting_key(workspace_id: int) -> str:
    """The store setting that holds one workspace's run commands."""
    return f"workspace.{workspace_id}.run_commands"
