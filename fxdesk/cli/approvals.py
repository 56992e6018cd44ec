"""``fxdesk approvals``, ``fxdesk approve``, ``fxdesk rules``: permissions from the terminal.

Approvals answered here reach a waiting fxdesk (window or ``fxdesk run``) within a second; one
answered while nothing waits is used when the work is resumed (``fxdesk resume``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TextIO

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.approvals import Approval, ApprovalNotPending, Choice, ChoiceNotOffered
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine

CHOICES = {
    "once": Choice.ONCE,
    "session": Choice.SESSION,
    "always": Choice.ALWAYS,
    "deny": Choice.DENY,
    "unsandboxed": Choice.ONCE_UNSANDBOXED,
}
# The terminal's question: the digit for each answer. 5 is offered only where it applies.
_PROMPTED = {"1": Choice.ONCE, "2": Choice.SESSION, "3": Choice.ALWAYS, "4": Choice.DENY}
_OUTSIDE_KEY = "5"


def register(commands: Any) -> None:
    approvals = commands.add_parser("approvals", help="pending approvals of every session")
    approvals.add_argument("--json", action="store_true")
    approvals.set_defaults(handler=cmd_approvals)

    approve = commands.add_parser(
        "approve",
        help="answer a pending approval",
        description="once: this action only; session: allow it for the rest of the session; "
        "always: store a workspace rule allowing exactly this; deny: refuse (the model is told, "
        "with --reason); unsandboxed: run this one command outside the sandbox (nothing hides "
        "your files, keys or network from it; commands only, never for the session).",
    )
    approve.add_argument("approval", metavar="ID", help="approval id or unique prefix")
    approve.add_argument("choice", choices=list(CHOICES))
    approve.add_argument("--reason", default="", help="why (deny): the model reads it")
    approve.set_defaults(handler=cmd_approve)

    rules = commands.add_parser("rules", help="permission rules")
    rules.set_defaults(handler=cmd_rules)
    actions = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list rules")
    listing.add_argument("--json", action="store_true")
    add = actions.add_parser(
        "add",
        help="add a rule",
        description="Commands match exactly by default: `--match prefix` also allows longer "
        "commands starting with PATTERN, `--match glob` matches * and ? anywhere. File rules "
        "match paths as globs.",
    )
    add.add_argument("action", choices=["allow", "ask", "deny"])
    add.add_argument("tool", help='a tool name (run_command, edit_file, read_file, ...) or "*"')
    add.add_argument("pattern", help="a command, or a path glob for file tools")
    add.add_argument("--match", choices=["exact", "prefix", "glob"], default="exact")
    where = add.add_mutually_exclusive_group()
    where.add_argument("--workspace", metavar="DIR", help="only in this workspace")
    where.add_argument("--session", metavar="ID", help="only in this session")
    remove = actions.add_parser("remove", help="remove a rule by its number")
    remove.add_argument("rule", type=int, metavar="N")


def describe(approval: Approval, out: TextIO = sys.stdout) -> None:
    """An approval as the terminal shows it: what, where, why, and what is not allowed yet."""
    detail = approval.detail
    print(
        f"approval {approval.id[:12]}  session {approval.session_id}  tool {approval.tool}",
        file=out,
    )
    print(f"  {approval.label}", file=out)
    sandbox = approval.sandbox
    for line in sandbox.lines() if sandbox is not None else []:
        print(f"  {line}", file=out)
    if detail.get("reason"):
        print(f"  why it asks: {detail['reason']}", file=out)
    for part in detail.get("uncovered", []):
        print(f"  not allowed yet: {part}", file=out)
    if approval.explanation:
        print(f"  the agent said: {' '.join(approval.explanation.split())[:300]}", file=out)
    if detail.get("preview"):
        print("  change:", file=out)
        for line in str(detail["preview"]).splitlines()[:40]:
            print(f"    {line}", file=out)


def _as_json(approval: Approval) -> dict[str, Any]:
    data = asdict(approval)
    data["status"] = approval.status.value
    return data


def cmd_approvals(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        pending = await engine.pending_approvals()
        if args.json:
            print(json.dumps([_as_json(a) for a in pending], indent=2))
        elif not pending:
            print("no pending approvals")
        for approval in [] if args.json else pending:
            describe(approval)
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def cmd_approve(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        approval = await engine.find_approval(args.approval)
        if approval is None:
            raise CommandError(f"no approval {args.approval!r} (see `fxdesk approvals`)")
        try:
            answered = await engine.answer_approval(
                approval.id, CHOICES[args.choice], reason=args.reason, by="the command line"
            )
        except ApprovalNotPending as exc:
            print(f"fxdesk: {exc}", file=sys.stderr)
            return ExitCode.FAILED
        except ChoiceNotOffered as exc:
            raise CommandError(str(exc)) from exc
        made = answered.resolution.get("rules") or []
        extra = f"; {len(made)} rule(s) stored" if made else ""
        if answered.unsandboxed:
            extra += ", outside the sandbox"
        print(f"approval {answered.id[:12]}: {answered.status.value.replace('_', ' ')}{extra}")
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def cmd_rules(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        if args.rules_command == "list":
            rules = await engine.rules()
            if args.json:
                print(json.dumps([_rule_json(r) for r in rules], indent=2))
                return ExitCode.OK
            if not rules:
                print("no rules")
            for rule in rules:
                print(_rule_line(rule))
            return ExitCode.OK
        if args.rules_command == "remove":
            if not await engine.remove_rule(args.rule):
                raise CommandError(f"no rule {args.rule} (see `fxdesk rules list`)")
            print(f"removed rule {args.rule}")
            return ExitCode.OK
        scope, key = Scope.GLOBAL, ""
        if args.session:
            scope, key = Scope.SESSION, (await engine.find_session(args.session)).id
        elif args.workspace:
            scope, key = Scope.WORKSPACE, str((await engine.find_workspace(args.workspace)).id)
        rule = await engine.add_rule(
            PermissionRule(
                tool=args.tool,
                pattern=args.pattern,
                action=Verdict(args.action),
                scope=scope,
                match=Match(args.match),
                scope_key=key,
            )
        )
        print(f"rule {rule.id}: {_rule_line(rule)}")
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def _rule_line(rule: PermissionRule) -> str:
    where = rule.scope.value + (f" {rule.scope_key}" if rule.scope_key else "")
    match = "" if rule.match == Match.EXACT else f" ({rule.match.value})"
    return f"{rule.id:>4}  {rule.action.value:<5}  {rule.tool}  {rule.pattern!r}{match}  [{where}]"


def _rule_json(rule: PermissionRule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "tool": rule.tool,
        "pattern": rule.pattern,
        "action": rule.action.value,
        "match": rule.match.value,
        "scope": rule.scope.value,
        "scope_key": rule.scope_key,
    }


async def prompt(engine: Engine, approval: Approval) -> bool:
    """Ask on the terminal; answer the approval. False when the person quit (EOF)."""
    print(file=sys.stderr)
    describe(approval, sys.stderr)
    question = "  [1] allow once  [2] allow for this session  [3] always allow  [4] deny"
    choices = dict(_PROMPTED)
    if approval.offers_outside:
        question += f"  [{_OUTSIDE_KEY}] run outside the sandbox, once (not confined!)"
        choices[_OUTSIDE_KEY] = Choice.ONCE_UNSANDBOXED
    loop = asyncio.get_running_loop()
    while True:
        print(question + " > ", end="", file=sys.stderr, flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return False
        picked = choices.get(line.strip())
        if picked is None:
            continue
        reason = ""
        if picked == Choice.DENY:
            print("  reason for the agent (optional): ", end="", file=sys.stderr, flush=True)
            reason = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        try:
            await engine.answer_approval(approval.id, picked, reason=reason, by="the command line")
        except ApprovalNotPending as exc:
            print(f"fxdesk: {exc}", file=sys.stderr)
        return True
