"""Issue 11's attack suite: every class of attack line, end to end through ``run_command`` in
ask, auto and yolo mode (``runner``), and what must hold after each line (``checker``): nothing
outside the workspace (or protected) changed but what the person allowed, no planted secret in
anything the agent can see, no denied program ran, the host's network and sockets not reached.

A line either was refused or asked and denied by the check, or ran and the sandbox held. Lines
whose payload marks that it ran (``ran-<id>``) must have run it whenever the check let them
through: the suite proves the sandbox held against a live attack, not against a typo.

``FXDESK_ATTACKS=full`` runs every combination of the generated forms (docs/security-suite.md).
"""

from __future__ import annotations

import os

import pytest

from fxdesk.domain.model import PermissionMode
from tests.security.attacks import CLASSES, MODES, Attack, known_holes, lines_of
from tests.security.runner import Outcome, run_lines, summary
from tests.security.world import World

FULL = os.environ.get("FXDESK_ATTACKS") == "full"


def broken(outcomes: list[Outcome]) -> list[str]:
    return [outcome.describe() for outcome in outcomes if outcome.failures]


@pytest.mark.parametrize("kind", CLASSES)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
async def test_attack_lines_hold(world: World, mode: PermissionMode, kind: str) -> None:
    outcomes = await run_lines(world, mode, lines_of(kind, FULL))
    print(f"{mode.value} {kind}: {summary(outcomes)}")
    assert outcomes
    failures = broken(outcomes)
    assert not failures, "\n".join(failures)
    dead = [o.line for o in outcomes if o.attack.live and o.ran and not o.live]
    assert not dead, f"payloads that did not run although the check let them: {dead}"


# The holes this suite found, fixed since: each line stays here, in the modes it broke.
FOUND = [
    pytest.param(attack, mode, id=f"{mode.value}-{index}")
    for index, attack in enumerate(known_holes())
    for mode in MODES
    if mode in attack.modes
]


@pytest.mark.parametrize(("attack", "mode"), FOUND)
async def test_holes_the_suite_found_stay_closed(
    world: World, attack: Attack, mode: PermissionMode
) -> None:
    """``attack.hole`` says what broke (a nested repository's .git was writable; a script
    file run by bash or sh passed a deny rule; a host socket under the home folder was
    reachable in auto mode)."""
    outcomes = await run_lines(world, mode, [attack], prefix="H")
    (outcome,) = outcomes
    assert outcome.live or not outcome.ran, "the payload did not run"
    assert not outcome.failures, outcome.describe()
