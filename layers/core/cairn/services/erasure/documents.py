"""Removing documents for good (an erasure), with every record that names them or was drawn from
their text: each family of records is removed by the service that keeps it.

For each document: its entity mentions (counts go down; an entity mentioned by nobody else goes;
again once the document is gone, for those a settler of its pending links made meanwhile), a
ThoughtMCP memory's waypoint links with the statistics of the memories at their other ends (those
of the same user the erasure does not select keep their rows), its other links both ways (keyed:
concepts of its chunks, those of chunks an earlier version had too; numbered: gbrain's), its raw rows,
the image references it made (the images' captions are made again), a pending ingest, then the
document itself (record, id pointer, chunks, content blob unless another document holds the same
bytes). For the brain at once: memory claims and by-time entries, read counts, the model's claims
read from them, raw bytes nobody else holds, extraction transcripts' raw bytes, and the context the
next sibling in a folder was indexed with (an excerpt of its predecessor's text), in the folder each
document is in and in each it moved out of (first: a resume no longer finds the documents gone). A
fact key's or status subject's line is joined over its erased values, and an erased current value's
predecessor is current again (MemoryService.close_lines)."""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any

from cairn import faults
from cairn.domain.errors import AlsoMoved, CairnError, Conflict
from cairn.domain.models import Brain, Document, Link
from cairn.ports.blobs import BlobStore
from cairn.ports.chunks import ChunkIndex
from cairn.ports.records import Put
from cairn.services.documents.blob_keys import own_folder
from cairn.services.documents.service import DocumentService
from cairn.services.documents.siblings import (
    Left,
    SiblingContext,
    digit_runs_key,
    folder_of,
    natural_key,
)
from cairn.services.documents.writes import Erased
from cairn.services.erasure.log import Progress
from cairn.services.gbrain.page_assertions import PageAssertions
from cairn.services.gbrain.raw_data import RawDataService, raw_folder
from cairn.services.links.repository import LinkRepository
from cairn.services.memory.entities import MENTIONS, EntityService
from cairn.services.memory.memories import MemoryService
from cairn.services.mnemosyne.concept_reach import Reach
from cairn.services.mnemosyne.concepts import ConceptGraph
from cairn.services.mnemosyne.image_items import ImageItems
from cairn.services.mnemosyne.item_status import ItemStatusLog
from cairn.services.search.access import AccessLog
from cairn.services.thoughtmcp.waypoints import ThoughtLinks

_TRIES = 16  # an erase's commits lost to linkers raising the document's concept reach


def _as_committed(
    progress: Callable[[Counter[str]], Put], chunks: int, earlier: int, blobs: int
) -> list[Put]:
    """The progress write for an erase's commit: the document, its chunks as read, and the `blobs`
    it removed before, `earlier` tries' too (what the erase finds otherwise is counted after it,
    in the next one)."""
    return [progress(Counter(documents=1, chunks=chunks, blobs=earlier + blobs))]


