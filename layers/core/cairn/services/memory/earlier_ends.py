"""A memory's earlier ends (MemoryFacet.earlier_ends), kept bounded as history moves its end.

Each time history stored later moves a memory's end sooner, or a supersession ends it, the end it
had until then is appended (`EarlierEnd(at=now, valid_to=end)`). A line back-filled newest first
(values stored one by one, each beginning before the last, after one older value) moves that
older value's end once per value stored: unbounded, it grew ~70 bytes a value, past a DynamoDB
item (400 KB) near 5,700 values, after which no write of that memory succeeded.

What services/search/as_of.py reads of the list, and history_line.reopened:
- the end Cairn held at a moment `when` (`_end_then`): the `valid_to` of the first entry, in
  list order, whose `at` (to the millisecond) is after `when`, or the memory's own `valid_to`
  when none is (`as_held`'s end is the same value);
- the last entry whose `at` is the memory's `superseded_at` (`at_supersession`: the one its
  supersession appended; an older one can have the same `at` when a clock behind another wrote
  it before an erasure reopened the value): whether the end it had before its supersession is
  known (`_end_kept`), and that end (`reopened`, after an erasure).

`kept` drops entries so that both answer as before, for every `when` and whatever is appended
later: an entry followed by one with the same `valid_to` and an `at` no earlier answers nothing
the next does not (whenever it is the first after `when`, the next one is after `when` too, and
no entry lies between), so it goes, unless it is the one at `superseded_at`. That bounds a value
whose end repeats (superseded again each time its successor is deleted) with nothing lost. Ends
that differ each answer some `when` of their own, so no compaction of the list keeps every answer:
past KEPT entries the oldest go, but for the first and the one at `superseded_at`. A `when` from
the first kept entry's `at` to the last dropped one's is then answered with the end that last
dropped change left, no later than the end Cairn then held (history only moves an end sooner; an
erasure reopening a value aside): a search of what Cairn then held true may miss the value, never
find it where Cairn did not hold it true. Every other `when` answers as before (docs/ZENGRAM.md,
"What Cairn knew then").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cairn.domain.models import EarlierEnd, MemoryFacet

KEPT = 64
"""Earlier ends a memory keeps at most (~4.5 KB of its record)."""


def beside(m: MemoryFacet, now: datetime, superseded_at: datetime | None) -> list[EarlierEnd]:
    """`m`'s earlier ends with the end it has until `now` kept beside them, bounded (`kept`);
    `superseded_at`: the memory's after this change."""
    return kept([*(m.earlier_ends or []), EarlierEnd(at=now, valid_to=m.valid_to)], superseded_at)


def kept(ends: Sequence[EarlierEnd], superseded_at: datetime | None) -> list[EarlierEnd]:
    """`ends` (oldest first) with the entries that answer nothing dropped, then, past KEPT, the
    oldest but the first and the one at `superseded_at` (module docstring)."""
    pinned = at_supersession(ends, superseded_at)
    answering = [
        e for i, e in enumerate(ends) if i == pinned or i + 1 == len(ends) or not _repeated_by(e, ends[i + 1])
    ]
    if len(answering) <= KEPT:
        return answering
    pinned = at_supersession(answering, superseded_at)
    early = {0} if pinned is None else {0, pinned}
    newest_from = len(answering) - (KEPT - len(early))
    return [e for i, e in enumerate(answering) if i in early or i >= newest_from]


def at_supersession(ends: Sequence[EarlierEnd], superseded_at: datetime | None) -> int | None:
    """The index of the entry the supersession at `superseded_at` appended: the last with that
    `at` (module docstring); None when there is none."""
    found = [i for i, e in enumerate(ends) if superseded_at is not None and e.at == superseded_at]
    return found[-1] if found else None


def _repeated_by(end: EarlierEnd, following: EarlierEnd) -> bool:
    return following.valid_to == end.valid_to and following.at >= end.at
