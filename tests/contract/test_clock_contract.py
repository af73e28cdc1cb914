"""Clock contract: every clock gives timezone-aware UTC times that never go backwards."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest

from cairn.ports.clock import Clock, SystemClock
from tests.fakes.clock import FakeClock


@pytest.fixture(params=["system", "fake"])
def clock(request: pytest.FixtureRequest) -> Clock:
    return SystemClock() if request.param == "system" else FakeClock()


def test_times_are_aware_utc_and_never_go_backwards(clock: Clock) -> None:
    readings = [clock.now() for _ in range(100)]
    assert all(r.utcoffset() == timedelta(0) and r.tzinfo is not None for r in readings)
    assert readings == sorted(readings)


def test_fake_clock_moves_when_told() -> None:
    clock = FakeClock(tick=timedelta(0))
    before = clock.now()
    clock.advance(90)
    assert clock.now() - before == timedelta(seconds=90)
    assert before.tzinfo is UTC
