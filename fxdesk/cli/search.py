"""``fxdesk search QUERY``: what was said, in every session (issue 18 item 4).

Every word must appear (in any order) as the start of a word; "a phrase" in quotes matches as
a phrase. Prints one line per message, best match first: the session, who said it, and the
words around the match with the matches in [brackets]; ``--json`` for scripts.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import execute
from fxdesk.domain.search import SearchHit
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine

WHO = {"user": "you", "assistant": "agent"}


def register(commands: Any) -> None:
    search = commands.add_parser("search", help="find what was said in any session")
    search.add_argument("query", nargs="+", help='words to find (all of them; "a phrase")')
    search.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(handler=cmd_search)


def hit_json(hit: SearchHit) -> dict[str, Any]:
    return {
        "session_id": hit.session_id,
        "session": hit.session_name,
        "entry_id": hit.entry_id,
        "seq": hit.seq,
        "who": hit.kind,
        "snippet": hit.plain_snippet("[", "]"),
        "created_at_ms": hit.created_at_ms,
        "archived": hit.archived,
    }


def cmd_search(args: argparse.Namespace, paths: DataPaths) -> int:
    text = " ".join(args.query)

    async def body(engine: Engine) -> int:
        hits = await engine.search(text, max(1, args.limit))
        if args.json:
            print(json.dumps([hit_json(h) for h in hits], indent=2, ensure_ascii=False))
            return ExitCode.OK
        if not hits:
            print(f"nothing said matches “{text}”")
        for hit in hits:
            snippet = " ".join(hit.plain_snippet("[", "]").split())
            closed = " (closed)" if hit.archived else ""
            print(
                f"{hit.session_id[:8]}  {hit.session_name[:30]}{closed} · "
                f"{WHO.get(hit.kind, hit.kind)}: {snippet}"
            )
        return ExitCode.OK

    return execute(paths, body, with_engine=False)
