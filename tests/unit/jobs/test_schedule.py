"""The consolidation schedule queues one pass per brain per window."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.memory.schedule import ConsolidationSchedule
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters


def test_one_pass_per_brain_per_window(tmp_path: Path) -> None:
    clock = FakeClock()
    c = build_container(Settings(data_dir=tmp_path), fake_adapters(clock=clock))
    a, b = c.brains.create("A"), c.brains.create("B")
    schedule = ConsolidationSchedule(c.brains, c.consolidation, clock, every_s=3600)

    first = schedule.tick()
    again = schedule.tick()  # same window: the same jobs
    clock.advance(3600)
    later = schedule.tick()

    assert len(first) == 2 and again == first
    assert len(set(later)) == 2 and not set(later) & set(first)
    assert {c.jobs.status(j).brain_id for j in first} == {a.id, b.id}
    assert {c.jobs.status(j).kind for j in first + later} == {"consolidate"}


def test_the_schedule_is_off_unless_configured() -> None:
    assert Settings().consolidate_every_s is None
    with pytest.raises(ValueError):
        ConsolidationSchedule(None, None, FakeClock(), every_s=0)  # type: ignore[arg-type]
