"""A memory's earlier ends stay bounded (services/memory/earlier_ends.py), and what Cairn knew then
(services/search/as_of.py) answers as it did with every end kept: exactly for ends that only
repeat, and past KEPT with the documented loss inside the dropped span."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cairn.adapters.aws.dynamodb_codec import encode_op
from cairn.domain.errors import PayloadTooLarge
from cairn.domain.models import Document, EarlierEnd, MemoryFacet, MemoryType
from cairn.ports.records import Item, Put
from cairn.services.memory import earlier_ends
from cairn.services.memory.history_line import reopened
from cairn.services.repositories import doc_key
from cairn.services.search.as_of import AsOf

START = datetime(2026, 3, 1, tzinfo=UTC)
YEAR = datetime(2025, 1, 1, tzinfo=UTC)


def _doc(m: MemoryFacet) -> Document:
    return Document(
        id="mem_first",
        brain_id="brain",
        path="memories/fact/mem_first.md",
        title="first",
        checksum_sha256="0" * 64,
        byte_size=1,
        blob_key="blob",
        commit_sha="0" * 40,
        memory=m,
        created_at=START - timedelta(days=1),
        updated_at=START,
    )


def _record_bytes(doc: Document) -> int:
    """The document record's size as the DynamoDB store encodes it (PayloadTooLarge past an item)."""
    return encode_op(Put(Item(*doc_key(doc.brain_id, doc.path), data=doc.model_dump(mode="json")))).size


def _shown(doc: Document, when: datetime) -> tuple[object, ...]:
    """What a `known_at` search at `when` answers of the memory: whether it was held (current, and
    true at a few moments), and the end, successor and supersession it is shown with."""
    held = AsOf(known_at=when, include_superseded=True).as_held(doc).memory
    assert held is not None
    true_at = tuple(
        AsOf(known_at=when, valid_at=YEAR + timedelta(days=d)).holds(doc) for d in (-400, -1, 0, 1, 400)
    )
    return (
        AsOf(known_at=when).holds(doc),
        true_at,
        held.valid_to,
        held.superseded_by,
        held.superseded_at,
    )


def _ms(moment: datetime) -> datetime:
    """To the millisecond, as known_at compares an entry's time."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _moments(ends: Iterable[EarlierEnd]) -> list[datetime]:
    """Each moment an answer may turn at (an entry's time, to the millisecond, and either side)."""
    found = {START - timedelta(days=1)}
    for e in ends:
        ms = _ms(e.at)
        found |= {e.at, e.at - timedelta(microseconds=1), ms - timedelta(microseconds=1), ms}
        found |= {ms + timedelta(microseconds=999), ms + timedelta(milliseconds=1)}
    return sorted(found)


# A change: how long after the last (microseconds; a clock another server reads may be behind),
# whether a supersession, a move sooner or an erasure reopening the value made it, and which end
# it leaves (an index into the ends at or before the current one, so ends often repeat).
CHANGES = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 400, 999, 1000, 1500, 60_000_000, -2000]),
        st.sampled_from(["superseded", "moved", "moved", "reopened"]),
        st.integers(min_value=0, max_value=3),
    ),
    max_size=40,  # under KEPT: only the answer-preserving compaction applies
)
ENDS = [None, YEAR + timedelta(days=400), YEAR, YEAR - timedelta(days=1), YEAR - timedelta(days=400)]


def _ends(m: MemoryFacet, at: datetime, superseded_at: datetime | None, compact: bool) -> list[EarlierEnd]:
    """The earlier ends after a change at `at`: kept bounded as the service keeps them, or every
    one appended (as before they were bounded)."""
    if compact:
        return earlier_ends.beside(m, at, superseded_at)
    return [*(m.earlier_ends or []), EarlierEnd(at=at, valid_to=m.valid_to)]


def _apply(doc: Document, at: datetime, kind: str, pick: int, compact: bool) -> Document:
    """One change to the memory, as MemoryService.store, history_line.relinked and reopened make
    it; `compact`: its earlier ends kept as they are now, or every one appended (as before)."""
    m = doc.memory
    assert m is not None
    if kind == "reopened":
        return reopened(doc) if m.superseded_at is not None else doc
    sooner = [e for e in ENDS if m.valid_to is None or (e is not None and e <= m.valid_to)]
    superseded_at = (m.superseded_at or at) if kind == "superseded" else m.superseded_at
    ends = _ends(m, at, superseded_at, compact)
    changed = m.model_copy(
        update={
            "superseded_by": "mem_next",
            "superseded_at": superseded_at,
            "valid_to": sooner[pick % len(sooner)],
            "earlier_ends": ends,
        }
    )
    return doc.model_copy(update={"memory": changed})


