"""Time travel on the shared record: what was true at a moment (`valid_at`) and what Cairn knew at
a moment (`known_at`: recorded by then, and superseded or not as of then), for every search that
asks — zengram's `at_time`/`known_at` (services/memory/memory_reads.py) and REST search alike.

The index narrows by validity and creation time (ChunkFilter.valid_at, created_to); what was
current at `known_at` depends on when each memory was superseded and on ends that history stored
later moved sooner (MemoryFacet.earlier_ends), so it is judged on the records (`holds`), and each
record is shown as then held (`as_held`, `links_as_held`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from cairn.domain.models import Document, MemoryFacet, MemoryType
from cairn.domain.moments import EARLIEST
from cairn.ports.chunks import ChunkFilter
from cairn.services.memory.history_line import MAX_WALK
from cairn.services.memory.memory_model import SUPERSEDES

DEEPEST: Final = 3200
"""Hits a `known_at` search reads at most, looking deeper for enough that Cairn then held."""


def _ms(moment: datetime) -> datetime:
    """To the millisecond, as the surfaces show times: known_at given as a memory's shown
    `created_at` finds that memory."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


@dataclass(frozen=True)
class AsOf:
    """`valid_at`: what was true then (a memory valid then, superseded since or not; a document
    with no validity always is). `known_at`: what Cairn held then; with `valid_at` as well, what
    Cairn then held to be true at that other time. `include_superseded`: with `known_at` alone,
    also what had been superseded by then."""

    valid_at: datetime | None = None
    known_at: datetime | None = None
    include_superseded: bool = False

    @property
    def travels(self) -> bool:
        return self.valid_at is not None or self.known_at is not None

    def narrowed(self, flt: ChunkFilter) -> ChunkFilter:
        """`flt` with what the index can judge: validity at `valid_at` (unless `known_at` asks how
        it was then believed, which the records judge), nothing created after `known_at`, and
        history admitted."""
        if not self.travels:
            return flt
        created_to = flt.created_to
        if self.known_at is not None:
            bound = _ms(self.known_at) + timedelta(milliseconds=1)  # the whole millisecond
            created_to = bound if created_to is None else min(created_to, bound)
        return replace(
            flt,
            valid_at=self.valid_at if self.known_at is None else None,
            current_only=False,
            created_to=created_to,
        )

    def holds(self, doc: Document) -> bool:
        """Whether Cairn held `doc` at `known_at` (recorded by then, its text unchanged since, and,
        unless history is asked for, not yet superseded then) and, with `valid_at`, held it true
        then: ending where Cairn then held it to end (`_end_then`). Without `known_at`, the index's
        filter already judged it."""
        when = self.known_at
        if when is None:
            return True
        if _ms(doc.created_at) > when:
            return False
        m = doc.memory
        if m is None:  # a document written again since held other text (or was elsewhere) then
            return _ms(doc.updated_at) <= when
        if m.text_at is not None and _ms(m.text_at) > when:
            return False  # its text was changed in place since: what Cairn then held is gone
        ended_by_then = m.superseded_at is not None and _ms(m.superseded_at) <= when
        if self.valid_at is None:
            return self.include_superseded or not ended_by_then
        valid_to = _end_then(m, when) if ended_by_then or _end_kept(m) else None
        return (m.valid_from is None or m.valid_from <= self.valid_at) and (
            valid_to is None or valid_to > self.valid_at
        )

    def as_held(self, doc: Document) -> Document:
        """`doc` as Cairn held it at `known_at`: a memory superseded since shows the end it then had
        and no successor yet, and one whose end history stored since moved sooner shows the end it
        then had (`_end_then`), so an answer about then says nothing learnt later. Its links to
        the values around it are judged with the others' (`links_as_held`)."""
        m, when = doc.memory, self.known_at
        if when is None or m is None:
            return doc
        later: dict[str, datetime | str | None] = {}
        if m.superseded_at is not None and _ms(m.superseded_at) > when:
            later = {"superseded_by": None, "superseded_at": None}
            if _end_kept(m):
                later["valid_to"] = _end_then(m, when)
        elif any(_ms(e.at) > when for e in m.earlier_ends or []):
            later["valid_to"] = _end_then(m, when)
        if not later:
            return doc
        return doc.model_copy(update={"memory": m.model_copy(update=later)})

    def links_as_held(
        self, docs: Mapping[str, Document], read: Callable[[Iterable[str]], Mapping[str, Document]]
    ) -> dict[str, Document]:
        """`docs` (as `as_held` shows them, by id) with the links between the values of a line as
        Cairn held them at `known_at`: a value stored since as history between two values took
        their places as the earlier one's successor (`superseded_by`) and the later one's
        predecessor (`metadata.supersedes`); it and any stored since beside it are passed over,
        back to the value the link then named. Where no such value was held then (the successor
        then was deleted since, and a value stored later follows its predecessor), the link is
        left out. `read` reads records by id (the linked values, in one read; a value stored since
        is followed one read each). A line joined since over a deleted value cannot be told from
        one that never held it: that link shows the join (no record of the link before it is
        kept)."""
        when = self.known_at
        if when is None:
            return dict(docs)
        known: dict[str, Document] = dict(docs)
        wanted = {link for doc in docs.values() for link in _links(doc) if link not in known}
        if wanted:
            known.update(read(wanted))

        def then(link: str, step: Callable[[Document], object]) -> str | None:
            at = link
            for _ in range(MAX_WALK):  # values stored since, from a link to the one it named then
                target = known.get(at)
                if target is None:
                    found = read([at])
                    target = found.get(at)
                    if target is None:
                        return at if at == link else None  # not found (erased): as recorded
                    known[at] = target
                if _ms(target.created_at) <= when:
                    return at
                following = step(target)
                if not isinstance(following, str):
                    return None
                at = following
            return None

        shown: dict[str, Document] = {}
        for doc_id, doc in docs.items():
            m, update = doc.memory, dict[str, object]()
            if m is not None and m.superseded_by is not None:
                successor = then(m.superseded_by, lambda d: d.memory.superseded_by if d.memory else None)
                if successor != m.superseded_by:
                    update["memory"] = m.model_copy(update={"superseded_by": successor})
            before = doc.metadata.get(SUPERSEDES)
            if isinstance(before, str):
                predecessor = then(before, lambda d: d.metadata.get(SUPERSEDES))
                if predecessor != before:
                    meta = {k: v for k, v in doc.metadata.items() if k != SUPERSEDES}
                    update["metadata"] = meta if predecessor is None else {**meta, SUPERSEDES: predecessor}
            shown[doc_id] = doc.model_copy(update=update) if update else doc
        return shown


