"""Where a value stored as history goes in its line (a fact key's or status subject's values).

A line is a chain: the current value names the one it superseded (`metadata.supersedes`), that
one the one before, and each older value names its successor (`memory.superseded_by`). A value
that began before the current one is history: it goes between the latest value that began no
later than it and the earliest that began after it, so the chain stays in order of beginning and
no two values' intervals overlap: it ends where its successor begins, and its predecessor now
ends where it begins. A search at a time then finds one value per line whatever a filter or the
candidate pool hides (memory_reads.py), and the chain the web UI shows is whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from datetime import datetime

from cairn.domain.models import Document
from cairn.ports.records import Put
from cairn.services.memory import earlier_ends
from cairn.services.memory.memory_model import SUPERSEDES
from cairn.services.repositories import DocumentRepository

MAX_WALK = 256
"""Values walked back from the current one at most (a line longer still places history there)."""


@dataclass(frozen=True)
class Place:
    later: Document  # the value the new one ends at: it is superseded by it
    earlier: Document | None  # the value it now ends: it supersedes it


def place(repo: DocumentRepository, current: Document, began: datetime) -> Place:
    """Where a value beginning at `began` (before `current`'s start) goes, walking back from the
    current value while the one before began after it."""
    later = current
    for _ in range(MAX_WALK):
        earlier = live_before(repo, later)
        if earlier is None or earlier.memory is None:
            return Place(later, earlier)
        started = earlier.memory.valid_from
        if started is None or started <= began:
            return Place(later, earlier)
        later = earlier
    return Place(later, None)


def place_by_end(
    repo: DocumentRepository, current: Document, ends: datetime
) -> tuple[Place, datetime | None]:
    """Where a value with no start that ended at `ends` (before now) goes, and the start it then
    has. Values with a stated start keep it: walking back from the current value, the first that
    began before `ends` (or whose start is unknown) is the one it meets. If that one had ended by
    `ends` and a value follows it, it goes in the gap after it, beginning where it ended. Otherwise
    it goes before it, its end cut at that one's start, beginning where the value before that one
    ended (with none, its start stays unknown); a value met whose start is unknown begins where
    the new one ends (its `valid_from`, set in the later value's write). So no two values overlap,
    and a value whose start is unknown moves no stated start nor any other value's end."""
    later: Document | None = None
    at = current
    for _ in range(MAX_WALK):
        m = at.memory
        if m is None:
            break
        began = m.valid_from
        if began is None or began < ends:
            if later is not None and m.valid_to is not None and m.valid_to <= ends:
                return Place(later, at), m.valid_to  # in the gap after it, before the next one
            before = live_before(repo, at)
            if began is None:  # its start unknown too: it began where this one ended
                began = ends
                at = at.model_copy(update={"memory": m.model_copy(update={"valid_from": ends})})
            start = None
            if before is not None and before.memory is not None:
                start = min(before.memory.valid_to or began, began)
            return Place(at, before), start
        earlier = live_before(repo, at)
        if earlier is None:
            return Place(at, None), None  # every value began at or after its end: it is the first
        later, at = at, earlier
    return Place(at, None), None


def relinked(
    repo: DocumentRepository, spot: Place, memory_id: str, began: datetime, now: datetime
) -> list[Put]:
    """The writes that put `memory_id` in its place, each conditional on the version read: the later
    value now supersedes it, and the earlier one (if any) is superseded by it, ending where it
    begins (never before its own start). When the earlier value was superseded stays as recorded,
    and the end it had until now is kept beside (`earlier_ends`, bounded: earlier_ends.py): what
    Cairn knew then does not move."""
    ops = [
        repo.put_op(
            spot.later.model_copy(
                update={"metadata": {**spot.later.metadata, SUPERSEDES: memory_id}, "updated_at": now}
            ),
            spot.later.version,
        )
    ]
    earlier = spot.earlier
    if earlier is not None and earlier.memory is not None:
        m = earlier.memory
        until = began if m.valid_to is None else min(m.valid_to, began)
        if m.valid_from is not None:
            until = max(until, m.valid_from)
        ends = earlier_ends.beside(m, now, m.superseded_at)
        ended = m.model_copy(update={"superseded_by": memory_id, "valid_to": until, "earlier_ends": ends})
        shortened = earlier.model_copy(update={"memory": ended, "updated_at": now})
        ops.append(repo.put_op(shortened, earlier.version))
    return ops


def live_before(repo: DocumentRepository, doc: Document) -> Document | None:
    """The live value `doc` superseded, in the same brain, if any, passing over deleted ones (a
    delete joins its neighbours after it commits, MemoryService.join_over_deleted: one a crash
    left unjoined, or deleted before deletes joined them, is passed over the same)."""
    return _live_neighbour(repo, {}, doc, _supersedes, set())


def _supersedes(doc: Document) -> object:
    return doc.metadata.get(SUPERSEDES)


def closed_over(
    repo: DocumentRepository, earlier: Document | None, later: Document, over: Set[str]
) -> list[Put]:
    """After an erasure or a delete, the writes that join the live values around the values `over`
    (erased or deleted, `neighbours`), so the chain skips them: `later` now supersedes `earlier`,
    which is superseded by it. Validity is left as it is: what held while the erased values did is
    not known any more, so `at_time` finds nothing then. With no `earlier` (the first values
    erased), `later` supersedes nothing. Nothing when they are joined already (a run of erased
    values: the first of them joined it), or when a neighbour no longer names a value passed over:
    a value stored since took the gap (placed past the deleted one, between the same neighbours),
    and joining them would cut it out of the line."""
    joined_already = later.metadata.get(SUPERSEDES) == (earlier.id if earlier else None) and (
        earlier is None or earlier.memory is None or earlier.memory.superseded_by == later.id
    )
    if joined_already:
        return []
    if later.metadata.get(SUPERSEDES) not in over or (
        earlier is not None and earlier.memory is not None and earlier.memory.superseded_by not in over
    ):
        return []
    meta = {k: v for k, v in later.metadata.items() if k != SUPERSEDES}
    if earlier is not None:
        meta[SUPERSEDES] = earlier.id
    ops = [repo.put_op(later.model_copy(update={"metadata": meta}), later.version)]
    if earlier is not None and earlier.memory is not None:
        joined = earlier.memory.model_copy(update={"superseded_by": later.id})
        ops.append(repo.put_op(earlier.model_copy(update={"memory": joined}), earlier.version))
    return ops


def neighbours(
    repo: DocumentRepository, erased: Mapping[str, Document], doc: Document
) -> tuple[Document | None, Document | None, set[str]]:
    """The live values before and after `doc` in its line, passing over the erased and the deleted
    ones, and the ids passed over (`doc`'s among them). The neighbours are read as they are now: a
    value stored since may have been placed between them (closed_over then leaves them)."""
    over = {doc.id}
    earlier = _live_neighbour(repo, erased, doc, _supersedes, over)
    later = _live_neighbour(repo, erased, doc, lambda d: d.memory.superseded_by if d.memory else None, over)
    return earlier, later, over


def reopened(value: Document) -> Document:
    """`value` current again, as it was before the value that superseded it (now erased): no
    successor, and the end it had then (kept in `earlier_ends` at the supersession; none when a
    Cairn before 4 December 2026 kept no record of it). Its earlier ends stay, as history."""
    m = value.memory
    assert m is not None
    ends = m.earlier_ends or []
    pinned = earlier_ends.at_supersession(ends, m.superseded_at)
    then = ends[pinned] if pinned is not None else None
    current = m.model_copy(
        update={"superseded_by": None, "superseded_at": None, "valid_to": then.valid_to if then else None}
    )
    return value.model_copy(update={"memory": current})


def _live_neighbour(
    repo: DocumentRepository,
    erased: Mapping[str, Document],
    doc: Document,
    step: Callable[[Document], object],
    over: set[str],
) -> Document | None:
    """The first value that is neither erased nor deleted, walking from `doc` by `step` (back or
    forward); the ids passed over are added to `over`. A deleted value is passed over: one a crash
    left unjoined, or deleted before deletes joined lines."""
    at = doc
    for _ in range(MAX_WALK):
        named = step(at)
        if not isinstance(named, str):
            return None
        if named in erased:
            over.add(named)
            at = erased[named]
            continue
        found = repo.get_by_id(named)
        if found is None or found.brain_id != doc.brain_id or found.memory is None:
            return None
        if found.deleted_at is None:
            return found
        over.add(named)
        at = found
    return None
