"""What a tool call was allowed, and so the context it runs in.

The permission check (``engine.permissions.Check``) and the person's answer decide it; the turn
(``engine.turn_tools``) turns it into the ``ToolContext`` the tool runs in. For a command,
``command_sandbox`` says what that context's sandbox lets through, shown with the approval.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.approvals import SandboxSummary
from fxdesk.domain.conversation import ToolCall
from fxdesk.domain.model import PermissionMode
from fxdesk.domain.sandbox_settings import DEFAULTS, WorkspaceSandbox
from fxdesk.engine.permissions import Check
from fxdesk.tools.base import ToolAccess, ToolContext, ToolRegistry
from fxdesk.tools.shell import sandbox_summary


@dataclass(frozen=True)
class Allowed:
    """What a call was allowed, for the context it runs in: whether it may reach outside the
    workspace, what it writes (the sandbox lets it write there), the mode it was judged in,
    whether it may write a protected path, whether it has the network, and why it runs
    outside the sandbox ('' for in it)."""

    outside: bool = False
    writes: tuple[Path, ...] = ()
    mode: PermissionMode | None = None
    protected: bool = False  # it may write a protected path (.git, .fxdesk): allowed by name
    sandbox: WorkspaceSandbox = DEFAULTS  # the workspace's sandbox settings
    network: bool = False
    outside_sandbox: str = ""

    @classmethod
    def by_check(cls, check: Check, outside_sandbox: str = "") -> Allowed:
        """What ``check`` lets the call do once allowed (``outside_sandbox``: the person let
        this one call out of the sandbox)."""
        return cls(
            check.outside,
            check.writes,
            check.mode,
            check.protected,
            check.sandbox,
            check.network,
            outside_sandbox or check.outside_sandbox,
        )


OUTSIDE_ONCE = "the person allowed this one command outside the sandbox"


async def command_sandbox(
    tools: ToolRegistry, call: ToolCall, ctx: ToolContext
) -> SandboxSummary | None:
    """For a command: what its sandbox would let through in ``ctx`` (None for other tools)."""
    tool = tools.get(call.name)
    if tool is None or tool.facts.access is not ToolAccess.EXECUTE:
        return None
    return await asyncio.to_thread(sandbox_summary, ctx)
