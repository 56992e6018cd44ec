"""Ready-made ``acp`` profiles for the agents people already use (docs/acp.md).

Each preset is the command that starts the agent speaking the Agent Client Protocol on stdio.
The Claude Code and Codex adapters are npm packages run through ``npx`` (Node.js needed; the
first start downloads them); Gemini CLI speaks ACP itself once installed (``--acp``; 0.61 still
takes the deprecated ``--experimental-acp``). The command lines were checked by starting
claude-code-acp 0.16.2, codex-acp 0.16.0 and gemini-cli 0.61.0 (``scripts/acp_real_check.py``);
the tests have no network, so they use ``tests/acp_agent.py`` in their shapes. ``fxdesk doctor``
says whether their programs are found on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass

NODE_PROGRAMS = ("npx", "node", "npm")  # run on Node.js: node must be found too


@dataclass(frozen=True)
class SandboxNeeds:
    """What an agent needs from the sandbox it runs in (docs/acp.md): the network, and the
    paths in the home folder it writes (``~/…``: its configuration, login and caches; folders
    are made when missing, files are bound when they exist), and the variables of fxdesk's
    environment it reads (its API key) beyond the sandbox's allow-list.

    ``sandbox``: whether its profiles run in the sandbox by default; ``why_not`` says why not.
    """

    network: bool = True
    home_folders: tuple[str, ...] = ()
    home_files: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    sandbox: bool = True
    why_not: str = ""

    @property
    def home_paths(self) -> tuple[str, ...]:
        """Every path it writes in the home folder, as written (``~/.codex``)."""
        return (*self.home_folders, *self.home_files)


@dataclass(frozen=True)
class AcpPreset:
    name: str  # what --preset takes
    title: str  # what the person reads
    command: str
    args: tuple[str, ...]
    install: str  # what to do when ``command`` is not found
    needs: SandboxNeeds = SandboxNeeds()

    @property
    def needs_node(self) -> bool:
        return self.command in NODE_PROGRAMS


PRESETS: dict[str, AcpPreset] = {
    p.name: p
    for p in (
        AcpPreset(
            "claude-code",
            "Claude Code",
            "npx",
            ("-y", "@zed-industries/claude-code-acp"),
            "Install Node.js (18 or newer); npx fetches the adapter at the first start. "
            "Claude Code logs in by itself or takes ANTHROPIC_API_KEY from the environment.",
            SandboxNeeds(
                home_folders=("~/.claude", "~/.npm"),
                home_files=("~/.claude.json",),
                env=("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR"),
                sandbox=False,
                why_not="Claude Code also writes files next to ~/.claude.json in the home "
                "folder (its backups and lock), which the sandbox keeps read-only",
            ),
        ),
        AcpPreset(
            "codex",
            "Codex",
            "npx",
            ("-y", "@zed-industries/codex-acp"),
            "Install Node.js (18 or newer); npx fetches the adapter at the first start. "
            "Codex logs in by itself or takes OPENAI_API_KEY from the environment.",
            SandboxNeeds(
                home_folders=("~/.codex", "~/.npm"),
                env=("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"),
            ),
        ),
        AcpPreset(
            "gemini",
            "Gemini CLI",
            "gemini",
            ("--acp",),  # gemini-cli 0.61: --experimental-acp is deprecated
            "npm install -g @google/gemini-cli",
            SandboxNeeds(
                home_folders=("~/.gemini",),
                env=("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT"),
            ),
        ),
    )
}


# Words in a variable's name that say its value is a secret: such values of an ``acp``
# profile's environment are kept in the keyring, not the database (``Profile.secret_env``).
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


# A profile without a preset: the network, the workspace, nothing of the home folder.
CUSTOM_NEEDS = SandboxNeeds()


def needs_of(preset: str | None) -> SandboxNeeds:
    """What the agent of a profile made from ``preset`` needs (a custom one: the default)."""
    found = PRESETS.get(preset or "")
    return found.needs if found is not None else CUSTOM_NEEDS


def sandboxed(preset: str | None, choice: bool | None) -> bool:
    """Whether a profile's agent runs in the sandbox: its own ``choice``, else the preset's
    default (on without a preset)."""
    return choice if choice is not None else needs_of(preset).sandbox


def looks_secret(name: str) -> bool:
    """Whether the variable ``name`` (``ANTHROPIC_API_KEY``, ``GH_TOKEN``) holds a secret."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


# Earlier command lines of a preset, still recognised as it (profiles made before a change).
LEGACY_ARGS: dict[str, tuple[tuple[str, ...], ...]] = {"gemini": (("--experimental-acp",),)}


def preset_of(command: str | None, args: tuple[str, ...]) -> AcpPreset | None:
    """The preset whose command line this is (its arguments first), or None."""
    for preset in PRESETS.values():
        if command != preset.command:
            continue
        for known in (preset.args, *LEGACY_ARGS.get(preset.name, ())):
            if args[: len(known)] == known:
                return preset
    return None
