"""Named agents: what one definition file says (issue 13 item 1, docs/agents.md).

A definition is a Markdown file: YAML front matter between two ``---`` lines, then the role prompt.
fxdesk's own format (``.fxdesk/agents/*.md``) has the fields of ``FIELDS``; Claude Code's
(``.claude/agents/*.md``) is read too and mapped onto them (``fxdesk.domain.claude_agents``).

``agent_files.parse_definition`` is pure: it takes the file's bytes (or text) and the name to
show for it, and returns an ``AgentDefinition`` or raises ``AgentDefinitionError`` naming the
file, the line and the field. Nothing else ever escapes it, whatever the text.

An unknown field in fxdesk's format is an error, not a warning: a misspelt ``tool:`` or
``permision_mode:`` silently dropped would leave the agent with every tool or its caller's mode,
which is exactly what the person meant to narrow. Claude Code's files are written for another
program with fields fxdesk has no use for (``color``, ``hooks``), so there they are warnings,
kept on the definition and shown by ``fxdesk agents``.

A definition's permission mode can never exceed its caller's: the engine clamps it when the
agent runs (``min(caller, definition)``); here it is only read.
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, NoReturn

import yaml

from fxdesk.domain.model import PermissionMode

# Not ``unrestricted``: a definition file (perhaps from a cloned repository) never takes an agent
# out of the sandbox.
DEFINITION_MODES = (PermissionMode.ASK, PermissionMode.AUTO, PermissionMode.YOLO)
EFFORTS = ("low", "medium", "high")
# The caller ids the agent-run records use for the root agent and the scheduler (spec §2.1).
RESERVED_IDS = frozenset({"ROOT", "SCHEDULER"})
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_DURATION = re.compile(r"(\d+)\s*(s|m|h)")
_UNITS = {"s": 1, "m": 60, "h": 3600}
FENCE = "---"


class SignalLane(enum.StrEnum):
    """How an agent's signals reach its root session (spec agent-coordinator §2.7)."""

    QUEUE = "queue"  # delivered at the root's next turn (a continuation when it is idle)
    STEER = "steer"  # injected into the root's running turn at its next step


class DefinitionFormat(enum.StrEnum):
    FXDESK = "fxdesk"
    CLAUDE = "claude"  # Claude Code's sub-agent files


class DefinitionOrigin(enum.StrEnum):
    """Where a definition was found, in lookup order (the first of an id wins)."""

    WORKSPACE = "workspace"  # <workspace>/.fxdesk/agents
    CLAUDE = "claude"  # <workspace>/.claude/agents, ~/.claude/agents
    USER = "user"  # the user's fxdesk config folder
    BUILT_IN = "built-in"


@dataclass(frozen=True)
class AgentDefinition:
    """One named agent, resolved from its file.

    Attributes:
        id: What the model and the person call it by (``target`` of a delegation).
        description: When to use it; the model reads it to choose an agent.
        prompt: The role prompt (the Markdown body).
        source: The file as shown to people (``.fxdesk/agents/x.md``, ``built-in:explorer``).
        hash: sha256 (hex) of the file's bytes; each run keeps it (``definition_hash``).
        profile: The model profile to run on; None: the caller's.
        model: The model within that profile; None: the profile's (or the caller's).
        effort: Reasoning effort (low, medium, high); None: the profile's.
        tools: The tools it may use; None: every tool its caller has.
        disallowed_tools: Tools it may not use even where ``tools`` would allow them.
        permission_mode: ask, auto or yolo; None: the caller's. Never more than the caller's.
        max_iterations: Model calls per task at most; None: the engine's default.
        timeout_s: Seconds a run may take; None: the engine's default.
        signal_lane: The lane of its signals; None: it may not emit signals.
        warnings: What was read but not used (Claude Code fields, unmapped tools).
    """

    id: str
    description: str
    prompt: str
    source: str
    hash: str
    format: DefinitionFormat = DefinitionFormat.FXDESK
    profile: str | None = None
    model: str | None = None
    effort: str | None = None
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    permission_mode: PermissionMode | None = None
    max_iterations: int | None = None
    timeout_s: int | None = None
    signal_lane: SignalLane | None = None
    warnings: tuple[str, ...] = ()

    @property
    def may_signal(self) -> bool:
        return self.signal_lane is not None


