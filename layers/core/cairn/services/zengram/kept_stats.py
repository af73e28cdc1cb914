"""zengram's stats from what the writers keep: the memory counts, and the newest creation-time
entries (services/documents/memory_counts.py, memory_times.py) down to the last consolidation's
cut and past the newest 100 current facts; only those facts' records are read. The answers are
those of every record read (briefing.py `ZengramBriefing.stats`), which answers instead while
the counts or entries are being built, or when one the caller sees is of a damaged record. Either
way the memories a read found damaged and still are (services/documents/damaged_marks.py) are
taken out, as zengram's query, briefing and export leave them out (`without`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from cairn.domain.models import Brain, Document, MemoryType
from cairn.services.documents.memory_times import Made, moment
from cairn.services.memory.memory_glance import Glance
from cairn.services.memory.memory_model import PREFIX
from cairn.services.memory.memory_reads import MemoryReads
from cairn.services.zengram.base import BRIEFED_TYPES

NEWEST_FACTS = 100
"""How many of the newest current facts stats judges the confidence of."""
_FOLDERS = {t.value: n for n, t in enumerate(BRIEFED_TYPES)}
_FACT = MemoryType.fact.value


@dataclass(frozen=True)
class Counted:
    """What stats counts of a brain's live memories in zengram's folders."""

    total: int
    chunks: int
    active: int
    by_type: Counter[str]
    consolidated: int
    newest_facts: list[Document]
    """The newest current facts (at most NEWEST_FACTS), newest first, as every record read
    orders them: ties by folder, then path."""


def counted(memories: MemoryReads, brain: Brain, settled: datetime | None) -> Counted | None:
    """Stats' counts from the kept counts and entries; None when they cannot answer (being built,
    damaged, an entry its record no longer matches)."""
    both = memories.kept(brain)  # the counts' record read once for the counts and the entries
    if both is None:
        return None
    kept, times = both
    live = [(b, held) for b, held in kept if b.folder in _FOLDERS and not b.deleted and b.memory]
    total = sum(held[0] for _, held in live)
    by_type: Counter[str] = Counter()
    for b, held in live:
        by_type[b.type] += held[0]
    cut = moment(settled) if settled is not None else None
    if settled is not None and cut is None:
        return None
    if times is None:
        return None
    found = _newest(times, cut)
    if found is None:
        return None
    facts, later = found
    newest = _read(memories, brain, facts)
    if newest is None:
        return None
    return Counted(
        total=total,
        chunks=sum(held[1] for _, held in live),
        active=sum(held[0] for b, held in live if b.current),
        by_type=by_type,
        consolidated=0 if cut is None else total - later,
        newest_facts=newest,
    )


def _newest(times: Iterable[Made], cut: str | None) -> tuple[list[Made], int] | None:
    """The newest current facts' entries (those tied with the last one included) and how many
    live memories were created after `cut`, read newest first down to both; None on an entry of
    a damaged record (they come first)."""
    facts: list[Made] = []
    last: str | None = None  # the time of the NEWEST_FACTS-th fact, once found
    later = 0
    for m in times:
        if m.at is None:
            return None
        if m.folder not in _FOLDERS:
            continue
        wanted = last is None or m.at >= last
        after_cut = cut is not None and m.at > cut
        if not (wanted or after_cut):
            break
        later += after_cut
        if wanted and m.current and m.type == _FACT:
            facts.append(m)
            if len(facts) == NEWEST_FACTS:
                last = m.at
    facts.sort(key=lambda m: (_FOLDERS[m.folder], m.path))
    facts.sort(key=lambda m: m.at or "", reverse=True)
    return facts[:NEWEST_FACTS], later


def _read(memories: MemoryReads, brain: Brain, facts: list[Made]) -> list[Document] | None:
    """The facts' records decoded, in the entries' order; None when one no longer is what its
    entry says (changed meanwhile)."""
    items = {i.sk: i for i in memories.documents.repo.raw_at(brain.id, [m.path for m in facts])}
    docs = []
    for m in facts:
        item = items.get(f"doc#{m.path}")
        if item is None:
            return None
        seen = Glance.of(item)
        if seen.deleted or not seen.current or seen.type != _FACT or moment(seen.created_at()) != m.at:
            return None
        docs.append(seen.document())
    return docs


def without(found: Counted, damaged: Sequence[Document], settled: datetime | None) -> Counted:
    """The counts with the damaged documents among the memories they count taken out (a damaged
    one of the newest facts too: the confidence is judged of those left)."""
    gone = [d for d in damaged if _counted_memory(d)]
    if not gone:
        return found
    ids = {d.id for d in gone}
    by_type = found.by_type.copy()
    by_type.subtract(d.memory.type.value for d in gone if d.memory is not None)
    return Counted(
        total=found.total - len(gone),
        chunks=found.chunks - sum(d.chunk_count for d in gone),
        active=found.active - sum(1 for d in gone if d.memory is not None and d.memory.current),
        by_type=by_type,
        consolidated=found.consolidated
        - (0 if settled is None else sum(1 for d in gone if d.created_at <= settled)),
        newest_facts=[d for d in found.newest_facts if d.id not in ids],
    )


def _counted_memory(doc: Document) -> bool:
    """Whether stats counts the document: a live memory in the folder of a type it counts."""
    m = doc.memory
    return (
        doc.deleted_at is None
        and m is not None
        and m.type.value in _FOLDERS
        and doc.path.startswith(f"{PREFIX}{m.type.value}/")
    )
