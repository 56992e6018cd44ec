"""``fxdesk profiles list|add|remove|test``: model provider profiles and their keys.

Keys go to the OS keyring (``--api-key-stdin``) or stay in an environment variable
(``--api-key-env``); the database holds only where to find them.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from dataclasses import asdict
from pathlib import Path

from fxdesk.app import App
from fxdesk.commands import EXIT_FAILED, EXIT_OK, CommandError, execute
from fxdesk.domain.model import KeySource, Profile
from fxdesk.engine.profiles import ProfileError
from fxdesk.paths import DataPaths
from fxdesk.providers.demo import DEMO_SCRIPT
from fxdesk.store import secrets


def read_key(from_stdin: bool) -> str:
    """The key typed (without echo) or piped in; never an argument, so never in argv."""
    if sys.stdin.isatty():
        key = getpass.getpass("API key (not shown): ")
    else:
        key = sys.stdin.readline() if from_stdin else ""
    key = key.strip()
    if not key:
        raise CommandError("no API key was given on standard input")
    return key


def _profile_from(args: argparse.Namespace, script: Path | None) -> Profile:
    if args.kind != "scripted" and not args.model:
        raise CommandError(f"a profile of kind {args.kind} needs --model")
    if args.api_key_env:
        source, env = KeySource.ENV, args.api_key_env
    elif args.no_key or args.kind == "scripted":
        source, env = KeySource.NONE, None
    else:
        source, env = KeySource.KEYRING, None
    return Profile(
        name=args.name,
        kind=args.kind,
        base_url=args.base_url,
        model=args.model,
        # A scripted profile without a script is the built-in offline demo agent.
        script_path=str(script) if script else (DEMO_SCRIPT if args.kind == "scripted" else None),
        effort=args.effort,
        max_tokens=args.max_tokens,
        connect_timeout_s=args.connect_timeout,
        read_timeout_s=args.read_timeout,
        price_in_per_mtok=args.price_in,
        price_out_per_mtok=args.price_out,
        key_source=source,
        key_env=env,
    )


async def _add(app: App, args: argparse.Namespace, script: Path | None, key: str | None) -> int:
    profile = _profile_from(args, script)
    try:
        await app.profiles.save(profile, key=key, make_default=args.default)
    except ProfileError as exc:
        raise CommandError(str(exc)) from exc
    except secrets.SecretsUnavailable as exc:
        raise CommandError(exc.user_message, EXIT_FAILED) from exc
    where = {
        KeySource.KEYRING: "its key in the keyring" if key else "a key expected in the keyring",
        KeySource.ENV: f"its key read from ${profile.key_env}",
        KeySource.NONE: "no key",
    }[profile.key_source]
    print(f"profile {profile.name} saved ({profile.kind}, {where})")
    return EXIT_OK


async def _remove(app: App, name: str) -> int:
    if not await app.profiles.remove(name):
        raise CommandError(f"no profile named {name!r}", EXIT_FAILED)
    print(f"profile {name} removed")
    return EXIT_OK


async def _test(app: App, name: str | None) -> int:
    chosen = name or await app.profiles.default_name()
    profile = await app.profiles.get(chosen) if chosen else None
    if profile is None:
        raise CommandError(f"no profile named {chosen!r}" if chosen else "no default profile")
    result = await app.profiles.test(profile)
    if result.ok:
        print(f"{profile.name}: ok: {result.message}")
        return EXIT_OK
    print(f"{profile.name}: FAILED after {result.elapsed_ms / 1000:.1f} s: {result.message}")
    return EXIT_FAILED


async def _list(app: App, as_json: bool) -> int:
    profiles = await app.profiles.list()
    default = await app.profiles.default_name()
    if as_json:
        rows = [asdict(p) | {"default": p.name == default} for p in profiles]
        print(json.dumps(rows, indent=2, default=str))
        return EXIT_OK
    if not profiles:
        print("no profiles; add one with: fxdesk profiles add NAME --kind KIND ...")
    for p in profiles:
        mark = "*" if p.name == default else " "
        target = p.script_path if p.kind == "scripted" else (p.base_url or "(default URL)")
        print(f"{mark} {p.name}  {p.kind}  {p.model or ''}  {target}  key: {p.key_source.value}")
    return EXIT_OK


def cmd_profiles(args: argparse.Namespace, paths: DataPaths) -> int:
    action = args.profiles_command or "list"
    script = Path(args.script).expanduser().absolute() if getattr(args, "script", None) else None
    key = read_key(True) if action == "add" and args.api_key_stdin else None

    async def body(app: App) -> int:
        if action == "add":
            return await _add(app, args, script, key)
        if action == "remove":
            return await _remove(app, args.name)
        if action == "test":
            return await _test(app, args.name)
        return await _list(app, bool(getattr(args, "json", False)))

    return execute(paths, body, with_engine=False)
