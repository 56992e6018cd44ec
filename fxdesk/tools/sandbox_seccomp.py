"""The seccomp filter of every sandboxed command: no Unix sockets of its own.

A Unix socket is reached two ways, and neither is covered by the sandbox's other walls:

- *at a path* (``~/.docker/desktop/docker.sock``, ``~/.1password/agent.sock``, any socket file a
  program of the person's made outside ``/run`` and ``/tmp``, which are hidden): ``connect``
  goes through the file system, which the command sees read-only, and a read-only mount does
  not stop a connect; a network namespace of its own does not either. With or without the
  network, then (the attack suite found this in auto mode: docs/security-suite.md).
- *abstract* (no file: X11's ``@/tmp/.X11-unix/X0``, which takes keystrokes and screenshots;
  some D-Bus buses; any program's private ``@name``): they live in a network namespace, the
  host's when the command has the network; off, its own has none.

The filter makes ``socket(AF_UNIX, …)`` fail with EPERM, so nothing can connect to either;
``socketpair`` stays allowed (pipes between processes: Node, cargo, Python's subprocesses and
multiprocessing's ``fork`` and ``spawn`` use it). A Unix socket of the command's own goes too
(Python's ``forkserver``, ``tmux``, a server on a socket file); docs/sandbox.md lists what that
breaks, measured. seccomp cannot read the address a ``connect`` names (a pointer), so it cannot
let a command's own socket through and refuse the host's.

Also refused: ``io_uring_setup`` (and its two companions), because io_uring makes sockets
without the ``socket`` call, and so would get round the filter. Not refused: ``ptrace`` and
``process_vm_readv``/``writev`` (Codex refuses them): in a PID namespace of its own a command
can only reach its own processes, and refusing them would break ``strace`` and debuggers for
nothing; ``personality`` (Docker filters some flags): it weakens only the caller's own memory
layout.

The filter is classic BPF, assembled here with ``struct`` (no library), for x86_64 and aarch64,
the two architectures fxdesk runs on; on any other (``filter_for`` returns None) commands run
without it. A system call of another architecture than the machine's (a 32-bit x86 program on
x86_64 reaches ``socketcall``, whose arguments a filter cannot read; x32's numbers) ends the
process: no 32-bit programs in the sandbox.

bubblewrap installs the filter (``--seccomp FD``) right before it starts the command, so
bubblewrap itself is not under it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import struct
from collections.abc import Iterator
from dataclasses import dataclass

# <linux/audit.h>: the architecture tag of seccomp_data.arch.
_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_AARCH64 = 0xC00000B7
# x86_64's x32 system calls carry this bit in their number.
_X32_SYSCALL_BIT = 0x40000000

_AF_UNIX = 1
_EPERM = 1

# <linux/bpf_common.h> and <linux/seccomp.h>
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]. The
# machines here are little-endian: an argument's low 32 bits come first.
_NR, _ARCH, _ARG0 = 0, 4, 16


@dataclass(frozen=True)
class _Arch:
    audit: int
    socket: int
    refused: tuple[int, ...]  # io_uring_setup, io_uring_enter, io_uring_register
    x32: bool  # numbers with _X32_SYSCALL_BIT are another ABI


_ARCHES = {
    "x86_64": _Arch(_AUDIT_ARCH_X86_64, socket=41, refused=(425, 426, 427), x32=True),
    "aarch64": _Arch(_AUDIT_ARCH_AARCH64, socket=198, refused=(425, 426, 427), x32=False),
}


@functools.cache
def filter_for(machine: str | None = None) -> bytes | None:
    """The filter as bubblewrap reads it (``struct sock_filter`` one after the other), for
    ``machine`` (default: this one's, ``platform.machine()``); None where there is none."""
    arch = _ARCHES.get(machine or platform.machine())
    return None if arch is None else _assemble(_program(arch))


@contextlib.contextmanager
def passed_to_bwrap(program: bytes | None) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """bubblewrap's arguments and the descriptors to pass for ``program`` (none for None),
    for the time it takes to start the command: ``--seccomp FD`` reads it from a pipe (8 bytes
    an instruction, far below the pipe's 64 KiB), closed here once the child holds its copy."""
    if program is None:
        yield [], ()
        return
    read, write = os.pipe()
    try:
        os.write(write, program)
        os.close(write)
        write = -1
        yield ["--seccomp", str(read)], (read,)
    finally:
        os.close(read)
        if write != -1:
            os.close(write)


# One instruction: (code, jump-if-true, jump-if-false, k); a jump names a label, not a distance.
_Instruction = tuple[int, str | None, str | None, int]


def _program(arch: _Arch) -> list[_Instruction | str]:
    """The instructions, with labels as plain strings where they stand."""
    program: list[_Instruction | str] = [
        (_LD_W_ABS, None, None, _ARCH),
        (_JEQ_K, None, "kill", arch.audit),
        (_LD_W_ABS, None, None, _NR),
    ]
    if arch.x32:
        program.append((_JGE_K, "kill", None, _X32_SYSCALL_BIT))
    program += [(_JEQ_K, "refuse", None, number) for number in arch.refused]
    program += [
        (_JEQ_K, None, "allow", arch.socket),
        (_LD_W_ABS, None, None, _ARG0),
        (_JEQ_K, "refuse", "allow", _AF_UNIX),
        "allow",
        (_RET_K, None, None, _RET_ALLOW),
        "refuse",
        (_RET_K, None, None, _RET_ERRNO | _EPERM),
        "kill",
        (_RET_K, None, None, _RET_KILL_PROCESS),
    ]
    return program


def _assemble(program: list[_Instruction | str]) -> bytes:
    """Labels resolved to forward distances (classic BPF jumps only forward), packed."""
    instructions = [item for item in program if not isinstance(item, str)]
    labels: dict[str, int] = {}
    index = 0
    for item in program:
        if isinstance(item, str):
            labels[item] = index
        else:
            index += 1
    out = bytearray()
    for here, (code, true, false, k) in enumerate(instructions):
        jt = 0 if true is None else labels[true] - here - 1
        jf = 0 if false is None else labels[false] - here - 1
        out += struct.pack("=HBBI", code, jt, jf, k)
    return bytes(out)
