"""The AWS scheduled consolidation's idempotency window follows the EventBridge rule's expression:
each tick queues a pass, and a redelivered tick queues none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cairn.bootstrap import Container, build_container
from cairn.bootstrap.options import schedule_window_s
from cairn.config import Settings
from cairn.services.memory.schedule import CRON_WINDOW_S, ConsolidationSchedule, window_for
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters

HOUR = 3600.0


@pytest.mark.parametrize(
    ("expression", "window"),
    [
        ("rate(6 hours)", 3 * HOUR),
        ("rate(1 day)", 12 * HOUR),
        ("rate(1 hour)", HOUR / 2),
        ("rate(30 minutes)", 15 * 60),
        ("rate(2 days)", 24 * HOUR),
        ("cron(0 3 * * ? *)", CRON_WINDOW_S),
    ],
)
def test_the_window_is_derived_from_the_expression(expression: str, window: float) -> None:
    assert window_for(expression) == window
    assert schedule_window_s(Settings(consolidation_schedule=expression)) == window


@pytest.mark.parametrize("expression", ["daily", "rate(0 hours)", "rate(6 weeks)", "off"])
def test_other_expressions_are_refused(expression: str) -> None:
    with pytest.raises(ValueError):
        window_for(expression)


def test_an_explicit_window_wins_and_no_schedule_means_a_day() -> None:
    assert schedule_window_s(Settings(consolidation_schedule="rate(6 hours)", consolidate_every_s=600)) == 600
    assert schedule_window_s(Settings()) == 24 * HOUR
    assert schedule_window_s(Settings(consolidation_schedule="off")) == 24 * HOUR


def ticking(
    tmp_path: Path, expression: str, start: datetime
) -> tuple[Container, FakeClock, ConsolidationSchedule]:
    clock = FakeClock(start)
    c = build_container(Settings(data_dir=tmp_path), fake_adapters(clock=clock))
    c.brains.create("A")
    window = schedule_window_s(Settings(consolidation_schedule=expression))
    return c, clock, ConsolidationSchedule(c.brains, c.consolidation, clock, window)


def test_a_redelivered_tick_shares_the_key_and_the_next_tick_does_not(tmp_path: Path) -> None:
    _, clock, schedule = ticking(tmp_path, "rate(6 hours)", datetime(2026, 11, 22, 4, 0, 7, tzinfo=UTC))

    first = schedule.tick()
    clock.advance(90)  # EventBridge delivers the same tick again
    again = schedule.tick()
    clock.advance(6 * HOUR - 90)
    next_tick = schedule.tick()

    assert again == first
    assert set(next_tick).isdisjoint(first)


@pytest.mark.parametrize("jitter", [20.0, 50.0])
def test_every_tick_of_a_rate_schedule_queues_a_pass_whatever_its_phase(
    tmp_path: Path, jitter: float
) -> None:
    # A rule created at 05:59:40 ticks at 05:59:40 + k * 6 h, next to the 06:00 / 12:00 / ...
    # window boundaries; a tick delivered a little early, the next a little late, must not share
    # a key (with a 6-hour window, 17:59 and 12:00 would).
    base = datetime(2026, 11, 22, 5, 59, 40, tzinfo=UTC)
    _, clock, schedule = ticking(tmp_path, "rate(6 hours)", base)
    keys = []
    for k in range(8):
        clock.current = base + timedelta(hours=6 * k, seconds=jitter if k % 2 else -jitter)
        keys.append(schedule.tick()[0])

    assert len(set(keys)) == len(keys)


def test_a_cron_schedule_queues_one_pass_per_hour(tmp_path: Path) -> None:
    _, clock, schedule = ticking(
        tmp_path, "cron(0 */2 * * ? *)", datetime(2026, 11, 22, 4, 0, 20, tzinfo=UTC)
    )

    first = schedule.tick()
    clock.advance(40)  # the same tick redelivered
    again = schedule.tick()
    clock.advance(2 * HOUR - 40)  # the next cron tick
    later = schedule.tick()

    assert again == first and set(later).isdisjoint(first)
