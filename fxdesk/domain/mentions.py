"""``@`` mentions of workspace files in a message (issue 18 item 6).

The composer completes ``@`` with workspace files, ranked by ``fuzzy_rank`` (the letters typed, in
order, anywhere in the path; a match at the start of a name or of a path part, and consecutive
letters, rank higher; shorter paths first on a tie). When the message is sent, each mention
(``@src/app.py`` or a range ``@src/app.py:10-40``) is attached: ``attachments`` names them,
and the engine reads them (inside the workspace only, and not too large) and adds their text
to the message the model gets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "@path" or "@path:12" or "@path:12-40"; a path is what a shell would take without quoting.
_MENTION = re.compile(r"(?<![\w@])@([\w./\-+~]+?)(?::(\d+)(?:-(\d+))?)?(?=$|[\s,;:!?)\]]|\.\s)")
MAX_ATTACHED_BYTES = 200_000  # per file: more is cut, and the message says so


@dataclass(frozen=True)
class Mention:
    path: str
    first: int | None = None  # 1-based line numbers, inclusive
    last: int | None = None

    @property
    def label(self) -> str:
        if self.first is None:
            return self.path
        end = f"-{self.last}" if self.last is not None and self.last != self.first else ""
        return f"{self.path}:{self.first}{end}"


def mentions(text: str) -> list[Mention]:
    """The files ``text`` mentions with ``@``, each once, in order."""
    found: dict[str, Mention] = {}
    for match in _MENTION.finditer(text):
        first = int(match.group(2)) if match.group(2) else None
        last = int(match.group(3)) if match.group(3) else first
        mention = Mention(match.group(1).rstrip("."), first, last)
        found.setdefault(mention.label, mention)
    return list(found.values())


def fuzzy_score(query: str, path: str) -> int | None:
    """How well ``path`` matches ``query`` (higher is better), or None when it does not."""
    if not query:
        return 0
    q, p = query.casefold(), path.casefold()
    score, at, run = 0, 0, 0
    for char in q:
        found = p.find(char, at)
        if found < 0:
            return None
        if found == at and at > 0:
            run += 1
            score += 5 * run  # consecutive letters
        else:
            run = 0
        if found == 0 or p[found - 1] in "/._-":
            score += 10  # the start of a name or a part of it
        score -= min(found - at, 10)  # a gap costs a little
        at = found + 1
    name_start = p.rfind("/") + 1
    if q in p[name_start:]:
        score += 25  # the letters are in the file's own name
    return score


def fuzzy_rank(query: str, paths: list[str], limit: int = 50) -> list[str]:
    """The paths that match ``query``, best first (shorter paths first on a tie)."""
    scored = [(score, path) for path in paths if (score := fuzzy_score(query, path)) is not None]
    scored.sort(key=lambda pair: (-pair[0], len(pair[1]), pair[1]))
    return [path for _score, path in scored[:limit]]
