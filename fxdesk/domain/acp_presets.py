"""Ready-made ``acp`` profiles for the agents people already use (docs/acp.md).

Each preset is the command that starts the agent speaking the Agent Client Protocol on stdio.
The Claude Code and Codex adapters are npm packages run through ``npx`` (Node.js needed; the
first start downloads them); Gemini CLI speaks ACP itself once installed. None of them is
exercised by the tests (no network there); ``fxdesk doctor`` says whether their programs are
found on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass

NODE_PROGRAMS = ("npx", "node", "npm")  # run on Node.js: node must be found too


@dataclass(frozen=True)
class AcpPreset:
    name: str  # what --preset takes
    title: str  # what the person reads
    command: str
    args: tuple[str, ...]
    install: str  # what to do when ``command`` is not found

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
        ),
        AcpPreset(
            "codex",
            "Codex",
            "npx",
            ("-y", "@zed-industries/codex-acp"),
            "Install Node.js (18 or newer); npx fetches the adapter at the first start. "
            "Codex logs in by itself or takes OPENAI_API_KEY from the environment.",
        ),
        AcpPreset(
            "gemini",
            "Gemini CLI",
            "gemini",
            ("--experimental-acp",),
            "npm install -g @google/gemini-cli",
        ),
    )
}


# Words in a variable's name that say its value is a secret: such values of an ``acp``
# profile's environment are kept in the keyring, not the database (``Profile.secret_env``).
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def looks_secret(name: str) -> bool:
    """Whether the variable ``name`` (``ANTHROPIC_API_KEY``, ``GH_TOKEN``) holds a secret."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def preset_of(command: str | None, args: tuple[str, ...]) -> AcpPreset | None:
    """The preset whose command line this is (its arguments first), or None."""
    for preset in PRESETS.values():
        if command == preset.command and args[: len(preset.args)] == preset.args:
            return preset
    return None
