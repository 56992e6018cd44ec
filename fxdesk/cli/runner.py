"""Running one headless command: start fxdesk without a window, run the command, stop in order.

Commands get the engine facade (``fxdesk.engine.facade.Engine``), never the store or the session
owner. Expected problems become a sentence on stderr and an exit code; bugs reach ``main``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine


class CommandError(Exception):
    """A problem the person can fix; printed without a traceback."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.code = code


def execute(
    paths: DataPaths,
    body: Callable[[Engine], Awaitable[int]],
    *,
    with_engine: bool = True,
    recover: bool = True,
    background: bool | None = None,
    mcp: bool | None = None,
) -> int:
    """Start fxdesk headless, run ``body``, stop in order; map known errors to exit codes.

    ``with_engine=False`` opens the database only (commands that read, answer approvals, edit
    settings or hand a message off with ``send --no-wait`` run no session). Only commands that
    run work (``run``, ``send``, ``resume``, ``recover``) recover first: the others must not
    interrupt work another fxdesk queued. ``background`` (default: as ``recover``) runs
    background tasks: ``fxdesk start`` and ``stop`` do, without recovering sessions. ``mcp``
    (default: as ``background``) starts the MCP servers (``fxdesk mcp``).
    """
    from fxdesk.app import App
    from fxdesk.engine.facade import SessionError, StoreError

    async def main() -> int:
        app = App(paths)
        try:
            if with_engine:  # a command runs its own session only, never handed-off work
                await app.start(
                    recover=recover, run_handed_off=False, background=background, mcp=mcp
                )
            else:
                await app.start_store_only()
        except StoreError as exc:
            print(f"fxdesk: {exc.user_message}", file=sys.stderr)
            return ExitCode.DATA
        try:
            return await body(app.engine)
        except CommandError as exc:
            print(f"fxdesk: {exc}", file=sys.stderr)
            return exc.code
        except SessionError as exc:  # an unknown session, a closed one, an empty message
            print(f"fxdesk: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        except StoreError as exc:
            print(f"fxdesk: {exc.user_message}", file=sys.stderr)
            return ExitCode.DATA
        finally:
            await app.stop()

    return asyncio.run(main())
