"""Ready-made ``acp`` profiles for the agents people already use (docs/acp.md).

Each preset is the command that starts the agent speaking the Agent Client Protocol on stdio.
The Claude Code and Codex adapters are npm packages run through ``npx`` (Node.js needed; the
first start downloads them); Gemini CLI speaks ACP itself once installed. None of them is
exercised by the tests (no network there); ``fxdesk doctor`` says whether their programs are
found on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AcpPreset:
    name: str  # what --preset takes
    title: str  # what the person reads
    command: str
    args: tuple[str, ...]
    install: str  # what to do when ``command`` is not found

    @property
    def needs_node(self) -> bool:
        return self.command in ("npx", "node", "npm")


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
