"""Agent definition files: every field, the defaults, each error naming file, line and field."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fxdesk.domain.agent_definitions import (
    AgentDefinition,
    AgentDefinitionError,
    DefinitionFormat,
    SignalLane,
)
from fxdesk.domain.agent_files import parse_definition
from fxdesk.domain.model import PermissionMode

TOOLS = frozenset(
    {"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "run_command"}
)

FULL = """---
id: researcher
description: Researches a question and reports with sources.
profile: research
model: gpt-5-mini
effort: high
tools: [read_file, grep, glob]
disallowed_tools: [run_command]
permission_mode: auto
max_iterations: 12
timeout: 5m
signals: steer
---

You research. Cite every file you read.

Be brief.
"""


def parse(text: str | bytes, **kwargs: object) -> AgentDefinition:
    kwargs.setdefault("known_tools", TOOLS)
    return parse_definition(text, "agents/x.md", **kwargs)  # type: ignore[arg-type]


def error_of(text: str, **kwargs: object) -> AgentDefinitionError:
    with pytest.raises(AgentDefinitionError) as caught:
        parse(text, default_id="x", **kwargs)
    return caught.value


def test_every_field_is_read() -> None:
    d = parse(FULL)
    assert d == AgentDefinition(
        id="researcher",
        description="Researches a question and reports with sources.",
        prompt="You research. Cite every file you read.\n\nBe brief.",
        source="agents/x.md",
        hash=hashlib.sha256(FULL.encode()).hexdigest(),
        format=DefinitionFormat.FXDESK,
        profile="research",
        model="gpt-5-mini",
        effort="high",
        tools=("read_file", "grep", "glob"),
        disallowed_tools=("run_command",),
        permission_mode=PermissionMode.AUTO,
        max_iterations=12,
        timeout_s=300,
        signal_lane=SignalLane.STEER,
        warnings=(),
    )
    assert d.may_signal


def test_only_a_description_is_needed_and_the_rest_is_the_callers() -> None:
    d = parse("---\ndescription: Helps.\n---\nHelp.\n", default_id="helper")
    assert (d.id, d.description, d.prompt) == ("helper", "Helps.", "Help.")
    assert d.profile is d.model is d.effort is d.tools is d.permission_mode is None
    assert d.max_iterations is d.timeout_s is d.signal_lane is None
    assert d.disallowed_tools == () and not d.may_signal and d.warnings == ()


def test_the_hash_is_of_the_files_bytes_and_changes_with_them() -> None:
    data = FULL.encode()
    assert parse(data).hash == hashlib.sha256(data).hexdigest() == parse(FULL).hash
    assert parse(data.replace(b"Be brief.", b"Be briefer.")).hash != parse(data).hash


@pytest.mark.parametrize(
    ("value", "lane"),
    [
        ("false", None),
        ("no", None),
        ("null", None),
        ("true", SignalLane.QUEUE),
        ("queue", SignalLane.QUEUE),
        ("steer", SignalLane.STEER),
    ],
)
def test_signals_say_whether_and_on_which_lane(value: str, lane: SignalLane | None) -> None:
    assert (
        parse(f"---\ndescription: d\nsignals: {value}\n---\n", default_id="x").signal_lane == lane
    )


@pytest.mark.parametrize(("value", "seconds"), [("90", 90), ("30s", 30), ("5m", 300), ("2h", 7200)])
def test_a_timeout_is_seconds_or_a_duration(value: str, seconds: int) -> None:
    assert (
        parse(f"---\ndescription: d\ntimeout: {value}\n---\n", default_id="x").timeout_s == seconds
    )


def test_text_fields_keep_what_was_written_not_yaml_guesses() -> None:
    d = parse("---\ndescription: No\nmodel: 4.1\nprofile: 2024-02-30\n---\n", default_id="x")
    assert (d.description, d.model, d.profile) == ("No", "4.1", "2024-02-30")


def test_tools_may_be_one_comma_separated_line_and_repeats_count_once() -> None:
    d = parse("---\ndescription: d\ntools: read_file, grep,read_file\n---\n", default_id="x")
    assert d.tools == ("read_file", "grep")
    assert parse("---\ndescription: d\ntools: []\n---\n", default_id="x").tools == ()


def test_a_bom_and_windows_line_ends_are_fine() -> None:
    d = parse("\ufeff---\r\ndescription: d\r\n---\r\nBody\r\n".encode(), default_id="x")
    assert (d.description, d.prompt) == ("d", "Body")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "---\ndescription: d\ntools: [read_file]\npermission_mode: sometimes\n---\n",
            "agents/x.md line 4: permission_mode: 'sometimes' is not one of ask, auto, yolo",
        ),
        (
            "---\ndescription: d\npermission_mode: unrestricted\n---\n",
            "agents/x.md line 3: permission_mode: 'unrestricted' is not one of ask, auto, yolo "
            "(a definition cannot take an agent out of the sandbox)",
        ),
        (
            "---\ndescription: d\neffort: extreme\n---\n",
            "agents/x.md line 3: effort: 'extreme' is not one of low, medium, high",
        ),
        (
            "---\ndescription: d\nmax_iterations: 0\n---\n",
            "agents/x.md line 3: max_iterations: 0 is not a whole number ≥ 1",
        ),
        (
            "---\ndescription: d\nmax_iterations: many\n---\n",
            "agents/x.md line 3: max_iterations: 'many' is not a whole number ≥ 1",
        ),
        (
            "---\ndescription: d\ntimeout: soon\n---\n",
            "agents/x.md line 3: timeout: 'soon' is not a number of seconds ≥ 1 (or 30s, 5m, 2h)",
        ),
        (
            "---\ndescription: d\nsignals: loud\n---\n",
            "agents/x.md line 3: signals: 'loud' is not one of false, true, queue, steer",
        ),
        (
            "---\ndescription: d\ntools:\n  - read_file\n  - raed_file\n---\n",
            "agents/x.md line 5: tools: 'raed_file' is not a tool (edit_file, glob, grep, "
            "list_dir, read_file, run_command, write_file); did you mean 'read_file'?",
        ),
        (
            "---\ndescription: d\ntools: {read_file: yes}\n---\n",
            "agents/x.md line 3: tools: must be a list of names, not a mapping",
        ),
        (
            "---\ndescription: d\nmodel: [a, b]\n---\n",
            "agents/x.md line 3: model: must be text, not a list",
        ),
        (
            "---\ndescription: d\ntool: [read_file]\n---\n",
            "agents/x.md line 3: tool: unknown field (known: id, description, profile, model, "
            "effort, tools, disallowed_tools, permission_mode, max_iterations, timeout, "
            "signals); did you mean 'tools'?",
        ),
        (
            "---\nname: x\ndescription: d\n---\n",
            "agents/x.md line 2: name: unknown field",
        ),
        (
            "---\nid: x\nmodel: a\nmodel: b\ndescription: d\n---\n",
            "agents/x.md line 4: model: given twice (first on line 3)",
        ),
        ("---\nid: x\n---\nbody\n", "agents/x.md line 1: description: missing"),
        ("---\ndescription: ''\n---\n", "agents/x.md line 2: description: missing"),
        ("---\nid: 'bad id'\ndescription: d\n---\n", "agents/x.md line 2: id: 'bad id' is not"),
        ("---\nid: ROOT\ndescription: d\n---\n", "agents/x.md line 2: id: 'ROOT' is reserved"),
        ("no front matter\n", "agents/x.md line 1: the file must start with a '---' line"),
        ("---\ndescription: d\n", "agents/x.md line 1: the front matter opened on line 1 has no"),
        ("---\n---\nbody\n", "agents/x.md line 1: the front matter is empty"),
        ("---\n- a\n- b\n---\n", "agents/x.md line 2: the front matter must be fields"),
        (
            "---\ndescription: d\nmodel: [unclosed\n---\n",
            "agents/x.md line 3: the front matter is not valid YAML",
        ),
        ("---\ndescription: d\n1: x\n---\n", "agents/x.md line 3: field names must be text"),
    ],
)
def test_each_error_names_the_file_the_line_and_the_field(text: str, message: str) -> None:
    assert str(error_of(text)).startswith(message)


def test_the_error_keeps_its_parts_for_callers() -> None:
    error = error_of("---\ndescription: d\n\n\neffort: max\n---\n")
    assert (error.source, error.line, error.field) == ("agents/x.md", 5, "effort")


def test_an_id_from_a_file_name_that_cannot_be_one_is_refused() -> None:
    with pytest.raises(AgentDefinitionError, match=r"line 1: id: 'my agent' \(the file name\)"):
        parse("---\ndescription: d\n---\n", default_id="my agent")


def test_bytes_that_are_not_utf8_name_their_line() -> None:
    with pytest.raises(AgentDefinitionError, match="line 3: the file is not UTF-8 text"):
        parse(b"---\ndescription: d\nmodel: \xff\n---\n", default_id="x")


def test_without_known_tools_any_name_is_taken() -> None:
    d = parse_definition("---\ndescription: d\ntools: [future_tool]\n---\n", "y.md", default_id="y")
    assert d.tools == ("future_tool",)


# --- Claude Code's format -------------------------------------------------------------------

CLAUDE = """---
name: code-reviewer
description: Reviews code for quality and security. Use proactively after changes.
tools: Read, Grep, Glob, Bash(git diff:*), WebFetch, mcp__github__get_issue
model: sonnet
color: red
permissionMode: acceptEdits
---
You are a senior code reviewer.
"""


def claude(text: str) -> AgentDefinition:
    return parse(text, format=DefinitionFormat.CLAUDE, default_id="file-name")


def test_claude_code_files_are_mapped_onto_fxdesks_fields() -> None:
    d = claude(CLAUDE)
    assert d.format is DefinitionFormat.CLAUDE
    assert (d.id, d.prompt) == ("code-reviewer", "You are a senior code reviewer.")
    assert d.description.startswith("Reviews code")
    assert d.tools == ("read_file", "grep", "glob", "run_command")
    assert d.model is None  # an alias: the caller's model
    assert d.permission_mode is PermissionMode.AUTO
    assert d.signal_lane is None and d.profile is None
    assert d.warnings == (
        "line 6: color: ignored (fxdesk does not use this Claude Code field)",
        "line 4: tools: 'Bash(git diff:*)': the pattern is not kept; fxdesk's permission "
        "rules decide what run_command may do",
        "line 4: tools: 'WebFetch' has no fxdesk counterpart; left out",
        "line 4: tools: 'mcp__github__get_issue' has no fxdesk counterpart; left out",
        "line 5: model: 'sonnet' is a Claude Code alias; the agent runs on its caller's model "
        "(give a model id to choose one)",
    )


@pytest.mark.parametrize(
    ("mode", "mapped"),
    [
        ("default", PermissionMode.ASK),
        ("plan", PermissionMode.ASK),
        ("acceptEdits", PermissionMode.AUTO),
        ("bypassPermissions", PermissionMode.YOLO),
        ("dontAsk", PermissionMode.ASK),
    ],
)
def test_claude_permission_modes(mode: str, mapped: PermissionMode) -> None:
    assert claude(f"---\ndescription: d\npermissionMode: {mode}\n---\n").permission_mode is mapped


def test_claude_model_inherit_and_full_ids_and_missing_name() -> None:
    assert claude("---\ndescription: d\nmodel: inherit\n---\n").model is None
    d = claude("---\ndescription: d\nmodel: claude-opus-4-5-20251101\n---\n")
    assert d.model == "claude-opus-4-5-20251101" and d.warnings == ()
    assert d.id == "file-name"  # no name: the file's


def test_claude_tool_lists_and_denials() -> None:
    d = claude(
        "---\ndescription: d\ntools: [Read, Edit, MultiEdit, LS]\ndisallowedTools: Bash\n---\n"
    )
    assert d.tools == ("read_file", "edit_file", "list_dir")
    assert d.disallowed_tools == ("run_command",)
    assert claude("---\ndescription: d\n---\n").tools is None  # omitted: every tool
    assert claude("---\ndescription: d\ntools: WebSearch\n---\n").tools == ()  # nothing mapped


def test_claude_errors_still_name_the_file_line_and_field() -> None:
    with pytest.raises(AgentDefinitionError, match="line 3: permissionMode: 'always' is not one"):
        claude("---\ndescription: d\npermissionMode: always\n---\n")
    with pytest.raises(AgentDefinitionError, match="line 1: description: missing"):
        claude("---\nname: x\n---\n")


# --- whatever the text, only the definition error ------------------------------------------

FRONT_PIECES = st.sampled_from(
    [
        "description: d\n",
        "id: a\n",
        "tools: [read_file, x]\n",
        "tools: {a: 1}\n",
        "timeout: 5m\n",
        "signals: steer\n",
        "permission_mode: yolo\n",
        "max_iterations: -3\n",
        "model: &a [*a]\n",
        "? [a, b]\n: c\n",
        "<<: {a: 1}\n",
        "effort: !!python/object:os.system x\n",
        "date: 2001-02-30\n",
        "x: !!binary '@@'\n",
        "  bad indent\n",
        "---\n",
        "'\n",
        "\t\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    head=st.lists(FRONT_PIECES, max_size=6).map("".join),
    noise=st.text(max_size=40),
    fmt=st.sampled_from(DefinitionFormat),
)
def test_any_front_matter_gives_a_definition_or_the_definition_error(
    head: str, noise: str, fmt: DefinitionFormat
) -> None:
    text = f"---\n{head}{noise}\n---\nbody"
    try:
        parse_definition(text, "f.md", format=fmt, default_id="f", known_tools=TOOLS)
    except AgentDefinitionError as exc:
        assert str(exc).startswith("f.md line ")


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_give_a_definition_or_the_definition_error(data: bytes) -> None:
    for candidate in (data, b"---\n" + data, b"---\n" + data + b"\n---\n"):
        try:
            parse_definition(candidate, "f.md", default_id="f", known_tools=TOOLS)
        except AgentDefinitionError as exc:
            assert str(exc).startswith("f.md line ")
