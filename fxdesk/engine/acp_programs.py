"""Whether an external agent's program can be found on this machine (``fxdesk doctor``'s
``acp_agents`` check and the profile form's "Check" button ask the same thing)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from fxdesk.domain.acp_presets import NODE_PROGRAMS, PRESETS


@dataclass(frozen=True)
class AgentProgram:
    """Where ``command`` was found (None: not found), and when not, what to do."""

    command: str
    path: str | None
    problem: str = ""

    @property
    def found(self) -> bool:
        return self.path is not None


def find_agent_program(command: str, env: Mapping[str, str] | None = None) -> AgentProgram:
    """Look ``command`` up on ``$PATH`` (a path: whether it is an executable file). ``npx``
    and friends count only with ``node`` found too. A preset's command says how to install it."""
    search = (env or os.environ).get("PATH")
    path = shutil.which(command, path=search)
    install = next((p.install for p in PRESETS.values() if p.command == command), "")
    if path is None:
        where = "is not an executable file" if os.sep in command else "is not found on PATH"
        return AgentProgram(command, None, f"{command} {where}. {install}".strip())
    if command in NODE_PROGRAMS and shutil.which("node", path=search) is None:
        return AgentProgram(command, None, f"{command} is found but node is not. {install}")
    return AgentProgram(command, path)
