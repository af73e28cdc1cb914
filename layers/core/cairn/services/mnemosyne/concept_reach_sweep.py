"""The concept links earlier releases left without a reach: one pass over each brain, in steps.

Releases before concept_reach.py linked chunks with no reach record, so an erasure or a deletion
removed the links of the chunks its document had then, and a document that shrank kept the links of
the chunks it dropped (their concept names taken from its text) past its erasure; the links of a
document such a release erased stayed for good. This pass, a chore of the sweep (services/documents/
index_sweeper.py), reads every brain's chunk-link partitions (`links#<brain>#out#chk_…`) once:

- a document still stored (live or soft-deleted) gets its reach raised to the highest chunk
  ordinal linked, naming the stages of the queued ingests' chunk ids linked (chunk_ids.py), so its
  next rewrite trims the links past its chunks and an erasure or deletion removes them all. They
  are not removed here: a rewrite committing as the pass reads the document has its linker make
  links of those ordinals again, which the pass cannot tell from the old ones (a keyed link added
  again keeps the first), and would remove;
- a document no longer stored has every link the reach names removed, and the reach with it. The
  reach is raised before the document is read, as a linker does (concepts.py), so an erasure or
  deletion whose removal read the reach before it was raised has already removed the record, and
  the read finds the document gone;
- a document whose record no longer reads (damaged) is taken for stored: its links stay;
- a link of a chunk id whose ordinal no document's chunks reach (changed outside Cairn: MAX_REACH
  or more) is removed, and left out of the reach, which it would make unbounded.

Chunk-link partitions cannot be listed without a scan: the pass is a BrainScanPass
(services/brain_scan_pass.py: one page of one scan of up to MAX_SCAN_PREFIXES brains a step, a
mark each brain done, `finished` once no brain needs it), and its progress is one record:

| record                 | pk                            | sk          | data                          |
|------------------------|-------------------------------|-------------|-------------------------------|
| the pass               | `concept-reach-pass`          | `pass-2`    | `started`, `brains`, `cursor` |
| a brain's pass is done | `links#<brain_id>#reach-done` | `concept-2` | `at`                          |

This is the second pass (`-2`): the first (`pass`, `concept`) knew only live chunk ids, and the
erasures and re-ingests of a release whose reach named no stages left the links of queued ingests'
chunks, which this one finds; the first's records stay, unread (a brain's goes with the brain).
A brain's mark sits under its links prefix, so deleting the brain takes it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from contextlib import suppress
from typing import Final

from cairn.domain.errors import Conflict, DamagedStore
from cairn.ports.clock import Clock
from cairn.ports.records import Item, Put, RecordStore
from cairn.services.brain_scan_pass import LATE_S as LATE_S  # the pass's margin, named here too
from cairn.services.brain_scan_pass import BrainScanPass
from cairn.services.documents.chunk_ids import parse_chunk_id
from cairn.services.links.repository import links_prefix
from cairn.services.mnemosyne.concept_reach import ConceptReach, reach_data, reach_key, reach_of, stray
from cairn.services.repositories import DocumentRepository, get_all

log = logging.getLogger(__name__)

PASS_KEY: Final = ("concept-reach-pass", "pass-2")
STEP_ITEMS: Final = 500
"""The link items one step's scan page holds at most."""
_BATCH: Final = 100  # reach records made in one transaction (DynamoDB's 100 items)


def done_key(brain_id: str) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}reach-done", "concept-2"


def _chunk_prefix(brain_id: str) -> str:
    return f"{links_prefix(brain_id)}out#chk_"


class ReachSweep(BrainScanPass):
    """The pass (module docstring) over the brains the sweep names."""

    def __init__(
        self,
        records: RecordStore,
        reach: ConceptReach,
        documents: DocumentRepository,
        clock: Clock,
        *,
        step_items: int = STEP_ITEMS,
    ) -> None:
        self.reach = reach
        self.documents = documents
        super().__init__(
            records,
            documents.brains,
            clock,
            pass_key=PASS_KEY,
            done_key=done_key,
            prefix=_chunk_prefix,
            settle=self._settle,
            step_items=step_items,
        )

    def _settle(self, items: Sequence[Item]) -> None:
        """Raise the reach of each document these link items name to the highest ordinal linked,
        naming the stages of the chunk ids linked, then remove every link of those no longer stored
        (module docstring)."""
        upto: dict[tuple[str, str], int] = {}
        stages: dict[tuple[str, str], set[str]] = defaultdict(set)
        strays: list[Item] = []
        for item in items:
            brain_id, found, chunk = item.pk.removeprefix("links#").partition("#out#")
            ref = parse_chunk_id(chunk)
            if not found or ref is None or not item.sk.startswith(f"{self.reach.kind}#"):
                continue
            if stray(ref):  # no reach covers it: removed here (concept_reach.py)
                strays.append(item)
                continue
            key = (brain_id, ref.document_id)
            upto[key] = max(upto.get(key, 0), ref.ordinal + 1)
            stages[key].add(ref.stage)
        self.reach.remove_strays(strays)
        if not upto:
            return
        self._raise(upto, stages)
        stored = self._stored(upto)
        for key in upto:
            if key not in stored:
                self.reach.forget(*key)

    def _stored(self, keys: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these (brain, document) are still stored, in two batch reads. One whose record
        no longer reads is taken for stored (its links stay, bounded by the reach just raised),
        where it failed every step on this page and held the pass up for good."""
        ids = {doc_id for _, doc_id in keys}
        damaged: set[str] = set()
        try:
            found = self.documents.get_many_by_id(ids)
        except DamagedStore:
            found = {}
            for doc_id in ids:
                try:
                    doc = self.documents.stored_by_id(doc_id)
                except DamagedStore:
                    log.warning("concept reach pass: document %s is damaged; its links are kept", doc_id)
                    damaged.add(doc_id)
                    continue
                if doc is not None:
                    found[doc_id] = doc
        return {
            (brain_id, doc_id)
            for brain_id, doc_id in keys
            if doc_id in damaged or (doc_id in found and found[doc_id].brain_id == brain_id)
        }

    def _raise(self, upto: dict[tuple[str, str], int], stages: Mapping[tuple[str, str], set[str]]) -> None:
        """Each document's reach raised to at least `upto`'s: those with none made in transactions of
        _BATCH (each must not exist yet: one a linker made meanwhile sends its batch one at a time),
        the rest one at a time (ConceptReach.extend). A damaged one (its `upto` not a count) is
        replaced: the pass reads every link of the brain, so the reach it leaves covers them all,
        where a damaged one would hold the pass (and the document's linker and erasure) up."""
        known = get_all(self.records, [reach_key(*key) for key in upto])
        missing: list[tuple[str, str]] = []
        for key, top in upto.items():
            held = known.get(reach_key(*key))
            if held is None:
                missing.append(key)
                continue
            try:
                was = reach_of(held)
            except DamagedStore:  # what the pass reads replaces it
                with suppress(Conflict):  # a linker's write meanwhile: extend reads it
                    self.records.put(Item(*reach_key(*key), reach_data(top, stages[key])), held.version)
                    continue
            else:
                if was.upto >= top and stages[key] <= set(was.families):
                    continue
            self.reach.extend(*key, top, stages=stages[key])
        for start in range(0, len(missing), _BATCH):
            batch = missing[start : start + _BATCH]
            try:
                self.records.transact(
                    [Put(Item(*reach_key(*key), reach_data(upto[key], stages[key])), 0) for key in batch]
                )
            except Conflict:
                for key in batch:
                    self.reach.extend(*key, upto[key], stages=stages[key])
