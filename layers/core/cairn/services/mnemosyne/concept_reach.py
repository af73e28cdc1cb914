"""How far a document's concept links may reach: the chunk ordinals, and the chunk id families,
that may hold them.

A document's chunks are linked to their concepts by their ids, one partition each, so nothing
else finds every link a document ever had: a rewrite that leaves it fewer chunks removes the
chunks, not their links, and an erasure reading the chunks that exist would leave the links of
the older, longer version, which carry the concept names taken from its text. A chunk's id is
`chk_<doc>_<ordinal>`, or `chk_<doc>~<stage>_<ordinal>` for a version a queued ingest indexed in
the background, which keeps that id once activated (services/documents/chunk_ids.py). So each
linked document keeps one record, raised before its chunks are linked, of how many ordinals may
hold links and which stages' ids besides the live ones:

| item          | pk                                 | sk        | data                                |
|---------------|------------------------------------|-----------|-------------------------------------|
| linked reach  | `links#<brain_id>#reach#<doc id>`  | `concept` | `{"upto": N, "stages": ["<stage>"]}` |

(`stages` is left out when there is none.) Removing a document's links is then one read of it and
one query a chunk id below N of each family (the live one and each stage), never a scan; the
record goes last, at the version read, so a linker that raised it meanwhile makes the removal read
it again. An erasure reads its documents' records at once (`read_many`) and removes their links
while they stand; each erase's commit writes the record again at the version read (`still`), so
one raised since fails that commit, whose next try reads it again. It sits under the brain's
links prefix, so deleting a brain takes it.

Once a document's chunks carry one family's ids, the links of the others name chunks that are gone:
the linker of that family (`retire`, given the families the chunks carry as read after it linked,
so a linker whose version was replaced meanwhile retires its own) removes them, then takes their
stages off the record at the version it read; a linker of a stage, once it has linked, checks its
stage is still on the record and writes it again (`confirm`), so a retire that read the record
before takes the links it just made too, and one that wrote after it finds them; a stage no longer
on the record has the linker take its own links back.

A damaged record (its `upto` not a count or past MAX_REACH, its `stages` not stages; the reach pass,
concept_reach_sweep.py, replaces those of a brain it has not done yet) stops neither a removal nor
a linker: each takes the widest reach, one past the highest ordinal any of the document's chunks
of any family is linked from, and every family linked, found by a scan of the document's chunk
link partitions (on DynamoDB a table Scan, for this case only), logs the document's id, and
replaces the record (or drops it with the document). A linker (`extend`) writes that reach, at
least its own, before it links, and its `trim` lowers it to the chunks the document has; a
rewrite's `trim` of a damaged record removes the links past what it keeps up to that reach.

A link whose chunk id holds an ordinal no document's chunks reach (MAX_REACH or more: changed
outside Cairn, `chk_<doc>_999999999999`) is damaged too: it would make that widest reach, and each
removal's queries, unbounded. The scan that finds one removes it there and then (`held` counts it
on the reach it returns, for the removal that asked), as the reach pass does (`remove_strays`),
and leaves it out of the reach.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Final

from cairn.domain.errors import Conflict, DamagedStore, reading_record
from cairn.ports.records import MAX_GET_MANY, Delete, Item, Put, RecordStore
from cairn.services.documents.chunk_ids import LIVE, STAGE, ChunkRef, chunk_id, chunk_id_of, parse_chunk_id
from cairn.services.documents.indexing import MAX_CHUNKS
from cairn.services.links.repository import LinkRepository, in_key, links_prefix, out_key

log = logging.getLogger(__name__)
_SK: Final = "concept"
_RETRIES: Final = 16
_OPS_PER_COMMIT: Final = 100  # two items a link: DynamoDB's 100-item transaction
MAX_REACH: Final = 5 * MAX_CHUNKS
"""The highest `upto` a record reads as: a write makes at most MAX_CHUNKS chunks, and texts of
many tiny sections stored before that cap made up to about 100,000. One higher (changed outside
Cairn) is damaged, taken from the links instead of querying each chunk id below it."""


def stray(ref: ChunkRef) -> bool:
    """A chunk id no document's chunks reach (module docstring): its links are removed where found."""
    return ref.ordinal >= MAX_REACH


