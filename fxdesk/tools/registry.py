"""Every tool the agent can use, in one list for the composition root."""

from __future__ import annotations

from fxdesk.tools.agents.tools import agent_tools
from fxdesk.tools.background.agent_tools import background_tools
from fxdesk.tools.base import Tool
from fxdesk.tools.basic import basic_tools
from fxdesk.tools.files import file_tools
from fxdesk.tools.search import search_tools
from fxdesk.tools.shell import shell_tools


def all_tools() -> list[Tool]:
    """A fresh instance of each tool, sorted by name."""
    return sorted(
        [
            *agent_tools(),
            *basic_tools(),
            *file_tools(),
            *search_tools(),
            *shell_tools(),
            *background_tools(),
        ],
        key=lambda tool: tool.name,
    )
