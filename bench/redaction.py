"""What masking registered keys (``logs.redact``) costs a tool's output, and what the path
policy (``tools/protected.py``) costs a search.

Run: python -m bench.redaction [KEYS]

- redact: a typical result (16 KiB, the model's cap), a long command output (1 MiB), and the
  largest a command keeps (64 MiB), with KEYS registered keys (default 3), none of them present
  (the common case: every form is searched for and nothing is found), and with one key
  printed a thousand times.
- policy: building the lists for one call, and grep over a folder of 10 000 files with and
  without the hidden-path checks.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fxdesk import logs
from fxdesk.tools import files, search, textfiles
from fxdesk.tools.base import ToolContext
from fxdesk.tools.protected import PathPolicy
from fxdesk.tools.search import GrepTool
from tests.leaks import make_key


def timed(work: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return times


def show(what: str, times: list[float]) -> None:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(f"{what:58} median {statistics.median(times) * 1000:9.3f} ms  p99 {p99 * 1000:9.3f} ms")


def bench_redact(keys: int) -> None:
    registered = [make_key() for _ in range(keys)]
    for key in registered:
        logs.register_secret(key)
    line = "build step 42: compiling module foo/bar.py with flags -O2 -g\n"
    for size, repeat in ((16 * 1024, 2000), (1024 * 1024, 100), (64 * 1024 * 1024, 5)):
        text = (line * (size // len(line) + 1))[:size]
        show(
            f"redact {size // 1024} KiB, {keys} keys, none present",
            timed(lambda text=text: logs.redact(text), repeat),  # type: ignore[misc]
        )
        hits = text[: size // 2] + (registered[0] + "\n") * 1000 + text[size // 2 :]
        show(
            f"redact {size // 1024} KiB, one key printed 1000 times",
            timed(lambda hits=hits: logs.redact(hits), repeat),  # type: ignore[misc]
        )


def bench_policy() -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for index in range(10_000):
            sub = workspace / f"d{index // 100}"
            sub.mkdir(exist_ok=True)
            (sub / f"f{index}.txt").write_text(f"line {index}\nneedle {index}\n")
        ctx = ToolContext(workspace, "s", "w", "c", data_dir=workspace / "data")
        show("PathPolicy.make (the lists for one call)", timed(lambda: textfiles.policy(ctx), 500))

        def grep() -> None:
            asyncio.run(GrepTool().run({"pattern": "needle 9999$"}, ctx))

        def nothing(ctx: ToolContext) -> PathPolicy:
            return PathPolicy(ctx.workspace, (), ())

        real = textfiles.policy
        with_checks: list[float] = []
        without: list[float] = []
        grep()  # the page cache warm for both
        for _ in range(10):  # alternating, so neither gets the warmer machine
            with_checks += timed(grep, 1)
            for module in (textfiles, files, search):
                module.policy = nothing  # type: ignore[attr-defined]
            without += timed(grep, 1)
            for module in (textfiles, files, search):
                module.policy = real  # type: ignore[attr-defined]
        show("grep 10 000 files, hidden-path checks", with_checks)
        show("grep 10 000 files, no checks (for comparison)", without)


def main() -> None:
    keys = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    bench_redact(keys)
    bench_policy()


if __name__ == "__main__":
    main()