def reach_key(brain_id: str, document_id: str) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}reach#{document_id}", _SK


def reach_data(upto: int, stages: Iterable[str] = ()) -> dict[str, Any]:
    """A reach record's data (module docstring)."""
    named = sorted(set(stages) - {LIVE})
    return {"upto": upto, "stages": named} if named else {"upto": upto}


@dataclass(frozen=True)
class Reach:
    upto: int
    version: int  # 0: no record
    damaged: bool = False  # the record does not read: `upto` is the widest reach, from the links
    stages: tuple[str, ...] = ()  # the stages whose chunk ids may hold links, besides the live ones
    unlinked: int = 0  # links of stray chunk ids the read of a damaged one removed (module docstring)

    @property
    def families(self) -> tuple[str, ...]:
        return (LIVE, *self.stages)


def reach_of(item: Item) -> Reach:
    """A reach record read (DamagedStore when it does not read)."""
    with reading_record(item.pk, item.sk, "concept reach"):
        upto, stages = item.data["upto"], item.data.get("stages", [])
        if not isinstance(upto, int) or isinstance(upto, bool) or upto < 0:  # True would read as 1
            raise ValueError("upto is not a count")
        if upto > MAX_REACH:  # a removal would query each chunk id below it
            raise ValueError(f"upto is past {MAX_REACH}, more than a document's chunks reach")
        if not isinstance(stages, list) or not all(isinstance(s, str) and STAGE.fullmatch(s) for s in stages):
            raise ValueError("stages are not stages")
    return Reach(upto, item.version, stages=tuple(stages))


