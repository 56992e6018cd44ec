"""The ``fxdesk`` command: the window with no subcommand, headless subcommands otherwise.

Each command group (``sessions``, ``approvals``, ``profiles``, ``doctor``, ``window``) registers
its own subparsers with a ``handler``; ``main`` parses and calls it. Groups import the engine
only inside their handlers, so ``fxdesk --help`` and ``--version`` stay quick.
"""

from fxdesk.cli.main import main

__all__ = ["main"]
