"""EventBus.reserve: a holder's slots are counted and taken in one step; a reservation whose stream
never armed it (its client left before the response streamed) lapses after ARM_S, an armed one
holds its slot until closed, and a reservation hears nothing until armed."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from cairn.services import events
from cairn.services.events import ARM_S, ChangeEvent, EventBus


def _everyone(owner: str | None) -> bool:
    return True


def test_unarmed_reservations_lapse_and_armed_ones_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(events.time, "monotonic", lambda: now[0])

    async def scenario() -> None:
        bus = EventBus()
        armed = bus.reserve("b1", _everyone, "alice", 2)
        left = bus.reserve("b2", _everyone, "alice", 2)
        assert armed is not None and left is not None
        armed.arm()
        assert bus.reserve("b1", _everyone, "alice", 2) is None  # two held, on two brains
        assert bus.reserve("b1", _everyone, "bob", 2) is not None  # another holder's count
        now[0] += ARM_S + 1
        again = bus.reserve("b1", _everyone, "alice", 2)
        assert again is not None  # the one never armed lapsed; the armed one still counts
        assert bus.reserve("b1", _everyone, "alice", 2) is None
        assert left not in bus._subs.get("b2", [])
        armed.close()
        assert bus.reserve("b1", _everyone, "alice", 2) is not None

    asyncio.run(scenario())


def test_a_reservation_hears_nothing_until_armed() -> None:
    async def scenario() -> list[str]:
        bus = EventBus()
        sub = bus.reserve("b1", _everyone, "alice", 4)
        assert sub is not None
        when = datetime(2026, 1, 1, tzinfo=UTC)
        bus.publish("b1", [ChangeEvent("created", "before.md", when)])
        sub.arm()
        bus.publish("b1", [ChangeEvent("created", "after.md", when)])
        heard = []
        while (event := await sub.next(0.05)) is not None:
            heard.append(event.path)
        return heard

    assert asyncio.run(scenario()) == ["after.md"]
