"""What the sandbox costs per command: bubblewrap, and Landlock for comparison, against a bare
``bash -c``.

Two levels, each RUNS times per command, alternating the variants so that a slow moment of the
shared machine hits them all alike:

- the process: spawn and wait for ``bash -c CMD`` bare, under bubblewrap with the policy
  run_command builds, and under Landlock (read-only but for the workspace and /tmp) applied two
  ways: by a helper process that restricts itself and then runs bash (what a product would ship:
  Landlock can only restrict the calling process), and in the forked child before exec
  (``preexec_fn``: the cheapest possible, and unsafe in a threaded program such as fxdesk);
- the tool: ``RunCommandTool.run`` sandboxed and not (the policy, the probe's cached answer, the
  thread hop, the output pumps included).

Run: python -m bench.sandbox_overhead [RUNS]   (default 200)
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fxdesk.tools.base import ToolContext
from fxdesk.tools.sandbox_probe import sandbox_status
from fxdesk.tools.shell import BASH, RunCommandTool, _launch

COMMANDS = {
    "true": "true",
    "small script": "for f in *; do echo $f; done | wc -l; ls -la >/dev/null; "
    "grep -c root /etc/passwd; date +%s >/dev/null",
}

# Landlock (linux/landlock.h), x86_64 and aarch64 share the syscall numbers.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_PATH_BENEATH = 1
_EXECUTE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 2, 1 << 3
_ALL_FS = (1 << 16) - 1  # every file-system right up to ABI 5 (IOCTL_DEV)
_PR_SET_NO_NEW_PRIVS = 38

# The same restriction as a helper program: restrict itself, then exec the command.
LANDLOCK_HELPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64)]
class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]
ALL = (1 << 16) - 1
READ = 1 | 4 | 8
ruleset = libc.syscall(444, ctypes.byref(Ruleset(ALL)), ctypes.sizeof(Ruleset), 0)
def allow(path, rights):
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    libc.syscall(445, ruleset, 1, ctypes.byref(Beneath(rights, fd)), 0)
    os.close(fd)
allow("/", READ)
allow("/dev/null", 2 | 4)
for path in sys.argv[1].split(":"):
    allow(path, ALL)
libc.prctl(38, 1, 0, 0, 0)
if libc.syscall(446, ruleset, 0) != 0:
    raise SystemExit("landlock_restrict_self failed")
os.execv(sys.argv[2], sys.argv[2:])
"""


def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(_CREATE_RULESET, None, 0, 1))


def landlock_in_child(writable: list[str]) -> Callable[[], None]:
    """A ``preexec_fn`` that restricts the forked child to reading, and writing ``writable``."""

    class Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64)]

    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    libc = ctypes.CDLL(None, use_errno=True)

    def restrict() -> None:
        ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(Ruleset(_ALL_FS)), 8, 0)
        rules = [("/", _EXECUTE | _READ_FILE | _READ_DIR), ("/dev/null", 2 | _READ_FILE)]
        for path, rights in [*rules, *((p, _ALL_FS) for p in writable)]:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(Beneath(rights, fd)), 0)
            os.close(fd)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")

    return restrict


def spawn(
    argv: list[str], cwd: Path, env: dict[str, str], preexec: Callable[[], None] | None = None
) -> float:
    began = time.perf_counter()
    subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=preexec,
        check=True,
    )
    return time.perf_counter() - began


def summary(seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return f"median {statistics.median(ms):6.2f} ms   p99 {p99:6.2f} ms"


def process_level(runs: int, workspace: Path, ctx: ToolContext) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    abi = landlock_abi()
    writable = [str(workspace), "/tmp"]
    helper = [sys.executable, "-I", "-c", LANDLOCK_HELPER, ":".join(writable)]
    in_child = landlock_in_child(writable)
    for name, command in COMMANDS.items():
        bwrap = _launch(command, ctx, True)
        variants: dict[str, Callable[[], float]] = {
            "bare bash -c": lambda c=command: spawn([BASH, "-c", c], workspace, env),
            "bubblewrap": lambda b=bwrap: spawn(b.argv, workspace, b.env),
        }
        if abi > 0:
            variants["landlock, helper process"] = lambda c=command: spawn(
                [*helper, BASH, "-c", c], workspace, env
            )
            variants["landlock, in the child"] = lambda c=command: spawn(
                [BASH, "-c", c], workspace, env, in_child
            )
        times: dict[str, list[float]] = {label: [] for label in variants}
        for _ in range(runs):
            for label, run in variants.items():
                times[label].append(run())
        print(f"\n{name!r}, {runs} runs each (the process: spawn to exit)")
        base = statistics.median(times["bare bash -c"])
        for label, seconds in times.items():
            extra = (statistics.median(seconds) - base) * 1000
            print(f"  {label:26} {summary(seconds)}   +{extra:5.2f} ms")
    print(f"\nLandlock ABI here: {abi if abi > 0 else 'not available'}")


async def tool_level(runs: int, workspace: Path, ctx: ToolContext) -> None:
    sandboxed, bare = RunCommandTool(), RunCommandTool()
    bare.use_sandbox = False
    for name, command in COMMANDS.items():
        times: dict[str, list[float]] = {"run_command, bare": [], "run_command, sandboxed": []}
        for _ in range(runs):
            for label, tool in (("run_command, bare", bare), ("run_command, sandboxed", sandboxed)):
                began = time.perf_counter()
                result = await tool.run({"command": command}, ctx)
                times[label].append(time.perf_counter() - began)
                assert result.ok, result.output
        print(f"\n{name!r}, {runs} runs each (the tool: call to result)")
        for label, seconds in times.items():
            print(f"  {label:26} {summary(seconds)}")


def sanity(workspace: Path, ctx: ToolContext) -> None:
    """Each variant really confines: a write outside the workspace fails."""
    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        line = f"echo x > {outside}/f"
        env = {"PATH": os.environ["PATH"]}
        bwrap = _launch(line, ctx, True)
        assert subprocess.run(bwrap.argv, cwd=workspace, env=bwrap.env).returncode != 0
        if landlock_abi() > 0:
            writable = [str(workspace), "/tmp"]
            helper = [sys.executable, "-I", "-c", LANDLOCK_HELPER, ":".join(writable)]
            assert subprocess.run([*helper, BASH, "-c", line], env=env).returncode != 0
            restricted = subprocess.run(
                [BASH, "-c", line], env=env, preexec_fn=landlock_in_child(writable)
            )
            assert restricted.returncode != 0
        assert not (outside / "f").exists()
    finally:
        shutil.rmtree(outside)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    status = sandbox_status()
    if not status.available:
        raise SystemExit(f"no sandbox here: {status.reason}")
    print(f"bubblewrap {status.version} ({status.bwrap}), {os.cpu_count()} CPUs")
    workspace = Path(tempfile.mkdtemp(prefix="fxdesk-bench-", dir="/var/tmp")).resolve()
    try:
        for i in range(20):
            (workspace / f"file{i}").write_text("x")
        ctx = ToolContext(workspace, "bench", "w", "c")
        sanity(workspace, ctx)
        process_level(runs, workspace, ctx)
        asyncio.run(tool_level(runs, workspace, ctx))
    finally:
        shutil.rmtree(workspace)


if __name__ == "__main__":
    main()
