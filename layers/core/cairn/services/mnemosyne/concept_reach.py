"""How far a document's concept links may reach: the chunk ordinals that may hold them.

A document's chunks are linked to their concepts by their ids (`chk_<doc>_<ordinal>`, services/
documents/indexing.py), one partition each, so nothing else finds every link a document ever had:
a rewrite that leaves it fewer chunks removes the chunks, not their links, and an erasure reading
the chunks that exist would leave the links of the older, longer version, which carry the concept
names taken from its text. So each linked document keeps one record, raised before its chunks are
linked, of how many ordinals may hold links:

| item          | pk                                 | sk        | data           |
|---------------|------------------------------------|-----------|----------------|
| linked reach  | `links#<brain_id>#reach#<doc id>`  | `concept` | `{"upto": N}`  |

Removing a document's links is then one read of it and one query a chunk ordinal below N (the
links of chunks 0..N-1), never a scan; the record goes last, at the version read, so a linker
that raised it meanwhile makes the removal read it again. It sits under the brain's links prefix,
so deleting a brain takes it.

A damaged record (its `upto` not a count; the reach pass, concept_reach_sweep.py, replaces those
of a brain it has not done yet) stops neither a removal nor a linker: each takes the widest reach,
one past the highest ordinal any of the document's chunks is linked from, found by a scan of those
chunks' link partitions (on DynamoDB a table Scan, for this case only), logs the document's id, and
replaces the record (or drops it with the document). A linker (`extend`) writes that reach, at
least its own, before it links, and its `trim` lowers it to the chunks the document has; a
rewrite's `trim` of a damaged record removes the links past what it keeps up to that reach.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from contextlib import suppress
from dataclasses import dataclass
from typing import Final

from cairn.domain.errors import Conflict, DamagedStore, reading_record
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.documents.indexing import chunk_id
from cairn.services.links.repository import LinkRepository, in_key, links_prefix, out_key

log = logging.getLogger(__name__)
_SK: Final = "concept"
_RETRIES: Final = 16
_OPS_PER_COMMIT: Final = 100  # two items a link: DynamoDB's 100-item transaction


def reach_key(brain_id: str, document_id: str) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}reach#{document_id}", _SK


@dataclass(frozen=True)
class Reach:
    upto: int
    version: int  # 0: no record
    damaged: bool = False  # the record does not read: `upto` is the widest reach, from the links


class ConceptReach:
    """The linked-reach records (module docstring), and the removal of links they bound."""

    def __init__(self, records: RecordStore, links: LinkRepository, kind: str) -> None:
        self.records = records
        self.links = links
        self.kind = kind

    def read(self, brain_id: str, document_id: str) -> Reach:
        item = self.records.get(*reach_key(brain_id, document_id))
        if item is None:
            return Reach(0, 0)
        with reading_record(item.pk, item.sk, "concept reach"):
            upto = item.data["upto"]
            if not isinstance(upto, int) or upto < 0:
                raise ValueError("upto is not a count")
        return Reach(upto, item.version)

    def extend(self, brain_id: str, document_id: str, upto: int, *, fresh: bool = False) -> Reach:
        """Raise the record to at least `upto` before chunks below it are linked; returns it as it
        was (Reach(0, 0) when there was none). `fresh`: a document created just now, whose record
        is written without reading it first."""
        known = Reach(0, 0) if fresh else None
        for _ in range(_RETRIES):
            was = known or self.held(brain_id, document_id)
            known = None
            if was.version and not was.damaged and was.upto >= upto:
                return was
            try:  # a damaged record is mended to the widest reach, which `trim` lowers after linking
                self.records.put(
                    Item(*reach_key(brain_id, document_id), {"upto": max(upto, was.upto)}), was.version
                )
                return was
            except Conflict:
                continue  # another linker's raise: read it again
        raise Conflict("too many concurrent links of this document; retry")

    def trim(self, brain_id: str, document_id: str, keep: int, upto: int) -> int:
        """Remove the links of the document's chunks `keep`..`upto`-1 (those a rewrite dropped) and
        lower the record to `keep` when no linker raised it meanwhile; returns links removed."""
        if upto <= keep:
            return 0
        removed = self._unlink(brain_id, document_id, range(keep, upto), ())
        was = self.held(brain_id, document_id)
        if was.damaged and was.upto > upto:  # the links past `upto` the scan found go too
            removed += self._unlink(brain_id, document_id, range(upto, was.upto), ())
        if was.version and (was.upto == upto or was.damaged):
            # raised meanwhile (Conflict): a record too high only costs an erasure a few empty reads
            with suppress(Conflict):
                self.records.put(Item(*reach_key(brain_id, document_id), {"upto": keep}), was.version)
        return removed

    def forget(
        self, brain_id: str, document_id: str, *, done: Collection[str] = (), keep: bool = False
    ) -> int:
        """Remove every link of the document's chunks the record reaches (but `done`: chunk ids
        whose links the caller removed already), then the record unless `keep`; returns links
        removed. A linker raising the record meanwhile makes it read again. The record is only
        dropped once the document is gone (`keep` while it stands): a linker that saw it standing
        after linking counts on whoever removes it reading the record after that."""
        removed = 0
        for _ in range(_RETRIES):
            was = self.held(brain_id, document_id)
            if not was.version:
                return removed
            removed += self._unlink(brain_id, document_id, range(was.upto), done)
            if keep and was.damaged:  # mended: the removal once the document is gone reads it
                with suppress(Conflict):  # a linker's write meanwhile replaced it
                    self.records.put(Item(*reach_key(brain_id, document_id), {"upto": was.upto}), was.version)
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
        upto = self._linked_upto(brain_id, document_id)
        log.warning(
            "the concept reach of document %s is damaged: the links of its chunks 0..%d, all that a "
            "scan finds, are taken for it",
            document_id,
            upto - 1,
        )
        return Reach(upto, item.version, damaged=True)

    def _linked_upto(self, brain_id: str, document_id: str) -> int:
        """One past the highest ordinal of the document's chunks holding a link of `kind` (a scan)."""
        prefix = f"{links_prefix(brain_id)}out#{chunk_id(document_id, 0).removesuffix('0')}"
        upto, cursor = 0, None
        while True:
            page = self.records.scan([prefix], cursor=cursor)
            for item in page.items:
                source = item.pk.removeprefix(f"{links_prefix(brain_id)}out#")
                ordinal = source.rsplit("_", 1)[-1]
                if (
                    item.sk.startswith(f"{self.kind}#")
                    and ordinal.isdigit()
                    and source == chunk_id(document_id, int(ordinal))
                ):
                    upto = max(upto, int(ordinal) + 1)
            if page.cursor is None:
                return upto
            cursor = page.cursor

    def _drop(self, brain_id: str, document_id: str, version: int) -> bool:
        try:
            self.records.delete(*reach_key(brain_id, document_id), expected_version=version)
        except Conflict:
            return False
        return True

    def _unlink(self, brain_id: str, document_id: str, ordinals: range, done: Collection[str]) -> int:
        """Remove the links of `kind` from the chunks of these ordinals (but `done`): one query a
        chunk, the links of several in one transaction."""
        ops: list[Put | Delete] = []
        removed = 0
        for source in (chunk_id(document_id, n) for n in ordinals):
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