@settings(max_examples=300, deadline=None)
@given(CHANGES)
@example(  # superseded again, after a reopening, at the moment a clock behind wrote an older entry
    [
        (0, "superseded", 1),
        (1, "superseded", 0),
        (1000, "superseded", 0),
        (-2000, "reopened", 0),
        (1000, "superseded", 0),
    ]
)
def test_dropping_ends_that_repeat_changes_no_answer_of_what_cairn_knew_then(
    changes: list[tuple[int, str, int]],
) -> None:
    first = MemoryFacet(type=MemoryType.fact, key="acme-db", valid_from=YEAR - timedelta(days=800))
    every, bounded = _doc(first), _doc(first)
    at = START
    for step, kind, pick in changes:
        at += timedelta(microseconds=step)
        every = _apply(every, at, kind, pick, compact=False)
        bounded = _apply(bounded, at, kind, pick, compact=True)
        for when in _moments((every.memory.earlier_ends or []) if every.memory else []):
            assert _shown(bounded, when) == _shown(every, when), when
        if every.memory is not None and every.memory.superseded_at is not None:
            assert reopened(bounded).memory == reopened(every).memory.model_copy(  # type: ignore[union-attr]
                update={"earlier_ends": bounded.memory.earlier_ends}  # type: ignore[union-attr]
            )


def test_ends_that_only_repeat_are_kept_as_two() -> None:
    """A value superseded again each time its successor is deleted: its end stays where the first
    successor began, so the supersession's entry and the latest are all that answer."""
    m = MemoryFacet(type=MemoryType.fact, key="acme-db", valid_to=None)
    m = m.model_copy(update={"earlier_ends": earlier_ends.beside(m, START, START), "superseded_at": START})
    m = m.model_copy(update={"valid_to": YEAR})
    for n in range(1, 1000):
        m = m.model_copy(update={"earlier_ends": earlier_ends.beside(m, START + timedelta(days=n), START)})
    assert m.earlier_ends == [
        EarlierEnd(at=START, valid_to=None),
        EarlierEnd(at=START + timedelta(days=999), valid_to=YEAR),
    ]


def _back_filled(values: int, compact: bool) -> Document:
    """The value a line back-filled newest first keeps moving: superseded by the current value
    (begun in 2025), then ended an hour sooner by each of `values` values stored a second apart,
    each beginning an hour before the last (at a clock's microseconds, as a server's)."""
    m = MemoryFacet(type=MemoryType.fact, key="acme-db", valid_from=datetime(2020, 1, 1, tzinfo=UTC))
    for n in range(values + 1):
        at = START + timedelta(seconds=n, microseconds=123_457)
        superseded_at = m.superseded_at or at
        ends = _ends(m, at, superseded_at, compact)
        m = m.model_copy(
            update={
                "superseded_by": "mem_next",
                "superseded_at": superseded_at,
                "valid_to": YEAR - timedelta(hours=n),
                "earlier_ends": ends,
            }
        )
    return _doc(m)


def test_a_line_back_filled_newest_first_keeps_its_record_within_a_dynamodb_item() -> None:
    # Given a value whose end 6,000 values stored as history after it moved sooner, one by one
    bounded = _back_filled(6000, compact=True)
    # Then its record stays small, where every end kept would not fit in a DynamoDB item
    assert bounded.memory is not None and len(bounded.memory.earlier_ends or []) <= earlier_ends.KEPT
    assert _record_bytes(bounded) < 6_000
    with pytest.raises(PayloadTooLarge):
        _record_bytes(_back_filled(6000, compact=False))


def test_past_the_bound_only_moments_among_the_dropped_changes_answer_otherwise() -> None:
    """Kept: the supersession's end and the newest. A moment from the supersession to the last
    change dropped is answered with the end that change left: sooner than the end Cairn then held,
    so the value is never held true then where Cairn did not hold it true."""
    values = 3 * earlier_ends.KEPT
    bounded, every = _back_filled(values, compact=True), _back_filled(values, compact=False)
    assert bounded.memory is not None and every.memory is not None and every.memory.earlier_ends
    kept, all_ends = bounded.memory.earlier_ends or [], every.memory.earlier_ends
    assert kept == [all_ends[0], *all_ends[-(earlier_ends.KEPT - 1) :]]
    last_dropped = all_ends[-earlier_ends.KEPT]
    left = kept[1].valid_to  # by the last change dropped
    assert left is not None
    for when in _moments(all_ends):
        held, answer = _shown(every, when), _shown(bounded, when)
        if _ms(all_ends[0].at) <= when < _ms(last_dropped.at):
            end_then = held[2]
            assert isinstance(end_then, datetime) and answer[2] == left < end_then
            assert all(held for held, answered in zip(held[1], answer[1], strict=True) if answered)
            assert answer[0] == held[0] and answer[3:] == held[3:]
        else:
            assert answer == held, when
