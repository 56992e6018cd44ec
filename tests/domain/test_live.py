"""The bounded live view (spec child-sessions §8): what each cap keeps and what it costs."""

from __future__ import annotations

from fxdesk.domain.live import (
    EVENTS_BUDGET_BYTES,
    TEXT_CAP_BYTES,
    LiveEvent,
    LivePresentation,
)


def _live() -> LivePresentation:
    live = LivePresentation()
    live.begin("work")
    return live


def test_text_the_cap_dropped_costs_nothing_of_the_event_budget() -> None:
    """Issue 10 item 9: a chunk the 64 KiB text cap dropped was still stored whole as an event,
    so two capped chunks filled the 128 KiB budget and a later status event was lost."""
    live = _live()
    live.append_text("x" * TEXT_CAP_BYTES)  # fills the text cap exactly
    live.append_text("y" * TEXT_CAP_BYTES)  # dropped whole by the text cap
    live.append_event(LiveEvent("status", "still working"))
    snapshot = live.snapshot()
    assert snapshot is not None
    assert snapshot.text == "x" * TEXT_CAP_BYTES and snapshot.text_truncated
    assert [e.kind for e in snapshot.events] == ["assistant_text", "status"]
    assert snapshot.events[-1].text == "still working"
    assert not snapshot.events_truncated
    assert sum(e.cost for e in snapshot.events) <= EVENTS_BUDGET_BYTES


def test_a_chunk_cut_by_the_text_cap_costs_only_its_kept_bytes() -> None:
    live = _live()
    live.append_text("a" * (TEXT_CAP_BYTES - 3))
    live.append_text("bcdefgh")  # 3 bytes fit, 4 are dropped
    snapshot = live.snapshot()
    assert snapshot is not None
    assert snapshot.text.endswith("abcd") and snapshot.text_truncated
    assert [e.text for e in snapshot.events][-1] == "bcd"
    assert sum(e.cost for e in snapshot.events) == TEXT_CAP_BYTES


def test_a_cut_never_splits_a_character_and_costs_what_it_kept() -> None:
    live = _live()
    live.append_text("a" * (TEXT_CAP_BYTES - 1))
    live.append_text("é")  # two bytes; one byte of room: nothing of it fits
    live.append_text("z")  # the cap was hit: later text is dropped too, even if it would fit
    snapshot = live.snapshot()
    assert snapshot is not None
    assert snapshot.text == "a" * (TEXT_CAP_BYTES - 1) and snapshot.text_truncated
    assert len(snapshot.events) == 1  # dropped chunks leave no empty events behind
