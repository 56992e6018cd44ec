"""Reading one agent definition file: fxdesk's own format or Claude Code's.

Kept apart from ``agent_definitions`` (the fields and their checks) and ``claude_agents`` (the
mapping of Claude Code's fields, built on those checks), so neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Collection

from fxdesk.domain.agent_definitions import (
    AgentDefinition,
    DefinitionFormat,
    Reader,
    _decode,
    _fxdesk,
    digest,
    read_fields,
    split_front_matter,
)
from fxdesk.domain.claude_agents import claude_fields


def parse_definition(
    data: str | bytes,
    source: str,
    *,
    format: DefinitionFormat = DefinitionFormat.FXDESK,
    default_id: str | None = None,
    known_tools: Collection[str] | None = None,
) -> AgentDefinition:
    """The definition in ``data``, or ``AgentDefinitionError`` naming ``source``, line, field.

    Args:
        data: The file's bytes (hashed as they are) or its text.
        source: The file's name as people should see it in messages.
        format: fxdesk's own fields, or Claude Code's.
        default_id: The id when the file gives none (the file name without ``.md``).
        known_tools: The tool names that exist; None skips the check (tests, built-ins).
    """
    hashed = digest(data)
    text = _decode(data, source)
    front, body, _ = split_front_matter(text, source)
    reader = Reader(source, known_tools)
    read_fields(front, reader)
    if format is DefinitionFormat.CLAUDE:
        values = claude_fields(reader, default_id)
    else:
        values = _fxdesk(reader, default_id)
    return AgentDefinition(
        prompt=body.strip(),
        source=source,
        hash=hashed,
        format=format,
        warnings=tuple(reader.warnings),
        **values,
    )
