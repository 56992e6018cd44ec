"""What model calls used: tokens and cost, summed per session, per tree and per day.

Each finished model call is recorded with the tokens its server reported and, when its profile
has prices, what they cost (``engine.turn``). A server that reports nothing is counted as a
call without numbers, never as zero tokens costing $0: the totals say how many calls reported
nothing, and the window says "usage not reported" rather than "0 in / 0 out · $0.0000".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UsageTotals:
    """Model calls and what they used.

    Attributes:
        model_calls: Finished model calls counted.
        input_tokens: Tokens sent, as the servers reported them.
        output_tokens: Tokens received.
        cost_usd: What the priced calls cost.
        unreported: Calls whose server reported no usage (not in the token sums).
        unpriced: Calls with usage but no prices in their profile (not in the cost).
    """

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unreported: int = 0
    unpriced: int = 0

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.model_calls + other.model_calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cost_usd + other.cost_usd,
            self.unreported + other.unreported,
            self.unpriced + other.unpriced,
        )

    @property
    def reported(self) -> int:
        return self.model_calls - self.unreported

    def text(self) -> str:
        """ "12.3k in / 4.5k out · $0.12", "usage not reported", or "no model calls"."""
        if self.model_calls == 0:
            return "no model calls"
        if self.reported == 0:
            return "usage not reported"
        parts = [f"{tokens(self.input_tokens)} in / {tokens(self.output_tokens)} out"]
        priced = self.reported - self.unpriced
        if priced > 0:
            parts.append(money(self.cost_usd) + ("+" if self.unpriced else ""))
        if self.unreported:
            parts.append(f"{self.unreported} call{'' if self.unreported == 1 else 's'} unreported")
        return " · ".join(parts)


@dataclass(frozen=True)
class UsageSummary:
    """The header's three totals for the open session."""

    session: UsageTotals
    tree: UsageTotals  # the session's root and every sub-agent under it
    today: UsageTotals  # every session, since local midnight


@dataclass(frozen=True)
class DayUsage:
    day: str  # YYYY-MM-DD, local time
    totals: UsageTotals


@dataclass(frozen=True)
class SessionUsage:
    session_id: str
    name: str
    totals: UsageTotals


def tokens(count: int) -> str:
    """1234 → "1.2k", 1234567 → "1.23M"."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def money(usd: float) -> str:
    """Two decimals, more for small sums so a cent's fraction still shows."""
    if usd >= 0.1 or usd == 0:
        return f"${usd:,.2f}"
    if usd >= 0.01:
        return f"${usd:.3f}"
    return f"${usd:.4f}"
