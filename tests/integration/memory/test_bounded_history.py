"""A value whose end history keeps moving keeps a bounded record (services/memory/earlier_ends.py),
on every record store: its earlier ends that only repeat go with no answer of what Cairn knew
then changing, and past the bound the oldest go but the supersession's, with the loss documented
(docs/ZENGRAM.md). A record grown near a DynamoDB item by a Cairn before the bound still takes
the next value stored as history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cairn.adapters.aws.dynamodb_codec import MAX_ITEM_BYTES, Op
from cairn.adapters.local.sqlite_records import encode_data
from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document, EarlierEnd, MemoryType
from cairn.services.documents.inputs import keep_info
from cairn.services.memory import earlier_ends
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery
from tests.fakes.clock import FakeClock
from tests.integration.memory.conftest import START

QUESTION = "where does the Acme database live Frankfurt"


def _fact(container: Container, brain: Brain, text: str, began: datetime, agent: str = "agent-a") -> Document:
    value = MemoryInput(
        type=MemoryType.fact,
        key="acme-db",
        content=f"the Acme database lives in {text}",
        valid_from=began,
        source_agent=agent,
    )
    return container.memories.store(brain, value).memory


def _record(container: Container, memory_id: str) -> Document:
    doc = container.documents.repo.get_by_id(memory_id)
    assert doc is not None and doc.memory is not None
    return doc


def _ends(container: Container, memory_id: str) -> list[EarlierEnd]:
    return _record(container, memory_id).memory.earlier_ends or []  # type: ignore[union-attr]


def _held(container: Container, brain: Brain, memory_id: str, day: float, **more: object) -> Document | None:
    """The memory as a search of what Cairn knew on `day` (after START) shows it, if it finds it."""
    q = MemoryQuery(
        known_at=START + timedelta(days=day),
        include_superseded=True,
        count_access=False,
        limit=50,
        **more,  # type: ignore[arg-type]
    )
    hits = container.memories.search(brain, QUESTION, q)
    return next((h.memory for h in hits if h.memory.id == memory_id), None)


def _end_held(container: Container, brain: Brain, memory_id: str, day: float) -> datetime | None:
    held = _held(container, brain, memory_id, day)
    assert held is not None and held.memory is not None
    return held.memory.valid_to


def _began(n: int) -> datetime:
    """Where the n-th value of the back-fill begins: a week before the one before it."""
    return datetime(2024, 1, 1, tzinfo=UTC) - timedelta(weeks=n)


def test_a_line_back_filled_newest_first_keeps_the_value_it_moves_bounded(
    container: Container, brain: Brain, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(earlier_ends, "KEPT", 4)
    # Given Frankfurt from 2020 (day 0), superseded by Oslo from 2025 (day 1), then ten values
    # stored one a day, each beginning a week before the last: each goes right after Frankfurt and
    # ends it sooner
    clock.current = START
    frankfurt = _fact(container, brain, "Frankfurt", datetime(2020, 1, 1, tzinfo=UTC)).id
    clock.current = START + timedelta(days=1)
    _fact(container, brain, "Oslo", datetime(2025, 1, 1, tzinfo=UTC))
    for n in range(1, 11):
        clock.current = START + timedelta(days=1 + n)
        _fact(container, brain, f"Dublin, rack {n}", _began(n))
    clock.current = START + timedelta(days=30)

    # Then its record keeps the supersession's end and the newest three
    assert len(_ends(container, frankfurt)) == 4
    assert _end_held(container, brain, frankfurt, 0.5) is None  # current then, open-ended
    for n in (7, 8, 9, 10):  # after the n-th value: exactly the end Cairn then held
        assert _end_held(container, brain, frankfurt, 1.5 + n) == _began(n)
    # and between the supersession and the last change dropped, the end that change left:
    # sooner than the end Cairn then held (2025 on day 1.5, the first value's start on day 2.5)
    for day in (1.5, 2.5, 7.5):
        assert _end_held(container, brain, frankfurt, day) == _began(7)
    # so a value Cairn then held true at a moment past that end is missed, never one it did not hold
    assert _held(container, brain, frankfurt, 2.5, at_time=_began(5)) is None
    assert _held(container, brain, frankfurt, 2.5, at_time=_began(8)) is not None
    assert _held(container, brain, frankfurt, 9.5, at_time=_began(5)) is None  # as then held


def test_a_value_superseded_again_each_time_its_successor_is_deleted_keeps_two_ends(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    # Given Leeds from 2022, superseded by a value from 2024 that is deleted, five times over
    clock.current = START
    leeds = _fact(container, brain, "Frankfurt, Leeds office", datetime(2022, 1, 1, tzinfo=UTC)).id
    for n in range(6):
        clock.current = START + timedelta(days=1 + n)
        york = _fact(container, brain, f"York, rack {n}", datetime(2024, 1, 1, tzinfo=UTC), "mallory")
        if n < 5:
            container.memories.delete(brain, york.id)
    clock.current = START + timedelta(days=30)

    # Then its end never moved after the first: the supersession's entry and the latest answer all
    ends = _ends(container, leeds)
    assert [e.valid_to for e in ends] == [None, datetime(2024, 1, 1, tzinfo=UTC)]
    assert _end_held(container, brain, leeds, 0.5) is None
    for day in (1.5, 3.5, 6.5):
        assert _end_held(container, brain, leeds, day) == datetime(2024, 1, 1, tzinfo=UTC)
    # and erasing the value that supersedes it makes it current again, open-ended as before
    with access.as_system():
        container.erasure.erase("source_agent", "mallory")
    again = _record(container, leeds).memory
    assert again is not None and again.current and again.valid_to is None


def _item_bytes(container: Container, doc: Document) -> int:
    """The record's size as the DynamoDB store encodes it."""
    put = container.documents.repo.put_op(doc, None)
    return Op(put.item.pk, put.item.sk, None, encode_data(put.item.data)).size


