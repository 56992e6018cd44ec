"""The person's saved run commands: what can be saved, and how a damaged setting reads back."""

from __future__ import annotations

import pytest

from fxdesk.domain import run_commands
from fxdesk.domain.run_commands import RunCommand, RunCommandError, checked, find, from_value


def test_a_command_is_kept_as_given_with_its_name_on_one_line() -> None:
    command = RunCommand.make("  dev\n server ", " npm run dev \n", "web/", expect_url=True)
    assert command == RunCommand("dev server", "npm run dev", "web", True, False)


@pytest.mark.parametrize(
    ("name", "command", "folder", "says"),
    [
        ("", "make", "", "needs a name"),
        ("x" * 61, "make", "", "longer than 60"),
        ("build", "  \n", "", "'build' has no command"),
        ("build", "make\0x", "", "NUL"),
        ("build", "make", "/srv/app", "inside the workspace"),
        ("build", "make", "~/app", "inside the workspace"),
        ("build", "make", "web/../../etc", "leads out of the workspace"),
        ("build", "make", "..", "leads out of the workspace"),
    ],
)
def test_what_cannot_be_saved_is_refused_saying_why(
    name: str, command: str, folder: str, says: str
) -> None:
    with pytest.raises(RunCommandError, match=says.replace("(", r"\(")):
        RunCommand.make(name, command, folder)


def test_the_workspace_itself_is_the_empty_folder() -> None:
    assert RunCommand.make("a", "true", "./").folder == ""
    assert RunCommand.make("a", "true", "web/./src/..").folder == "web"


def test_names_are_unique_whatever_their_case() -> None:
    with pytest.raises(RunCommandError, match="two run commands are named 'Tests'"):
        checked([RunCommand("tests", "pytest"), RunCommand("Tests", "pytest -x")])


def test_the_error_names_the_field_and_the_position_for_an_editor() -> None:
    good, no_command = RunCommand("a", "true"), RunCommand("b", " ")
    with pytest.raises(RunCommandError) as raised:
        checked([good, no_command])
    assert (raised.value.field, raised.value.index) == ("command", 1)
    with pytest.raises(RunCommandError) as raised:
        checked([good, RunCommand("c", "true", "/etc")])
    assert (raised.value.field, raised.value.index) == ("folder", 1)
    with pytest.raises(RunCommandError) as raised:
        checked([good, RunCommand("z", "true"), RunCommand(" A ", "false")])
    assert (raised.value.field, raised.value.index) == ("name", 2)  # the second of the two
    with pytest.raises(RunCommandError) as raised:
        RunCommand.make("", "true")
    assert (raised.value.field, raised.value.index) == ("name", None)


def test_find_ignores_case_and_spacing() -> None:
    commands = checked([RunCommand("dev server", "npm run dev"), RunCommand("tests", "pytest")])
    assert find(commands, "Dev  Server") == commands[0]
    assert find(commands, "lint") is None


def test_the_stored_form_reads_back_the_same() -> None:
    commands = checked(
        [
            RunCommand("dev server", "npm run dev", "web", expect_url=True, durable=True),
            RunCommand("tests", "pytest -x --watch"),
        ]
    )
    assert from_value(run_commands.to_value(commands)) == commands


def test_a_damaged_entry_is_left_out_and_the_others_kept() -> None:
    stored = [
        {"name": "dev", "command": "npm run dev", "expect_url": "yes"},
        "not an entry",
        {"name": "", "command": "make"},
        {"name": "escape", "command": "make", "folder": "../x"},
        {"name": "DEV", "command": "again"},
        {"name": 3, "command": "make"},
        {"name": "tests", "command": "pytest", "durable": True},
    ]
    assert from_value(stored) == (
        RunCommand("dev", "npm run dev"),  # "yes" is not true: only a JSON true is
        RunCommand("tests", "pytest", durable=True),
    )
    assert from_value({"name": "x"}) == ()
    assert from_value(None) == ()
