"""``fxdesk export SESSION`` and ``fxdesk import FILE`` (issue 18 item 5), and
``fxdesk changes SESSION`` (item 1: what a session changed; ``--patch`` for every diff).

An export is JSON (complete: import reads it back) or Markdown (``--markdown``, to read), of one
session or its whole tree (``--tree``), to standard output or a file (``-o``). API keys are never
in it: profiles are only named, and every known key is masked in every text. An import makes new
sessions (it never overwrites anything) in the folder the export came from, or ``--workspace``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.transfer import TransferError, to_markdown
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine


def register(commands: Any) -> None:
    export = commands.add_parser("export", help="a session (or its tree) as JSON or Markdown")
    export.add_argument("session", help="a session id (or unique prefix)")
    export.add_argument("--tree", action="store_true", help="its root and every sub-agent")
    export.add_argument("--markdown", action="store_true", help="to read (JSON: to import)")
    export.add_argument("-o", "--output", metavar="FILE", help="write FILE (default: stdout)")
    export.set_defaults(handler=cmd_export)
    imported = commands.add_parser("import", help="an exported session (or tree) as new ones")
    imported.add_argument("file", help="a JSON export (- for standard input)")
    imported.add_argument("--workspace", metavar="DIR", help="the folder the sessions belong to")
    imported.set_defaults(handler=cmd_import)
    changed = commands.add_parser("changes", help="what a session changed in its workspace")
    changed.add_argument("session", help="a session id (or unique prefix)")
    changed.add_argument("--patch", action="store_true", help="print every diff (git apply)")
    changed.add_argument("--json", action="store_true", help="print JSON")
    changed.set_defaults(handler=cmd_changes)


def cmd_changes(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        found = await engine.changes(session.id)
        if args.patch:
            sys.stdout.write(found.patch())
        elif args.json:
            files = [
                {
                    "path": c.path,
                    "status": c.status,
                    "added": c.added,
                    "removed": c.removed,
                    "by_session": c.by_session,
                }
                for c in found.files
            ]
            print(json.dumps({"git": found.git, "note": found.note, "files": files}, indent=2))
        else:
            if found.note:
                print(found.note)
            for c in found.files:
                by = "  (this session)" if c.by_session else ""
                print(f"{c.status:<9} +{c.added:<5} -{c.removed:<5} {c.path}{by}")
            if not found.files:
                print("no changes")
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def cmd_export(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        try:
            document = await engine.export(session.id, whole_tree=args.tree)
        except TransferError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from exc
        text = (
            to_markdown(document)
            if args.markdown
            else json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        )
        if args.output:
            await asyncio.to_thread(Path(args.output).write_text, text, encoding="utf-8")
            count = len(document["sessions"])
            print(f"exported {count} session{'s' if count != 1 else ''} to {args.output}")
        else:
            sys.stdout.write(text)
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def cmd_import(args: argparse.Namespace, paths: DataPaths) -> int:
    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        print(f"fxdesk: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return ExitCode.USAGE

    async def body(engine: Engine) -> int:
        try:
            text = raw.decode("utf-8")
            sessions = await engine.import_export(text, args.workspace)
        except UnicodeDecodeError as exc:
            raise CommandError(f"{args.file} is not UTF-8 text ({exc.reason})") from exc
        except TransferError as exc:
            raise CommandError(f"cannot import {args.file}: {exc}") from exc
        for session in sessions:
            print(f"imported {session.id}  {session.name}")
        return ExitCode.OK

    return execute(paths, body, with_engine=False)