def test_a_record_grown_to_a_dynamodb_item_takes_the_next_history_and_shrinks(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    # Given Frankfurt superseded by Oslo (day 1), its end since moved sooner an hour at a time by
    # values stored as history, each end kept (as a Cairn before the bound kept them) until one
    # more would overfill a DynamoDB item (~5,600 of them)
    clock.current = START
    frankfurt = _fact(container, brain, "Frankfurt", datetime(2020, 1, 1, tzinfo=UTC)).id
    clock.current = START + timedelta(days=1)
    _fact(container, brain, "Oslo", datetime(2025, 1, 1, tzinfo=UTC))
    grown = _record(container, frankfurt)
    assert grown.memory is not None and grown.memory.superseded_at is not None
    first = grown.memory.earlier_ends or []
    entry = len(EarlierEnd(at=START + timedelta(microseconds=1), valid_to=START).model_dump_json()) + 1
    room = (MAX_ITEM_BYTES - _item_bytes(container, grown)) // entry
    moved = [
        EarlierEnd(
            at=grown.memory.superseded_at + timedelta(milliseconds=n, microseconds=1),
            valid_to=datetime(2025, 1, 1, tzinfo=UTC) - timedelta(hours=n - 1),
        )
        for n in range(1, room + 1)
    ]
    facet = grown.memory.model_copy(
        update={
            "earlier_ends": [*first, *moved],
            "valid_to": datetime(2025, 1, 1, tzinfo=UTC) - timedelta(hours=room),
        }
    )
    container.documents.modify(
        brain, grown.path, lambda live, data: (data or b"", keep_info(live, memory=facet))
    )
    assert MAX_ITEM_BYTES - entry < _item_bytes(container, _record(container, frankfurt)) <= MAX_ITEM_BYTES

    # When a value from 2024 is stored as history right after it (day 2)
    clock.current = START + timedelta(days=2)
    dublin = _fact(container, brain, "Dublin", datetime(2024, 1, 1, tzinfo=UTC))

    # Then it is stored, and Frankfurt's record is back within the bound
    after = _record(container, frankfurt)
    assert after.memory is not None and after.memory.superseded_by == dublin.id
    assert len(after.memory.earlier_ends or []) == earlier_ends.KEPT
    assert _item_bytes(container, after) < 8_000
    assert _end_held(container, brain, frankfurt, 0.5) is None
    assert _end_held(container, brain, frankfurt, 1.5) == facet.valid_to  # as then held
