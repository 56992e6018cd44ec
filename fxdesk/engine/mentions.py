"""Workspace files for the composer's ``@`` completion, and the files a message mentions attached
to it when it is sent (issue 18 item 6; the syntax and the ranking: ``domain/mentions.py``).

Only files inside the workspace are listed or attached (a mention that resolves outside it, a
folder, or nothing at all stays plain text). A git repository lists what git tracks plus new
files it does not ignore; another folder is walked without the usual dependency and build
folders, up to ``MAX_FILES``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fxdesk.domain.mentions import MAX_ATTACHED_BYTES, Mention, mentions
from fxdesk.tools.protected import NOT_SEARCHED  # the folders of packages and build output

MAX_FILES = 20_000


def list_files(folder: Path) -> list[str]:
    """The workspace's files, relative, sorted (blocking: run it off the event loop)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "-co", "--exclude-standard", "-z"],
            capture_output=True,
            timeout=10,
            check=False,
        )
        if done.returncode == 0:
            names = done.stdout.decode("utf-8", "replace").split("\0")
            return sorted(n for n in names if n)[:MAX_FILES]
    except (OSError, subprocess.TimeoutExpired):
        pass
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in NOT_SEARCHED)
        base = Path(root).relative_to(folder)
        found += [str(base / name) if str(base) != "." else name for name in sorted(files)]
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


def attach(folder: Path, text: str) -> str:
    """``text`` with the text of every workspace file it mentions appended (a range: those
    lines), each in an ``<attached>`` block the model reads (blocking)."""
    blocks = [block for m in mentions(text) if (block := _block(folder, m)) is not None]
    return text if not blocks else text + "\n\n" + "\n\n".join(blocks)


def _block(folder: Path, mention: Mention) -> str | None:
    root = folder.resolve()
    try:
        path = (root / mention.path).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not path.is_relative_to(root) or not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_ATTACHED_BYTES + 1)
    except OSError:
        return None
    cut = len(raw) > MAX_ATTACHED_BYTES
    body = raw[:MAX_ATTACHED_BYTES].decode("utf-8", "replace")
    lines = ""
    if mention.first is not None:
        last = mention.last or mention.first
        body = "\n".join(body.splitlines()[mention.first - 1 : last])
        lines = f' lines="{mention.first}-{last}"'
    note = f"\n[cut at {MAX_ATTACHED_BYTES:,} bytes]" if cut and not lines else ""
    return f'<attached file="{mention.path}"{lines}>\n{body.rstrip()}{note}\n</attached>'