class AgentDefinitionError(ValueError):
    """A definition that cannot be used, with the file, the line (1-based) and the field."""

    def __init__(self, source: str, line: int, field_name: str | None, problem: str) -> None:
        where = f"{source} line {line}"
        super().__init__(
            f"{where}: {field_name}: {problem}" if field_name else f"{where}: {problem}"
        )
        self.source = source
        self.line = line
        self.field = field_name
        self.problem = problem


@dataclass(frozen=True)
class AgentEntry:
    """One line of the agent list: a usable definition, or a broken file and why.

    Attributes:
        id: The definition's id (a broken file: its declared id, else its file name).
        origin: Where it was found.
        path: The file (None for built-ins).
        definition: The definition; None when the file is broken.
        error: Why it is broken (file, line, field); None when it is not.
        overrides: Files of the same id further down the lookup order, hidden by this one.
    """

    id: str
    origin: DefinitionOrigin
    path: str | None
    definition: AgentDefinition | None = None
    error: str | None = None
    overrides: tuple[str, ...] = ()

    @property
    def broken(self) -> bool:
        return self.definition is None


# --- reading the file ------------------------------------------------------------------------


@dataclass
class Field:
    """One front-matter field: its YAML node (for lines) and its value."""

    name: str
    node: yaml.Node
    value: Any

    @property
    def line(self) -> int:
        return int(self.node.start_mark.line) + 2  # the front matter starts on line 2


