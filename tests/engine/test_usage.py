"""Usage and cost totals (issue 14 item 6): per session, per tree, per day, and calls whose
server reported nothing counted as such, never as zero tokens costing $0.

A real ``App`` on a real SQLite file; the model is scripted, each step saying what it used (or
nothing, as many local servers do); prices come from the profile the resolver hands out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.model import Profile, Session
from fxdesk.domain.usage import UsageTotals, money, tokens
from fxdesk.engine.facade import Result
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider, Step

WAIT_S = 60.0
PRICED = Profile("priced", "scripted", price_in_per_mtok=3.0, price_out_per_mtok=15.0)


class PricedResolver(ProviderResolver):
    """The scripted model under a profile with prices (or none); records whom it served."""

    def __init__(self, provider: ScriptedProvider, profile: Profile | None) -> None:
        self.provider = provider
        self.profile = profile
        self.resolved: list[str] = []

    async def resolve(self, session: Session) -> Resolved:
        self.resolved.append(session.id)
        return Resolved(self.provider, "scripted", self.profile)


async def run_app(paths: DataPaths, steps: Sequence[Step], profile: Profile | None) -> App:
    app = App(paths, providers=PricedResolver(ScriptedProvider(list(steps)), profile))
    await app.start()
    return app


async def test_totals_per_session_tree_and_day_with_costs_from_the_profile(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    steps = [
        Reply("first", usage=(1000, 200)),
        Reply("second", usage=(3000, 400)),
        Reply("child", usage=(500, 100)),
    ]
    app = await run_app(data_paths, steps, PRICED)
    try:
        engine = app.engine
        (tmp_path / "p").mkdir()
        root = await engine.create_session(tmp_path / "p", first_message="one")
        assert await asyncio.wait_for(engine.join(root.id), WAIT_S) == Result.IDLE
        await engine.send(root.id, "two")
        assert await asyncio.wait_for(engine.join(root.id), WAIT_S) == Result.IDLE
        child = await engine.create_child(root.id, "a sub-task")
        assert await asyncio.wait_for(engine.join(child.id), WAIT_S) == Result.COMPLETED
        other = await engine.create_session(tmp_path / "p", start=False)

        summary = await engine.usage_summary(root.id)
        cost = (4000 * 3.0 + 600 * 15.0) / 1e6
        assert summary.session == UsageTotals(2, 4000, 600, summary.session.cost_usd, 0, 0)
        assert abs(summary.session.cost_usd - cost) < 1e-9
        assert summary.tree.model_calls == 3 and summary.tree.input_tokens == 4500
        assert summary.today.model_calls == 3  # every session's calls today
        assert (await engine.usage_summary(other.id)).session == UsageTotals()
        assert (await engine.usage_summary(child.id)).tree == summary.tree  # same tree

        (today,) = await engine.usage_by_day()
        assert today.totals == summary.today
        top = await engine.usage_by_session()
        assert [s.session_id for s in top] == [root.id, child.id]
        assert summary.session.text() == "4.0k in / 600 out · $0.021"
    finally:
        await app.stop()


async def test_calls_whose_server_reports_no_usage_say_so(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    steps = [Reply("quiet", usage=None), Reply("also quiet", usage=None)]
    app = await run_app(data_paths, steps, PRICED)
    try:
        engine = app.engine
        (tmp_path / "p").mkdir()
        session = await engine.create_session(tmp_path / "p", first_message="hi")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        transcript = await engine.transcript(session.id)
        turn_end = transcript.entries[-1].data
        assert turn_end["usage_reported"] is False and "cost_usd" not in turn_end

        summary = await engine.usage_summary(session.id)
        assert summary.session == UsageTotals(1, 0, 0, 0.0, 1, 0)
        assert summary.session.text() == "usage not reported"

        await engine.send(session.id, "again")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        assert (await engine.usage_summary(session.id)).session.unreported == 2
    finally:
        await app.stop()


async def test_unpriced_calls_show_tokens_without_a_made_up_cost(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    app = await run_app(data_paths, [Reply("x", usage=(1234, 56))], None)
    try:
        engine = app.engine
        (tmp_path / "p").mkdir()
        session = await engine.create_session(tmp_path / "p", first_message="hi")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        totals = (await engine.usage_summary(session.id)).session
        assert (totals.unpriced, totals.cost_usd) == (1, 0.0)
        assert totals.text() == "1.2k in / 56 out"
    finally:
        await app.stop()


def test_numbers_read_as_people_write_them() -> None:
    assert [tokens(n) for n in (0, 999, 1234, 1_234_567)] == ["0", "999", "1.2k", "1.23M"]
    assert [money(x) for x in (0, 0.0042, 0.021, 12.5)] == ["$0.00", "$0.0042", "$0.021", "$12.50"]
    assert UsageTotals().text() == "no model calls"
    mixed = UsageTotals(3, 100, 10, 0.5, 1, 1)
    assert mixed.text() == "100 in / 10 out · $0.50+ · 1 call unreported"
