"""``fxdesk approvals``, ``fxdesk approve``, ``fxdesk rules``: permissions from the terminal.

Approvals answered here reach a waiting fxdesk (window or ``fxdesk run``) within a second; one
answered while nothing waits is used when the work is resumed (``fxdesk resume``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import asdict
from typing import Any, TextIO

from fxdesk.app import App
from fxdesk.commands import EXIT_FAILED, EXIT_OK, CommandError, execute, resolve_session
from fxdesk.domain.approvals import Approval, ApprovalNotPending, Choice
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.paths import DataPaths
from fxdesk.store import repo

CHOICES = {
    "once": Choice.ONCE,
    "session": Choice.SESSION,
    "always": Choice.ALWAYS,
    "deny": Choice.DENY,
}


def describe(approval: Approval, out: TextIO = sys.stdout) -> None:
    """An approval as the terminal shows it: what, where, why, and what is not allowed yet."""
    detail = approval.detail
    print(
        f"approval {approval.id[:12]}  session {approval.session_id}  tool {approval.tool}",
        file=out,
    )
    print(f"  {approval.label}", file=out)
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
    async def body(app: App) -> int:
        pending = await app.permissions.pending()
        if args.json:
            print(json.dumps([_as_json(a) for a in pending], indent=2))
        elif not pending:
            print("no pending approvals")
        for approval in [] if args.json else pending:
            describe(approval)
        return EXIT_OK

    return execute(paths, body, with_engine=False)


def cmd_approve(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        approval = await app.permissions.find(args.approval)
        if approval is None:
            raise CommandError(f"no approval {args.approval!r} (see `fxdesk approvals`)")
        try:
            answered = await app.permissions.resolve(
                approval.id, CHOICES[args.choice], reason=args.reason
            )
        except ApprovalNotPending as exc:
            print(f"fxdesk: {exc}", file=sys.stderr)
            return EXIT_FAILED
        made = answered.resolution.get("rules") or []
        extra = f"; {len(made)} rule(s) stored" if made else ""
        print(f"approval {answered.id[:12]}: {answered.status.value.replace('_', ' ')}{extra}")
        return EXIT_OK

    return execute(paths, body, with_engine=False)


def cmd_rules(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        service = app.permissions
        if args.rules_command == "list":
            rules = await service.rules()
            if args.json:
                print(json.dumps([_rule_json(r) for r in rules], indent=2))
                return EXIT_OK
            if not rules:
                print("no rules")
            for rule in rules:
                print(_rule_line(rule))
            return EXIT_OK
        if args.rules_command == "remove":
            if not await service.remove_rule(args.rule):
                raise CommandError(f"no rule {args.rule} (see `fxdesk rules list`)")
            print(f"removed rule {args.rule}")
            return EXIT_OK
        scope, key = Scope.GLOBAL, ""
        if args.session:
            scope, key = Scope.SESSION, (await resolve_session(app, args.session)).id
        elif args.workspace:
            scope, key = Scope.WORKSPACE, str(await _workspace_id(app, args.workspace))
        rule = await service.add_rule(
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
        return EXIT_OK

    return execute(paths, body, with_engine=False)


async def _workspace_id(app: App, folder: str) -> int:
    wanted = await asyncio.to_thread(lambda: os.path.realpath(os.path.expanduser(folder)))
    workspaces = await app.store.read(repo.list_workspaces)
    for workspace in workspaces:
        if workspace.path == wanted:
            return workspace.id
    raise CommandError(f"no workspace {wanted} (start a session there first)")


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


async def prompt(app: App, approval: Approval) -> bool:
    """Ask on the terminal; answer the approval. False when the person quit (EOF)."""
    print(file=sys.stderr)
    describe(approval, sys.stderr)
    question = "  [1] allow once  [2] allow for this session  [3] always allow  [4] deny > "
    loop = asyncio.get_running_loop()
    while True:
        print(question, end="", file=sys.stderr, flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return False
        picked = {"1": Choice.ONCE, "2": Choice.SESSION, "3": Choice.ALWAYS, "4": Choice.DENY}.get(
            line.strip()
        )
        if picked is None:
            continue
        reason = ""
        if picked == Choice.DENY:
            print("  reason for the agent (optional): ", end="", file=sys.stderr, flush=True)
            reason = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        try:
            await app.permissions.resolve(approval.id, picked, reason=reason)
        except ApprovalNotPending as exc:
            print(f"fxdesk: {exc}", file=sys.stderr)
        return True
