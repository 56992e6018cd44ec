"""An external agent's process in fxdesk's sandbox, where the profile and the machine allow it.

The agent runs as a stdio MCP server does (``tools.mcp.launch.sandboxed_launch``, one code
path): under bubblewrap with the policy of the workspace's commands (the workspace writable,
``.git`` and ``.fxdesk`` read-only, the data folder and credential stores hidden, the
allow-listed environment), with the network, its own program readable, and what its preset
declares (``domain.acp_presets.SandboxNeeds``): its configuration folders in the home folder
writable (its own login inside them no longer hidden from it) and the variables holding its
key passed on. The profile's own variables (and its secrets from the keyring) are passed on
too. What the agent does through fxdesk (``fs/*``, terminals) is fxdesk's tools as before;
what it does by itself is now held by the kernel.

Where there is no bubblewrap (none installed, user namespaces off, macOS), the agent runs as
before, outside, and the log says so.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.acp_presets import SandboxNeeds, needs_of, sandboxed
from fxdesk.domain.mcp import safe_name
from fxdesk.domain.model import Profile
from fxdesk.providers.acp import AcpLaunch, LaunchWrapper
from fxdesk.providers.base import ProviderError
from fxdesk.tools.mcp.launch import sandboxed_launch
from fxdesk.tools.sandbox_probe import BUBBLEWRAP, sandbox_status
from fxdesk.tools.shell import no_sandbox

log = logging.getLogger(__name__)

ACP_TEMP = "acp-tmp"  # under the data folder: each sandboxed agent's /tmp


@dataclass(frozen=True)
class AgentSandbox:
    """A ``LaunchWrapper``: wraps the agent's start for a workspace (blocking)."""

    profile: str
    needs: SandboxNeeds
    data_dir: Path | None
    home: Path | None = None  # default: the home folder

    def __call__(self, launch: AcpLaunch, workspace: Path) -> AcpLaunch:
        status = sandbox_status()
        if not status.available or status.kind != BUBBLEWRAP:
            why = no_sandbox(status) if not status.available else "no bubblewrap here"
            log.warning("ACP agent of profile %r runs outside the sandbox: %s", self.profile, why)
            return launch
        suffix = hashlib.sha256(str(workspace).encode()).hexdigest()[:12]
        key = f"{safe_name(self.profile)}-{suffix}"
        temp = None
        if self.data_dir is not None:
            temp = self.data_dir / ACP_TEMP / key
        try:
            homes = home_paths(self.needs, self.home or Path(os.path.expanduser("~")))
            made = sandboxed_launch(
                (launch.command, *launch.args),
                launch.env,
                workspace,
                workspace,
                f"acp-{key}",
                temp,
                status,
                data_dir=self.data_dir,
                home_writable=homes,
                extra_env=self.needs.env,
            )
        except OSError as exc:
            raise ProviderError(
                "unavailable",
                f"the sandbox of the agent {launch.command!r} could not be made "
                f"({exc.strerror or exc})",
            ) from None
        return AcpLaunch(made.argv[0], made.argv[1:], made.env, inherit_env=False)


def home_paths(needs: SandboxNeeds, home: Path) -> tuple[Path, ...]:
    """The agent's writable paths in the home folder, resolved: its folders (made, mode 0700,
    when missing) and its files that exist (a missing file cannot be bound; the agent cannot
    make it)."""
    found: list[Path] = []
    for raw in needs.home_folders:
        path = home / raw.removeprefix("~/")
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        found.append(Path(os.path.realpath(path)))
    for raw in needs.home_files:
        path = home / raw.removeprefix("~/")
        if path.is_file():
            found.append(Path(os.path.realpath(path)))
    return tuple(dict.fromkeys(found))


def agent_sandbox(profile: Profile, data_dir: Path | None) -> LaunchWrapper | None:
    """The sandbox for ``profile``'s agent, or None when it runs outside (the profile says so,
    or its preset's default)."""
    if not sandboxed(profile.preset, profile.sandbox):
        return None
    return AgentSandbox(profile.name, needs_of(profile.preset), data_dir)