def _links(doc: Document) -> list[str]:
    """The values a memory's record names around it in its line: its successor, its predecessor."""
    before = doc.metadata.get(SUPERSEDES)
    after = doc.memory.superseded_by if doc.memory is not None else None
    return [link for link in (after, before) if isinstance(link, str)]


def _end_kept(m: MemoryFacet) -> bool:
    """Whether the end a memory had before it was superseded is known: never superseded, or
    superseded by a Cairn that kept it (`earlier_ends` at the supersession). A memory superseded
    before that is taken to have been open-ended until then, as it was held then."""
    return m.superseded_at is None or any(e.at == m.superseded_at for e in m.earlier_ends or [])


def _end_then(m: MemoryFacet, when: datetime) -> datetime | None:
    """The memory's end as Cairn held it at `when`: before history stored later moved it sooner."""
    later = [e for e in m.earlier_ends or [] if _ms(e.at) > when]
    return later[0].valid_to if later else m.valid_to


def _line(doc: Document) -> tuple[str, str] | None:
    """The fact key or status subject whose values supersede each other, if the memory has one."""
    m = doc.memory
    if m is None:
        return None
    if m.type is MemoryType.fact and m.key:
        return ("key", m.key)
    if m.type is MemoryType.status and m.subject:
        return ("subject", m.subject)
    return None


def one_per_line(docs: dict[str, Document]) -> dict[str, Document]:
    """At one time, one value per fact key or status subject: where the found values' intervals
    overlap (one stored as history after a later one, each ending where the current one began),
    the one that began last. Documents of no line all stay."""
    latest: dict[tuple[str, str], tuple[datetime, str]] = {}
    for doc_id, doc in docs.items():
        line = _line(doc)
        if line is None:
            continue
        assert doc.memory is not None
        began = doc.memory.valid_from or EARLIEST
        if line not in latest or (began, doc_id) > latest[line]:
            latest[line] = (began, doc_id)
    chosen = {doc_id for _, doc_id in latest.values()}
    return {doc_id: doc for doc_id, doc in docs.items() if _line(doc) is None or doc_id in chosen}
