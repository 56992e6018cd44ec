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
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.acp_presets import PRESETS, preset_of
from fxdesk.domain.model import KeySource, Profile
from fxdesk.paths import DataPaths
from fxdesk.providers.demo import DEMO_SCRIPT

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine


def register(commands: Any) -> None:
    profiles = commands.add_parser("profiles", help="model provider profiles")
    profiles.set_defaults(handler=cmd_profiles)
    actions = profiles.add_subparsers(dest="profiles_command", metavar="ACTION")
    listing = actions.add_parser("list", help="list profiles")
    listing.add_argument("--json", action="store_true")
    add = actions.add_parser(
        "add",
        help="add or replace a profile",
        description="Add a model provider profile. The API key goes to the OS keyring "
        "(--api-key-stdin), or is read from an environment variable (--api-key-env); it is "
        "never stored in the database. 'openai' covers every OpenAI-compatible server "
        "(OpenAI, OpenRouter, Ollama, vLLM, LM Studio, llama.cpp) through --base-url.",
    )
    add.add_argument("name")
    add.add_argument("--kind", choices=["scripted", "openai", "anthropic", "acp"])
    add.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="an external agent over ACP, ready-made (kind acp; see `fxdesk doctor`)",
    )
    add.add_argument(
        "--command",
        dest="agent_command",  # "command" is the subcommand's own
        metavar="PROGRAM",
        help="acp: the program that starts the agent",
    )
    add.add_argument(
        "--arg",
        dest="agent_args",
        action="append",
        default=[],
        metavar="ARG",
        help="acp: an argument (repeatable)",
    )
    add.add_argument(
        "--env",
        dest="agent_env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="acp: extra environment (repeatable; values of names with KEY, TOKEN, SECRET, "
        "PASSWORD... go to the keyring, the others to the database)",
    )
    sandbox = add.add_mutually_exclusive_group()
    sandbox.add_argument(
        "--sandbox",
        dest="agent_sandbox",
        action="store_const",
        const=True,
        help="acp: run the agent in fxdesk's sandbox (default: on; a preset's own default)",
    )
    sandbox.add_argument(
        "--no-sandbox",
        dest="agent_sandbox",
        action="store_const",
        const=False,
        help="acp: run the agent outside the sandbox",
    )
    add.add_argument("--base-url", metavar="URL", help="the API's base URL")
    add.add_argument("--model", help="model name")
    add.add_argument(
        "--script",
        metavar="FILE",
        help="the script of a scripted profile (none: the offline demo agent)",
    )
    add.add_argument("--effort", help="reasoning effort (low, medium, high)")
    add.add_argument("--max-tokens", type=int, metavar="N", help="answer length limit")
    images = add.add_mutually_exclusive_group()
    images.add_argument(
        "--images",
        dest="accepts_images",
        action="store_const",
        const=True,
        help="the model takes images attached to messages (default: guessed from its name)",
    )
    images.add_argument(
        "--no-images",
        dest="accepts_images",
        action="store_const",
        const=False,
        help="the model takes no images: messages with images are refused before sending",
    )
    add.add_argument("--connect-timeout", type=float, default=10.0, metavar="S")
    add.add_argument("--read-timeout", type=float, default=120.0, metavar="S")
    add.add_argument("--price-in", type=float, metavar="USD", help="USD per million input tokens")
    add.add_argument("--price-out", type=float, metavar="USD", help="USD per million output tokens")
    key = add.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key-stdin",
        action="store_true",
        help="read the API key from standard input into the keyring",
    )
    key.add_argument("--api-key-env", metavar="VAR", help="take the API key from $VAR")
    key.add_argument("--no-key", action="store_true", help="the server needs no key")
    add.add_argument("--default", action="store_true", help="make it the default profile")
    remove = actions.add_parser("remove", help="remove a profile and its stored key")
    remove.add_argument("name")
    test = actions.add_parser("test", help="make one tiny streamed call and say what happened")
    test.add_argument("name", nargs="?", help="profile (default: the default profile)")


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
    if args.preset:
        if args.kind not in (None, "acp"):
            raise CommandError(f"--preset makes an acp profile, not {args.kind}")
        preset = PRESETS[args.preset]
        args.kind = "acp"
        if not args.agent_command:
            args.agent_command = preset.command
            args.agent_args = [*preset.args, *args.agent_args]
    if args.kind is None:
        raise CommandError("say which kind of profile: --kind (or --preset for an ACP agent)")
    if args.kind not in ("scripted", "acp") and not args.model:
        raise CommandError(f"a profile of kind {args.kind} needs --model")
    if args.kind == "acp" and not args.agent_command:
        raise CommandError("a profile of kind acp needs --command")
    pairs = [item.partition("=") for item in args.agent_env]
    if any(not name or not eq for name, eq, _ in pairs):
        raise CommandError("--env takes NAME=VALUE")
    agent_args = tuple(args.agent_args)
    if args.api_key_env:
        source, env = KeySource.ENV, args.api_key_env
    elif args.no_key or args.kind in ("scripted", "acp"):
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
        accepts_images=args.accepts_images,
        connect_timeout_s=args.connect_timeout,
        read_timeout_s=args.read_timeout,
        price_in_per_mtok=args.price_in,
        price_out_per_mtok=args.price_out,
        key_source=source,
        key_env=env,
        command=args.agent_command,
        args=tuple(args.agent_args),
        env=tuple((name, value) for name, _, value in pairs),
        preset=found.name if (found := preset_of(args.agent_command, agent_args)) else None,
        sandbox=args.agent_sandbox,
    )