@dataclass
class Reader:
    """The state of reading one file: its name, its fields, and what was said about them."""

    source: str
    known_tools: Collection[str] | None
    fields: dict[str, Field] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def fail(
        self, where: Field | yaml.Node | int, field_name: str | None, problem: str
    ) -> NoReturn:
        if isinstance(where, Field):
            line = where.line
        elif isinstance(where, yaml.Node):
            line = int(where.start_mark.line) + 2
        else:
            line = where
        raise AgentDefinitionError(self.source, line, field_name, problem)

    def warn(self, item: Field, problem: str) -> None:
        self.warnings.append(f"line {item.line}: {item.name}: {problem}")

    def text(self, name: str) -> str | None:
        """A text field: None when absent or null. Plain scalars keep the text as written, so
        ``description: No`` is "No" and ``model: 4.1`` is "4.1", not YAML 1.1's False and 4.1."""
        item = self.fields.get(name)
        if item is None or item.value is None:
            return None
        if not isinstance(item.node, yaml.ScalarNode):
            return self.fail(item, name, f"must be text, not {_kind(item.value)}")
        value = item.value if isinstance(item.value, str) else str(item.node.value)
        return value.strip() or None

    def names(self, name: str) -> list[tuple[str, yaml.Node]] | None:
        """A list of names: a YAML list or one comma-separated text; None when absent."""
        item = self.fields.get(name)
        if item is None or item.value is None:
            return None
        if isinstance(item.node, yaml.ScalarNode):
            words = str(item.node.value).split(",")
            return [(w.strip(), item.node) for w in words if w.strip()]
        if not isinstance(item.node, yaml.SequenceNode):
            return self.fail(item, name, f"must be a list of names, not {_kind(item.value)}")
        found: list[tuple[str, yaml.Node]] = []
        for node in item.node.value:
            if not isinstance(node, yaml.ScalarNode) or not str(node.value).strip():
                self.fail(node, name, "each entry must be a name")
            found.append((str(node.value).strip(), node))
        return found

    def whole(self, name: str, *, minimum: int = 1) -> int | None:
        item = self.fields.get(name)
        if item is None or item.value is None:
            return None
        value = item.value
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            return self.fail(item, name, f"{_show(value)} is not a whole number ≥ {minimum}")
        return value

    def choice(self, name: str, allowed: Collection[str]) -> str | None:
        value = self.text(name)
        if value is not None and value not in allowed:
            self.fail(self.fields[name], name, f"{value!r} is not one of {', '.join(allowed)}")
        return value


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def digest(data: str | bytes) -> str:
    """The definition hash: sha256 of the file's bytes (of UTF-8 text for a string)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


def _decode(data: str | bytes, source: str) -> str:
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise AgentDefinitionError(source, line, None, "the file is not UTF-8 text") from None


def split_front_matter(text: str, source: str) -> tuple[str, str, int]:
    """(front matter, body, line of the body): the text between the first two ``---`` lines."""
    lines = text.split("\n")
    if lines[0].rstrip() != FENCE:
        raise AgentDefinitionError(
            source,
            1,
            None,
            "the file must start with a '---' line, then the fields (YAML), another '---' "
            "line and the role prompt",
        )
    for index in range(1, len(lines)):
        if lines[index].rstrip() == FENCE:
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]), index + 2
    raise AgentDefinitionError(
        source, 1, None, "the front matter opened on line 1 has no closing '---' line"
    )


def read_fields(front: str, reader: Reader) -> None:
    """Fill ``reader.fields`` from the front matter's YAML, failing with the line of a problem."""
    try:
        root = yaml.compose(front, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 2 if mark is not None else 2
        problem = ": ".join(p for p in (exc.context, exc.problem) if p) or "not valid YAML"
        reader.fail(line, None, f"the front matter is not valid YAML: {problem}")
    except yaml.YAMLError as exc:  # the reader's "special characters are not allowed"
        reader.fail(2, None, f"the front matter is not valid YAML: {exc}")
    except RecursionError:
        reader.fail(2, None, "the front matter is nested too deeply")
    if root is None:
        reader.fail(1, None, "the front matter is empty: it needs at least a description")
    if not isinstance(root, yaml.MappingNode):
        reader.fail(root, None, "the front matter must be fields ('name: value' lines)")
    for key, value_node in root.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag != "tag:yaml.org,2002:str":
            reader.fail(key, None, "field names must be text")
        name = str(key.value)
        if name in reader.fields:
            first = reader.fields[name].line
            reader.fail(key, name, f"given twice (first on line {first})")
        reader.fields[name] = Field(name, value_node, _construct(value_node, name, reader))


def _construct(node: yaml.Node, name: str, reader: Reader) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        if isinstance(node, yaml.ScalarNode):  # 2024-02-30 is no date: keep it as text
            return str(node.value)
        problem = exc.problem if isinstance(exc, yaml.MarkedYAMLError) else str(exc)
        return reader.fail(node, name, f"cannot be read: {problem}")
    except RecursionError:
        return reader.fail(node, name, "nested too deeply")
    finally:
        loader.dispose()


# --- the fields -------------------------------------------------------------------------------


def check_id(value: str, where: Field | int, reader: Reader, name: str, note: str = "") -> str:
    if not _ID.fullmatch(value):
        reader.fail(
            where,
            name,
            f"{value!r}{note} is not a valid id (letters, digits, '-', '_', '.'; at most 64, "
            "starting with a letter or digit)",
        )
    if value in RESERVED_IDS:
        reader.fail(where, name, f"{value!r} is reserved")
    return value


def agent_id(reader: Reader, name: str, default_id: str | None) -> str:
    value = reader.text(name)
    if value is not None:
        return check_id(value, reader.fields[name], reader, name)
    if default_id is None:
        return reader.fail(1, name, "missing")
    return check_id(default_id, 1, reader, name, " (the file name)")


def description(reader: Reader, name: str = "description") -> str:
    value = reader.text(name)
    if value is None:
        reader.fail(
            reader.fields.get(name, 1),
            name,
            "missing: say what the agent is for (the model reads it)",
        )
    return str(value)


def tool_names(reader: Reader, name: str) -> tuple[str, ...] | None:
    """fxdesk's tool lists: every name must be a tool (a typo is an error, not an omission)."""
    entries = reader.names(name)
    if entries is None:
        return None
    known = reader.known_tools
    chosen: list[str] = []
    for tool, node in entries:
        if known is not None and tool not in known:
            close = difflib.get_close_matches(tool, list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            reader.fail(node, name, f"{tool!r} is not a tool ({', '.join(sorted(known))}){hint}")
        if tool not in chosen:
            chosen.append(tool)
    return tuple(chosen)


def timeout_seconds(reader: Reader, name: str = "timeout") -> int | None:
    item = reader.fields.get(name)
    if item is None or item.value is None:
        return None
    value = item.value
    if isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if match:
            value = int(match.group(1)) * _UNITS[match.group(2)]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        reader.fail(
            item, name, f"{_show(item.value)} is not a number of seconds ≥ 1 (or 30s, 5m, 2h)"
        )
    return int(value)


def signal_lane(reader: Reader, name: str = "signals") -> SignalLane | None:
    item = reader.fields.get(name)
    if item is None or item.value is None or item.value is False:
        return None
    if item.value is True:
        return SignalLane.QUEUE
    if isinstance(item.value, str) and item.value.strip() in tuple(SignalLane):
        return SignalLane(item.value.strip())
    return reader.fail(item, name, f"{_show(item.value)} is not one of false, true, queue, steer")


def permission_mode(reader: Reader, name: str = "permission_mode") -> PermissionMode | None:
    value = reader.text(name)
    if value is None:
        return None
    if value not in tuple(DEFINITION_MODES):
        extra = (
            " (a definition cannot take an agent out of the sandbox)"
            if value == "unrestricted"
            else ""
        )
        reader.fail(
            reader.fields[name],
            name,
            f"{value!r} is not one of {', '.join(DEFINITION_MODES)}{extra}",
        )
    return PermissionMode(value)


FXDESK_FIELDS: dict[str, Callable[[Reader], object]] = {
    "description": description,
    "profile": lambda r: r.text("profile"),
    "model": lambda r: r.text("model"),
    "effort": lambda r: r.choice("effort", EFFORTS),
    "tools": lambda r: tool_names(r, "tools"),
    "disallowed_tools": lambda r: tool_names(r, "disallowed_tools"),
    "permission_mode": permission_mode,
    "max_iterations": lambda r: r.whole("max_iterations"),
    "timeout": timeout_seconds,
    "signals": signal_lane,
}
FIELDS = ("id", *FXDESK_FIELDS)


def _fxdesk(reader: Reader, default_id: str | None) -> dict[str, Any]:
    for name, item in reader.fields.items():
        if name not in FIELDS:
            close = difflib.get_close_matches(name, FIELDS, n=1)
            if name == "name":
                hint = "; fxdesk calls it 'id' ('name' is Claude Code's, read in .claude/agents)"
            else:
                hint = f"; did you mean {close[0]!r}?" if close else ""
            reader.fail(item, name, f"unknown field (known: {', '.join(FIELDS)}){hint}")
    values = {name: read(reader) for name, read in FXDESK_FIELDS.items()}
    return {
        "id": agent_id(reader, "id", default_id),
        "description": values["description"],
        "profile": values["profile"],
        "model": values["model"],
        "effort": values["effort"],
        "tools": values["tools"],
        "disallowed_tools": values["disallowed_tools"] or (),
        "permission_mode": values["permission_mode"],
        "max_iterations": values["max_iterations"],
        "timeout_s": values["timeout"],
        "signal_lane": values["signals"],
    }