class ConceptReach:
    """The linked-reach records (module docstring), and the removal of links they bound."""

    def __init__(self, records: RecordStore, links: LinkRepository, kind: str) -> None:
        self.records = records
        self.links = links
        self.kind = kind

    def read(self, brain_id: str, document_id: str) -> Reach:
        item = self.records.get(*reach_key(brain_id, document_id))
        return Reach(0, 0) if item is None else reach_of(item)

    def read_many(self, brain_id: str, document_ids: Collection[str]) -> dict[str, Reach]:
        """`read` of each document (one BatchGetItem a hundred on DynamoDB); a damaged record is
        left out, for `held` to read and mend."""
        ids = sorted(document_ids)
        found: dict[str, Reach] = {}
        for start in range(0, len(ids), MAX_GET_MANY):
            part = ids[start : start + MAX_GET_MANY]
            items = self.records.get_many([reach_key(brain_id, doc_id) for doc_id in part])
            for doc_id in part:
                item = items.get(reach_key(brain_id, doc_id))
                with suppress(DamagedStore):
                    found[doc_id] = Reach(0, 0) if item is None else reach_of(item)
        return found

    def still(self, brain_id: str, document_id: str, was: Reach) -> list[Put]:
        """For a commit that counts on the record being as `was` read it (a removal of the links
        it reaches went before): the record written again at that version, so a linker that raised
        it meanwhile fails the commit. Nothing for no record (a linker raises it after the removal
        commits, and takes its own links back) or a damaged one (`held` took the widest reach)."""
        if not was.version or was.damaged:
            return []
        return [Put(Item(*reach_key(brain_id, document_id), reach_data(was.upto, was.stages)), was.version)]

    def extend(
        self, brain_id: str, document_id: str, upto: int, *, fresh: bool = False, stages: Collection[str] = ()
    ) -> Reach:
        """Raise the record to at least `upto`, naming `stages` too, before chunks below it of those
        stages (or live ones) are linked; returns it as it was (Reach(0, 0) when there was none).
        `fresh`: a document created just now, whose record is written without reading it first."""
        known = Reach(0, 0) if fresh else None
        for _ in range(_RETRIES):
            was = known or self.held(brain_id, document_id)
            known = None
            more = set(stages) - set(was.families)
            if was.version and not was.damaged and was.upto >= upto and not more:
                return was
            try:  # a damaged record is mended to the widest reach, which `trim` lowers after linking
                data = reach_data(max(upto, was.upto), (*was.stages, *more))
                self.records.put(Item(*reach_key(brain_id, document_id), data), was.version)
                return was
            except Conflict:
                continue  # another linker's raise: read it again
        raise Conflict("too many concurrent links of this document; retry")

    def trim(
        self, brain_id: str, document_id: str, keep: int, upto: int, *, stages: Collection[str] = ()
    ) -> int:
        """Remove the links of the document's chunks `keep`..`upto`-1 (those a rewrite dropped) of
        every family the record names and `stages`, and lower the record to `keep` when no linker
        raised it meanwhile; returns links removed."""
        if upto <= keep:
            return 0
        was = self.held(brain_id, document_id)
        families = _distinct((*was.families, *stages))
        removed = was.unlinked + self._unlink(brain_id, document_id, families, range(keep, upto), ())
        if was.damaged and was.upto > upto:  # the links past `upto` the scan found go too
            removed += self._unlink(brain_id, document_id, families, range(upto, was.upto), ())
        if was.version and (was.upto == upto or was.damaged):
            # raised meanwhile (Conflict): a record too high only costs an erasure a few empty reads
            with suppress(Conflict):
                self.records.put(
                    Item(*reach_key(brain_id, document_id), reach_data(keep, was.stages)), was.version
                )
        return removed

    def retire(self, brain_id: str, document_id: str, current: Collection[str]) -> int:
        """The document's chunks carry only the ids of the `current` stages (LIVE for live ids):
        remove the links of every other family the record names, then take those stages off it
        (module docstring); returns links removed."""
        removed = 0
        for _ in range(_RETRIES):
            was = self.held(brain_id, document_id)
            gone = [family for family in was.families if family not in current]
            removed += was.unlinked
            if not gone or not was.version:
                return removed
            removed += self._unlink(brain_id, document_id, gone, range(was.upto), ())
            kept = [stage for stage in was.stages if stage in current]
            if not set(was.stages) - set(kept):
                return removed  # only live ids were retired: the record names no stage to take off
            try:
                self.records.put(
                    Item(*reach_key(brain_id, document_id), reach_data(was.upto, kept)), was.version
                )
                return removed
            except Conflict:
                continue  # a linker wrote it meanwhile: its links may be made, read and remove again
        raise Conflict("too many concurrent links of this document; retry")

    def confirm(self, brain_id: str, document_id: str, stage: str) -> bool:
        """After a linker of `stage` linked: True when the record still names it, written again
        so a retire that read it before removes the links just made; False when a retire took it
        off (or the record went with the document): the linker takes its links back."""
        for _ in range(_RETRIES):
            was = self.held(brain_id, document_id)
            if not was.version or stage not in was.stages:
                return False
            try:
                self.records.put(
                    Item(*reach_key(brain_id, document_id), reach_data(was.upto, was.stages)), was.version
                )
                return True
            except Conflict:
                continue
        raise Conflict("too many concurrent links of this document; retry")

    def take_back(self, brain_id: str, document_id: str, stages: Collection[str], upto: int) -> int:
        """Remove the links of these stages' chunks below `upto` (a linker's, whose stages a retire
        took off the record as it linked), and no other; returns links removed."""
        return self._unlink(brain_id, document_id, stages, range(upto), ())

    def forget(
        self,
        brain_id: str,
        document_id: str,
        *,
        done: Collection[str] = (),
        keep: bool = False,
        known: Reach | None = None,
    ) -> int:
        """Remove every link of the document's chunks the record reaches (but `done`: chunk ids
        whose links the caller removed already), then the record unless `keep`; returns links
        removed. A linker raising the record meanwhile makes it read again. The record is only
        dropped once the document is gone (`keep` while it stands): a linker that saw it standing
        after linking counts on whoever removes it reading the record after that. `known`: the
        record as the caller read it (`read_many`), taken instead of reading it first."""
        removed = 0
        for _ in range(_RETRIES):
            was, known = known or self.held(brain_id, document_id), None
            if not was.version:
                return removed
            removed += was.unlinked + self._unlink(brain_id, document_id, was.families, range(was.upto), done)
            if keep and was.damaged:  # mended: the removal once the document is gone reads it
                with suppress(Conflict):  # a linker's write meanwhile replaced it
                    self.records.put(
                        Item(*reach_key(brain_id, document_id), reach_data(was.upto, was.stages)),
                        was.version,
                    )
            if keep or self._drop(brain_id, document_id, was.version):
                return removed
        raise Conflict("too many concurrent links of this document; retry")

    def held(self, brain_id: str, document_id: str) -> Reach:
        """`read`, or for a damaged record the widest reach (module docstring) at its version."""
        try:
            return self.read(brain_id, document_id)
        except DamagedStore:
            item = self.records.get(*reach_key(brain_id, document_id))
            if item is None:
                return Reach(0, 0)  # removed meanwhile
        upto, stages, unlinked = self._linked(brain_id, document_id)
        log.warning(
            "the concept reach of document %s is damaged: the links of its chunks 0..%d (%d stages), "
            "all that a scan finds, are taken for it",
            document_id,
            upto - 1,
            len(stages),
        )
        return Reach(upto, item.version, damaged=True, stages=stages, unlinked=unlinked)

    def _linked(self, brain_id: str, document_id: str) -> tuple[int, tuple[str, ...], int]:
        """One past the highest ordinal of the document's chunks holding a link of `kind`, the
        stages of those chunks' ids (a scan), and the links of stray chunk ids it removed."""
        out = f"{links_prefix(brain_id)}out#"
        prefix = f"{out}{chunk_id(document_id, 0).removesuffix('_0')}"
        upto, stages, strays, cursor = 0, set[str](), list[Item](), None
        while True:
            page = self.records.scan([prefix], cursor=cursor)
            for item in page.items:
                ref = parse_chunk_id(item.pk.removeprefix(out))
                if item.sk.startswith(f"{self.kind}#") and ref is not None and ref.document_id == document_id:
                    if stray(ref):
                        strays.append(item)
                        continue
                    upto = max(upto, ref.ordinal + 1)
                    stages.add(ref.stage)
            if page.cursor is None:
                return upto, tuple(sorted(stages - {LIVE})), self.remove_strays(strays)
            cursor = page.cursor

    def remove_strays(self, items: Iterable[Item]) -> int:
        """Remove the links of `kind` these outgoing link items (of stray chunk ids: `stray`) hold,
        both their items; returns how many."""
        ops: list[Put | Delete] = []
        for item in items:
            brain_id, found, source = item.pk.removeprefix("links#").partition("#out#")
            kind, _, target = item.sk.partition("#")
            if not found or kind != self.kind:
                continue
            log.warning(
                "a concept link of chunk %s is removed: no document's chunks reach its ordinal", source[:80]
            )
            ops += [Delete(item.pk, item.sk), Delete(*in_key(brain_id, source, kind, target))]
        for start in range(0, len(ops), _OPS_PER_COMMIT):
            self.records.transact(ops[start : start + _OPS_PER_COMMIT])
        return len(ops) // 2

    def _drop(self, brain_id: str, document_id: str, version: int) -> bool:
        try:
            self.records.delete(*reach_key(brain_id, document_id), expected_version=version)
        except Conflict:
            return False
        return True

    def _unlink(
        self,
        brain_id: str,
        document_id: str,
        families: Collection[str],
        ordinals: range,
        done: Collection[str],
    ) -> int:
        """Remove the links of `kind` from the chunks of these families and ordinals (but `done`):
        one query a chunk, the links of several in one transaction."""
        ops: list[Put | Delete] = []
        removed = 0
        for source in (chunk_id_of(document_id, family, n) for family in families for n in ordinals):
            if source in done:
                continue
            for link in self.links.outgoing(brain_id, source, self.kind):
                ops.append(Delete(*out_key(brain_id, source, self.kind, link.target_id)))
                ops.append(Delete(*in_key(brain_id, source, self.kind, link.target_id)))
                if len(ops) >= _OPS_PER_COMMIT:
                    self.records.transact(ops)
                    removed, ops = removed + len(ops) // 2, []
        if ops:
            self.records.transact(ops)
        return removed + len(ops) // 2


def _distinct(families: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(families))
