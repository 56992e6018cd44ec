"""How a background task's wrapper is started: the same sandbox as ``run_command``.

A task runs in the session's command sandbox (``tools.shell.command_policy``: the workspace and
its writable paths, the session's own ``/tmp``, the data folder and credential stores hidden,
the allow-listed environment), with the network on, because a server listens. In unrestricted
mode, or on a machine without a sandbox, it runs unsandboxed with the allow-listed environment
(logged: the person's question about leaving the sandbox belongs to the tool that asked).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fxdesk.domain.model import PermissionMode
from fxdesk.engine.background.context import SessionPlace, SpecBuilder, log
from fxdesk.logs import environment_without_secrets
from fxdesk.paths import SANDBOX_TEMP
from fxdesk.tools.background.provider import LaunchSpec
from fxdesk.tools.base import ToolContext
from fxdesk.tools.sandbox import allowed_environment
from fxdesk.tools.sandbox_placeholders import make_fxdesk_folder
from fxdesk.tools.sandbox_probe import SEATBELT, SandboxStatus, sandbox_status
from fxdesk.tools.shell import command_policy


def sandboxed_specs(
    data_dir: Path | None, status: Callable[[], SandboxStatus] = sandbox_status
) -> SpecBuilder:
    """A ``SpecBuilder`` for tasks of sessions whose data folder is ``data_dir``."""

    def build(place: SessionPlace, cwd: Path, log_path: Path, durable: bool) -> LaunchSpec:
        unrestricted = place.permission_mode == PermissionMode.UNRESTRICTED.value
        if unrestricted or not status().available:
            if not unrestricted:
                log.warning("background task runs outside the sandbox: no sandbox here")
            environment = allowed_environment(environment_without_secrets(), place.extra_env)
            return LaunchSpec(cwd, log_path, None, environment, survives_fxdesk=durable)
        if status().kind != SEATBELT:
            make_fxdesk_folder(place.workspace)  # bubblewrap keeps only what exists read-only
        context = ToolContext(
            place.workspace,
            place.session_id,
            "background",
            "background",
            network=True,
            data_dir=data_dir,
            temp_dir=None if data_dir is None else data_dir / SANDBOX_TEMP / place.session_id,
            extra_writable=place.writable,
            extra_env=place.extra_env,
        )
        return LaunchSpec(cwd, log_path, command_policy(context), survives_fxdesk=durable)

    return build
