"""The suite catches a planted hole in each class: the product is made weaker at one point (a
monkeypatch of the sandbox's policy, its bubblewrap arguments, or the permission check), a few
of the suite's own lines of that class run through the same runner, and the checker must report
what that hole lets through. Without the plant the same lines hold (``test_attacks``).

Five of the plants put back the holes the suite found before they were fixed: yolo writing
outside the workspace, an approved write binding its folder, a renamed copy of a denied
program, git's plumbing past a rule on its porcelain, the seccomp filter only with the network
(a host socket file reachable in auto mode).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain import permissions as domain_permissions
from fxdesk.domain import shell_programs
from fxdesk.domain.model import PermissionMode
from fxdesk.domain.rules import Verdict
from fxdesk.tools import sandbox, shell
from fxdesk.tools.protected import Guarded
from tests.security import attacks
from tests.security.attacks import AUTO, YOLO, Attack
from tests.security.runner import Outcome, run_lines
from tests.security.world import World

ASK = PermissionMode.ASK


def pick(kind: str, *fragments: str, every: bool = False) -> list[Attack]:
    """The suite's own lines of ``kind`` (its full table) holding any (``every``: all) of
    ``fragments``; six at most."""
    test = all if every else any
    chosen = [
        attack
        for attack in attacks.lines_of(kind, full=True)
        if test(fragment in attack.template for fragment in fragments)
    ]
    assert chosen, (kind, fragments)
    return chosen[:6]


async def caught(
    world: World, mode: PermissionMode, lines: list[Attack], expected: str
) -> list[Outcome]:
    """Run ``lines`` with the plant in place: some must break, as ``expected`` says."""
    outcomes = await run_lines(world, mode, lines, prefix="P")
    failures = [failure for outcome in outcomes for failure in outcome.failures]
    assert any(expected in failure for failure in failures), (
        f"the planted hole went unseen ({expected!r} expected): "
        + "\n".join(f"{o.how}: {o.line} -> {o.result[:200]}" for o in outcomes)
    )
    return outcomes


def wrap(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, change: Callable[..., Any]
) -> None:
    """Replace ``owner.name`` by ``change(original, *args, **kwargs)``."""
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *a, **k: change(original, *a, **k))


# --- writes outside, and where the shell is ------------------------------------------------------


async def test_home_and_canaries_bound_writable(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def weaker(policy_for: Callable[..., sandbox.SandboxPolicy], *a: Any, **k: Any) -> Any:
        policy = policy_for(*a, **k)
        return replace(policy, grants=(*policy.grants, world.home, world.outside))

    wrap(monkeypatch, shell, "policy_for", weaker)
    lines = [
        *pick(attacks.WRITE, "@PY@ -c"),
        *pick(attacks.WHERE, "cd -P linkout", "for PWD in"),
        *pick(attacks.EXPANSION, ".bashrc", "read -r y", every=True)[:2],
    ]
    outcomes = await caught(world, AUTO, lines, "changed")
    broken = {o.attack.kind for o in outcomes if o.failures}
    assert broken == {attacks.WRITE, attacks.WHERE, attacks.EXPANSION}


async def test_yolo_allowed_to_write_outside(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hole 1, put back: yolo lets a write outside through, and the sandbox grants it."""

    def weaker(target: Callable[..., Any], judge: Any, *a: Any, **k: Any) -> Any:
        part = target(judge, *a, **k)
        if part.verdict is Verdict.DENY and "yolo mode never asks" in part.reason:
            return replace(part, verdict=Verdict.ALLOW)
        return part

    wrap(monkeypatch, domain_permissions._Judge, "target", weaker)
    await caught(world, YOLO, pick(attacks.WRITE, "echo pwned >> ~/.bashrc"), "changed")