@dataclass
class DocumentEraser:
    documents: DocumentService
    chunks: ChunkIndex
    siblings: SiblingContext
    assertions: PageAssertions
    blobs: BlobStore
    links: LinkRepository
    entities: EntityService
    memories: MemoryService
    raw_data: RawDataService
    images: ImageItems
    status: ItemStatusLog
    access: AccessLog
    waypoints: ThoughtLinks
    concepts: ConceptGraph

    def erase(
        self,
        brain: Brain,
        doomed: Sequence[Document],
        others: Sequence[Document],
        counts: Counter[str] | None = None,
        *,
        progress: Progress | None = None,
    ) -> Counter[str]:
        """Remove `doomed` (documents of `brain`, live or soft-deleted) for good; `others` are the
        brain's other documents, whose bytes, raw rows and contexts must survive. What went is
        added to `counts` as it goes (returned), so a caller stopped by a failure still has it.
        `progress`: the erasure's record of its counts (log.py), written as they will stand once
        a document's erase commits (given what it removes besides) in that commit, so a process
        killed after it loses none of them."""
        counts = Counter() if counts is None else counts
        ids = {d.id for d in doomed}
        kept_blobs = {d.blob_key for d in others}
        entities_before = self.entities.repo.counters(brain.id)[0]
        raw_gone: set[str] = set()
        # First, while the doomed still stand: an erasure a crash stops resumes over what is left,
        # and a line joined over values not yet removed is joined over them once they are.
        self.memories.close_lines(brain, doomed)  # records changed, not removed: not counted
        # and the excerpts siblings took of them, which a resume could not find once they are gone
        counts["records"] += self._clear_contexts(brain, doomed, others)
        # read at once: a delete of each document's, held or not, cost a request a document; one an
        # ingest marks after this is its own to finish (completed, or forgotten in an erased scope)
        pending = self.status.held(brain.id, ids)
        # each document's concept reach, read at once; its erase's commit checks it is still so
        reaches = self.concepts.reach.read_many(brain.id, ids)
        for doc in doomed:
            chunk_ids = [c.id for c in self.chunks.get_chunks(brain.id, doc.id)]
            counts["links"] += self.waypoints.unlink_removed(brain, doc)
            mentions: list[Link] = []  # read with its other links, removed with their counts
            counts["links"] += self.links.remove_all_of(brain.id, doc.id, but=MENTIONS, kept=mentions)
            counts["links"] += self.entities.forget(brain, doc.id, read=mentions)
            counts["links"] += self.links.remove_numbered_all_of(brain.id, doc.id)
            counts["links"] += sum(self.links.remove_all_of(brain.id, chunk) for chunk in chunk_ids)
            # and those of chunks an earlier, longer version had (their names are its text's); its
            # reach stays for the erase's removal hook (ConceptGraph.unlink_removed), run after it
            reach = reaches.get(doc.id)
            counts["links"] += self.concepts.unlink_document(
                brain.id, doc.id, done=chunk_ids, standing=True, known=reach
            )
            rows, keys = self.raw_data.erase_all_of(brain, doc.id)
            counts["records"] += rows
            folder = raw_folder(brain.id, doc.id)
            raw_gone |= {key for key in keys if not key.startswith(folder)}  # an older layout's
            self.images.forget(brain, doc.path)
            if doc.id in pending:
                self.status.completed(brain.id, doc.id)
            # its raw rows' bytes, those of rows overwritten too, and a transcript's turns
            counts["blobs"] += self.blobs.delete_prefix(folder)
            shared = doc.blob_key in kept_blobs
            erased, before = self._erase(
                brain, doc, chunk_ids, reach, counts, shared=shared, progress=progress
            )
            counts["blobs"] += before  # those tries that lost to a linker took
            if erased is not None:
                counts["blobs"] += erased.blobs  # those it took first when another erased it meanwhile too
                counts["links"] += erased.links  # its removal hooks': a linker's that raced the erase
            if erased is not None and erased.document is not None:
                counts["documents"] += 1
                # what the erase removed: a writer that replaced the text since the read above linked
                # its chunks (those read too, their links removed above) again
                counts["chunks"] += len(erased.chunks)
                written = (erased.document.path, erased.document.version) != (doc.path, doc.version)
                again = set(erased.chunks) - (set() if written else set(chunk_ids))
                counts["links"] += sum(self.links.remove_all_of(brain.id, chunk) for chunk in sorted(again))
            kept_blobs.add(doc.blob_key)  # gone now, or kept: another doomed copy of it counts nothing
            # a settler finishing its pending links (services/memory/mention_links.py) may have
            # linked it since, seeing it still there: those go now, with their counts; one linking
            # after this sees it gone and drops them itself
            counts["links"] += self.entities.forget(brain, doc.id)
            faults.reached("erasure.documents")
        counts["records"] += self.memories.forget_records(brain, ids)
        counts["records"] += self.access.forget(brain.id, ids)
        counts["records"] += self.assertions.forget(brain.id, ids)
        # a Scan of the brain's raw rows (the whole table on DynamoDB): only for an older layout's keys
        still_held = self.raw_data.blob_keys(brain) if raw_gone else set()
        for key in raw_gone - still_held:
            self.blobs.delete(key)
            counts["blobs"] += 1
        counts["entities"] += max(0, entities_before - self.entities.repo.counters(brain.id)[0])
        return counts

    def _erase(
        self,
        brain: Brain,
        doc: Document,
        chunk_ids: Sequence[str],
        reach: Reach | None,
        counts: Counter[str],
        *,
        shared: bool,
        progress: Progress | None,
    ) -> tuple[Erased | None, int]:
        """The document's erase, whose commit checks its concept reach is as `reach` (the links it
        reaches were removed above): a linker that raised it since fails the commit, and its links
        are removed again from the reach read now before the next try. Returns what the erase
        removed and the bytes earlier tries took."""
        before = 0
        for _ in range(_TRIES):
            tally = None
            if progress is not None:
                tally = partial(_as_committed, progress.op, len(chunk_ids), before)
            also = self.concepts.reach.still(brain.id, doc.id, reach) if reach is not None else []
            try:
                erased = self.documents.erase(
                    brain, doc.path, also=also, keep_blob=shared, reason="erasure", doc_id=doc.id, tally=tally
                )
                if progress is not None and erased is not None and erased.document is not None:
                    progress.landed()
                return erased, before
            except AlsoMoved as exc:
                before += exc.blobs
                if progress is not None:  # the loser may be its record: another resume's write
                    progress.refresh()
                reach = self.concepts.reach.held(brain.id, doc.id)  # a damaged one: the widest, mended
                counts["links"] += self.concepts.unlink_document(
                    brain.id, doc.id, done=chunk_ids, standing=True, known=reach
                )
            except Exception:
                counts["blobs"] += before
                if self._count_if_committed(doc, chunk_ids, counts, shared=shared) and progress is not None:
                    progress.landed()
                raise
        raise Conflict("too many concurrent links of this document; retry")

    def _count_if_committed(
        self, doc: Document, chunk_ids: Sequence[str], counts: Counter[str], *, shared: bool
    ) -> bool:
        """An erase that failed once its removal committed (the index busy: its intent has the
        sweeper remove the chunks left) removed the document: counted, as a resume finds it gone,
        with its bytes at the brain's content address, which go before the record unless shared.
        True when it did (its commit wrote the erasure's progress too)."""
        try:
            gone = self.documents.repo.stored_by_id(doc.id) is None
        except CairnError:  # the failure raised is the erase's own
            return False
        if gone:
            at_content_address = own_folder(doc) is None and not shared
            counts.update(documents=1, chunks=len(chunk_ids), blobs=1 if at_content_address else 0)
        return gone

    def _clear_contexts(self, brain: Brain, doomed: Sequence[Document], others: Sequence[Document]) -> int:
        """The documents that were indexed with an excerpt of a doomed one lose that context;
        returns how many changed. Those its folders' rings of recent siblings still name are exact
        (`forget`); for the rest, the document after each doomed one in its folder, in natural order
        and in the order names had before ids compared as text (`digit_runs_key`: contexts linked
        then), whichever it was (services/documents/siblings.py). Its folder, and each one it moved
        out of (the record of the paths it left: siblings.py; records of documents no longer
        stored go too). In a folder it left at a place the record no longer holds, every document
        there loses its context."""
        paths = {d.path for d in doomed}
        ids = {d.id for d in doomed}
        left = self.siblings.paths_left(brain.id)
        held = {doc_id: left.get(doc_id, Left()) for doc_id in ids}
        was_at = {(path, doc_id) for doc_id in ids for path in held[doc_id].paths}
        # folders it was in at places no longer known: whoever is there may hold its excerpt
        every_folder = {folder_of(d.path) for d in [*doomed, *others]}
        was_in = {
            (folder, doc_id)
            for doc_id, where in held.items()
            for folder in (every_folder if where.everywhere else where.folders)
        }
        cleared = self.siblings.forget(brain.id, paths, was_at, was_in)
        unplaced = {folder for folder, _ in was_in}
        cleared |= {d.id for d in others if folder_of(d.path) in unplaced}
        groups: dict[tuple[str, bool], list[tuple[tuple[Any, ...], bool, str]]] = {}
        placed = [(d.path, d) for d in [*doomed, *others]] + [
            (path, d) for d in doomed for path in held[d.id].paths
        ]
        for path, doc in placed:
            takes_context = doc.owner is None and not doc.content_type.startswith("image/")
            if doc.id in ids or (doc.deleted_at is None and takes_context):
                folder, doomed_too = posixpath.dirname(path), doc.id in ids
                # a doomed one after another at the same path (one it left): the next path follows it
                groups.setdefault((folder, True), []).append((natural_key(path), doomed_too, doc.id))
                groups.setdefault((folder, False), []).append((digit_runs_key(path), doomed_too, doc.id))
        for entries in groups.values():
            entries.sort()
            for (_, was_doomed, _), (_, follows_doomed, following) in pairwise(entries):
                if was_doomed and not follows_doomed:
                    cleared.add(following)
        stored = {d.id for d in others} | ids
        gone = set(left) - stored
        gone -= set(self.documents.repo.get_many_by_id(gone)) if gone else set()  # made meanwhile
        self.siblings.forget_left(brain.id, gone)  # of a document gone: the paths it names
        return self.documents.clear_contexts(brain.id, cleared - ids)
