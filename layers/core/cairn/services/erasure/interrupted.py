"""Erases a process stopped half-way, finished by the sweep.

`DocumentService.erase` removes a document's folder before its record, so a process killed between
the two leaves a record whose bytes are gone (its reads answer `damaged_content`). Before the
folder goes the erase writes a pending-links mark of kind ERASES (services/documents/writes.py;
one transaction), and the commit that removes the record deletes it; a mark left standing is
finished as the other pending marks are (services/links/pending.py: the sweep, `cairn check`),
by `InterruptedErases.finish`, once a minute old (WRITERS_S):

- the document is gone, or its id now names another brain's: the mark only goes;
- a subject's erasure of its brain is still running: left to it (its resume erases the document
  and counts it on its receipt, which goes on from the counts the stopped attempt kept: log.py);
- its bytes read back whole at another version than the one the erase read (the mark holds it):
  it was written again since, and the sweep leaves it as it is;
- otherwise (its bytes gone, or whole at the version read: the erase stopped before they went, or
  is still under way a minute on, and a dropped mark would leave it half-erased should it stop
  after them) the erasure's own document eraser (documents.py) finishes it: its links, entity
  mentions, raw rows and the records that name it, then record, id pointer, chunks and companions.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from cairn.domain.errors import DamagedContent
from cairn.domain.models import Brain, Document
from cairn.services.documents.writes import ERASES
from cairn.services.erasure.documents import DocumentEraser
from cairn.services.erasure.log import ErasureLog
from cairn.services.links.pending import Finished, PendingLinks

log = logging.getLogger(__name__)

WRITERS_S = 60.0
"""How long an erase's mark is left to the erase that wrote it, even by a settle asked to take
every mark (`cairn check`, a process opening the data): an erase under way in another process,
its bytes not yet removed, would have its mark dropped, or, removed, its document erased from
under it. An erase takes well under a second; the running server's sweep grace is the same."""


FRESH_S = 5.0
"""How long one read of the erasures running serves the finisher (the erasure log keeps every
receipt, so a read per mark made a storm of marks cost the whole log each). Well under WRITERS_S:
an erasure's record is written before its first erase, so the erasure that left any mark old
enough to finish was on record when the erasures running were last read."""


@dataclass
class RunningErasures:
    """The brains a subject's erasure or a brain deletion is still running in, read again once
    FRESH_S old (by `now`, the clock the marks' ages are read with); one per process."""

    erasures: Callable[[], ErasureLog]
    now: Callable[[], float]
    _read: tuple[float, frozenset[str]] | None = field(default=None, repr=False)

    def brains(self) -> frozenset[str]:
        now = self.now()
        if self._read is None or not 0 <= now - self._read[0] < FRESH_S:
            running = self.erasures().running()
            self._read = (now, frozenset(b for p in running for b in p.receipt.brains if b not in p.done))
        return self._read[1]


@dataclass
class InterruptedErases:
    eraser: DocumentEraser
    running: RunningErasures
    marks: PendingLinks

    def finish(self, brain: Brain, doc_id: str, _relink: bool = False) -> Finished:
        """The finisher of an ERASES mark (module docstring); run as the system."""
        doc = self.eraser.documents.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id:
            return Finished.GONE
        if brain.id in self.running.brains():
            return Finished.LATER
        if self._whole(doc) and not self._as_read(doc):
            return Finished.GONE
        folder = posixpath.dirname(doc.path)
        neighbours = self.eraser.documents.repo.list(brain.id, f"{folder}/" if folder else "")
        counts = self.eraser.erase(brain, [doc], [d for d in neighbours if d.id != doc.id])
        if not counts["documents"]:
            return Finished.GONE  # erased meanwhile by another
        log.warning("finished the erasure of document %s, which a stopped process left half-erased", doc.id)
        return Finished.ERASED

    def _as_read(self, doc: Document) -> bool:
        """Whether the document is at the version its erase read (its mark says; an earlier
        release's mark, which does not, counts as written since)."""
        held = self.marks.removal_data(doc.id, ERASES)
        return held is not None and held.get("version") == doc.version

    def _whole(self, doc: Document) -> bool:
        """Whether the document's bytes read back as its record says (written again since)."""
        try:
            self.eraser.documents.bytes_of(doc)
        except DamagedContent:
            return False
        return True