async def _add(
    engine: Engine, args: argparse.Namespace, script: Path | None, key: str | None
) -> int:
    from fxdesk.engine.facade import ProfileError, SecretsUnavailable

    profile = _profile_from(args, script)
    try:
        await engine.profiles.save(profile, key=key, make_default=args.default)
    except ProfileError as exc:
        raise CommandError(str(exc)) from exc
    except SecretsUnavailable as exc:
        raise CommandError(exc.user_message, ExitCode.FAILED) from exc
    where = {
        KeySource.KEYRING: "its key in the keyring" if key else "a key expected in the keyring",
        KeySource.ENV: f"its key read from ${profile.key_env}",
        KeySource.NONE: "no key",
    }[profile.key_source]
    print(f"profile {profile.name} saved ({profile.kind}, {where})")
    return ExitCode.OK


async def _remove(engine: Engine, name: str) -> int:
    if not await engine.profiles.remove(name):
        raise CommandError(f"no profile named {name!r}", ExitCode.FAILED)
    print(f"profile {name} removed")
    return ExitCode.OK


async def _test(engine: Engine, name: str | None) -> int:
    chosen = name or await engine.profiles.default_name()
    profile = await engine.profiles.get(chosen) if chosen else None
    if profile is None:
        raise CommandError(f"no profile named {chosen!r}" if chosen else "no default profile")
    result = await engine.profiles.test(profile)
    if result.ok:
        print(f"{profile.name}: ok: {result.message}")
        return ExitCode.OK
    print(f"{profile.name}: FAILED after {result.elapsed_ms / 1000:.1f} s: {result.message}")
    return ExitCode.FAILED


async def _list(engine: Engine, as_json: bool) -> int:
    profiles = await engine.profiles.list()
    default = await engine.profiles.default_name()
    if as_json:
        rows = [asdict(p) | {"default": p.name == default} for p in profiles]
        print(json.dumps(rows, indent=2, default=str))
        return ExitCode.OK
    if not profiles:
        print("no profiles; add one with: fxdesk profiles add NAME --kind KIND ...")
    for p in profiles:
        mark = "*" if p.name == default else " "
        target = p.script_path if p.kind == "scripted" else (p.base_url or "(default URL)")
        print(f"{mark} {p.name}  {p.kind}  {p.model or ''}  {target}  key: {p.key_source.value}")
    return ExitCode.OK


def cmd_profiles(args: argparse.Namespace, paths: DataPaths) -> int:
    action = args.profiles_command or "list"
    script = Path(args.script).expanduser().absolute() if getattr(args, "script", None) else None
    key = read_key(True) if action == "add" and args.api_key_stdin else None

    async def body(engine: Engine) -> int:
        if action == "add":
            return await _add(engine, args, script, key)
        if action == "remove":
            return await _remove(engine, args.name)
        if action == "test":
            return await _test(engine, args.name)
        return await _list(engine, bool(getattr(args, "json", False)))

    return execute(paths, body, with_engine=False)
