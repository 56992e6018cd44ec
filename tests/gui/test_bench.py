"""The benchmarks the suite runs (``./scripts/bench``) still run and report what they measure.

Smoke runs on small data: each starts the real Qt process the suite starts and checks that the
numbers it reports are there and came from what they say (deltas painted, a URL found, RSS
sampled). No timing is asserted: the numbers are for docs/performance.md, not for tests.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench import suite

pytestmark = pytest.mark.timeout(600)


def numbers(rows: list[suite.Row]) -> dict[str, suite.Row]:
    found = {row.what: row for row in rows}
    assert len(found) == len(rows)
    return found


def test_streaming_reports_delta_to_paint_latency_and_cpu_beside_the_bare_program() -> None:
    rows = numbers(suite.bench_streaming(1))
    latency = next(row for what, row in rows.items() if "delta → its paint, p99" in what)
    cpu = next(row for what, row in rows.items() if "CPU of the fxdesk process at" in what)
    assert 0 < latency.fxdesk < math.inf and 0 < latency.reference < math.inf  # deltas painted
    assert cpu.fxdesk > 0 and cpu.reference > 0
    assert latency.target_text() == "≤ 100 ms" and cpu.target_text() == "≤ 60 % of a core"


def test_a_huge_answer_and_a_long_command_output_open_and_scroll(tmp_path: Path) -> None:
    rows = suite.bench_bigtext(1, tmp_path, answer=100 * 1024, lines=2_000)
    assert len(rows) == 8
    for row in rows:
        assert row.fxdesk > 0 and row.reference is not None and row.reference > 0, row.what


def test_an_output_flood_ends_with_its_url_published_and_the_log_view_open() -> None:
    rows = numbers(suite.bench_flood(1, megabytes=5))
    url = next(row for what, row in rows.items() if "URL published" in what)
    opened = next(row for what, row in rows.items() if "log view opened" in what)
    assert url.fxdesk >= 0 and url.samples["fxdesk"]  # the watcher found the banner's URL
    assert opened.fxdesk > 0 and opened.reference is not None and opened.reference > 0


def test_the_soak_samples_rss_and_fits_a_slope() -> None:
    rows = suite.bench_soak(0.25, 0.1)
    slope, rss, cpu = rows
    assert len(slope.samples["fxdesk_rss"]) >= 10 and len(slope.samples["reference_rss"]) >= 10
    assert slope.reference is not None
    assert not math.isnan(slope.fxdesk) and not math.isnan(slope.reference)
    assert rss.fxdesk == slope.samples["fxdesk_rss"][-1]  # the RSS after streaming, as sampled
    assert rss.reference is not None and 0 < rss.reference < rss.fxdesk  # the bare window
    assert cpu.fxdesk > 0