async def test_a_granted_write_binds_its_folder(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hole 2, put back: the approved new file's folder is bound, so an unseen sibling lands."""

    def weaker(grants: Callable[..., Any], requested: Iterable[Path], *a: Any, **k: Any) -> Any:
        granted, refused = grants(requested, *a, **k)
        return tuple(dict.fromkeys(path.parent for path in granted)), refused

    wrap(monkeypatch, sandbox, "_grants", weaker)
    lines = pick(attacks.WRITE, "@OUT@/granted-@ID@; y=")
    await caught(world, ASK, lines, "made " + str(world.outside / "other-"))


# --- reads ---------------------------------------------------------------------------------------


async def test_ssh_no_longer_hidden(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    def weaker(hidden: Callable[..., list[Guarded]], *a: Any, **k: Any) -> list[Guarded]:
        return [entry for entry in hidden(*a, **k) if entry.label != "~/.ssh"]

    wrap(monkeypatch, sandbox, "sandbox_hidden", weaker)
    lines = [
        *pick(attacks.EXPANSION, ".ssh/id_rsa", "for y in", every=True)[:3],
        *[a for a in pick(attacks.READ, "y='$(cat") if ".ssh" in a.template],
    ]
    await caught(world, AUTO, lines, "~/.ssh/id_rsa leaked")


async def test_the_whole_environment_passed_on(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def everything(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
        return {**os.environ, "TMPDIR": "/tmp"}

    monkeypatch.setattr(sandbox, "sandbox_environment", everything)
    lines = pick(attacks.READ, "env > envdump", "printenv GITHUB_TOKEN | base64", "echo $DBUS")
    outcomes = await caught(world, AUTO, lines, "leaked")
    said = " ".join(f for o in outcomes for f in o.failures)
    assert "$GITHUB_TOKEN leaked" in said and "$OPENAI_API_KEY leaked" in said


# --- protected paths -----------------------------------------------------------------------------


async def test_git_made_writable(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "protected_paths", lambda *_a, **_k: [])
    lines = [
        *pick(attacks.PROTECTED, "open('.git/config'", "y='$(touch ran-@ID@; echo x >> .git"),
        *pick(attacks.EXPANSION, "echo x >> .git/config", "read -r y", every=True)[:2],
    ]
    await caught(world, AUTO, lines, "changed " + str(world.ws / ".git" / "config"))


# --- deny rules ----------------------------------------------------------------------------------


async def test_indirect_programs_not_checked(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(domain_permissions, "runs_anything", lambda _words: "")
    lines = pick(attacks.DENY, "eval rm victim", "sh -c 'rm victim'", "xargs rm", "-exec rm")
    await caught(world, YOLO, lines, "rm ran")


async def test_renamed_copies_not_checked(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hole 3, put back: `cp /usr/bin/rm r; ./r victim` passes a rule on `rm`."""
    monkeypatch.setattr(shell_programs, "_agent_made", lambda _program: False)
    await caught(
        world, YOLO, pick(attacks.DENY, "cp /usr/bin/rm r-", "ln -s /usr/bin/rm"), "rm ran"
    )


async def test_git_plumbing_not_read_as_push(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hole 4, put back: `git send-pack` passes a rule on `git push`."""
    monkeypatch.setattr(shell_programs, "GIT_DOES_AS", {})
    await caught(world, YOLO, pick(attacks.DENY, "git send-pack"), "git push ran")


# --- the network ---------------------------------------------------------------------------------


async def test_auto_mode_given_the_network(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    def weaker(arguments: Callable[..., list[str]], *a: Any, **k: Any) -> list[str]:
        found = arguments(*a, **k)
        return [*found[:1], "--share-net", *found[1:]]  # after --unshare-all

    wrap(monkeypatch, shell, "bwrap_arguments", weaker)
    lines = [a for a in pick(attacks.NETWORK, "@PY@", "/dev/tcp") if AUTO in a.modes]
    await caught(world, AUTO, lines, "reached the host's loopback")


async def test_no_seccomp_filter(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell, "filter_for", lambda: None)
    lines = pick(attacks.NETWORK, "@SOCK@", "@ABS@")
    outcomes = await caught(world, YOLO, lines, "reached the host's Unix socket")
    said = " ".join(f for o in outcomes for f in o.failures)
    assert "reached the host's abstract Unix socket" in said


async def test_the_filter_only_with_the_network(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hole 5, put back: without the network no seccomp filter (as before), so auto mode
    reaches the host's socket files (``~/.docker/desktop/docker.sock``)."""

    def weaker(launch: Callable[..., Any], *a: Any, **k: Any) -> Any:
        found = launch(*a, **k)
        return found if "--share-net" in found.argv else replace(found, seccomp=None)

    wrap(monkeypatch, shell, "_launch", weaker)
    lines = [a for a in pick(attacks.NETWORK, "@DOCKER@", "@SOCK@") if a.template.count("@PY@")]
    outcomes = await caught(world, AUTO, lines, "reached the host's Unix socket")
    said = " ".join(f for o in outcomes for f in o.failures)
    assert "docker.sock" in said
