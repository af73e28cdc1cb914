"""A hard forget: whatever is left of a memory goes, wherever it is.

The memory's document is found by its id, so one renamed through the store protocol is erased where
it is now. Its row and sector vectors go in the same transaction, whatever version they are at: a
recall reinforces the row at any moment, and the erase decides, not the row's version. Its waypoint
links, and the other ends' statistics, go only once that has committed, so a forget that fails
leaves the memory whole; that transaction marks them (removal.py), so a store refusing them
afterwards (the forget is answered as done) or a process stopping between leaves them to the sweep.
A memory read with no link left has nothing to mark: its row goes at the version read instead (a
link made since moved it: the forget reads again, and marks, as a recall's reinforcement moves it
too), and nothing is read or written after the commit.
A row left behind by a document deleted or overwritten through another surface (one no longer the
memory's) is found in the user's partition and removed too. Nothing removed answers "Memory not
found", never success."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from cairn.domain.errors import Conflict, Unavailable
from cairn.domain.models import Brain, Document
from cairn.services.thoughtmcp.checks import check_user
from cairn.services.thoughtmcp.models import NOT_FOUND_SUGGESTION, Row, ThoughtError
from cairn.services.thoughtmcp.recall import ThoughtRecall
from cairn.services.thoughtmcp.removal import removal_of, unlinks_mark

log = logging.getLogger(__name__)

WRITE_TRIES: Final = 16
"""How often a write of a memory that lost to another writer goes again before it gives up."""

NOT_FOUND: Final = "Memory not found or does not belong to user"

MOVED: Final = "Memory was moved through another surface and can no longer be changed here"
MOVED_SUGGESTION: Final = "Forget it, then remember its content again"


@dataclass(frozen=True)
class _Remains:
    owner: str
    doc: Document | None  # the memory's document, live (or soft-deleted while its row is left)
    row: Row | None


class ThoughtForgetting(ThoughtRecall):
    """The hard forget of ThoughtMemories (module docstring)."""

    def _forget_hard(self, brain: Brain, memory_id: str, user_id: str | None) -> None:
        marking = False
        for _ in range(WRITE_TRIES):
            remains = self._remains(brain, memory_id, user_id)
            unlinked_at = None if marking else self._unlinked_at(brain, remains.row)
            gone = removal_of(self.pending, brain.id, remains.owner, memory_id, unlinked_at=unlinked_at)
            try:
                if remains.doc is not None:
                    erased = self.documents.erase(
                        brain,
                        remains.doc.path,
                        also=gone,
                        reason="forget",
                        companions=False,
                        doc_id=remains.doc.id,
                    )
                    if erased is None or erased.document is None:
                        continue  # moved meanwhile, or erased by another: look for it again
                else:
                    self.rows.commit(gone)
            except Conflict:
                # Written or linked meanwhile (another process): look again, and mark this time: a
                # recall reinforcing the row fails every delete at a version read, and the erase
                # took the bytes before its commit.
                marking = True
                continue
            self._touched(brain.id, remains.owner, memory_id)
            if unlinked_at is not None:
                return  # no link to remove, and none could be made since
            try:
                self._unlink(brain, remains.owner, memory_id, unlinks_mark(self.pending, brain.id, memory_id))
            except Unavailable as exc:
                log.warning(
                    "the links of forgotten memory %s are left for the sweep: %s", memory_id, exc.message
                )
            return
        raise ThoughtError("Memory kept changing while it was being forgotten", "Try again", code="CONFLICT")

    def _unlinked_at(self, brain: Brain, row: Row | None) -> int | None:
        """The version of the memory's row when it has no link left (one read), else None. Without
        a row no link can be made, but one an earlier removal left may stand: its mark is kept."""
        if row is None or self.links.outgoing(brain.id, row.id, limit=1):
            return None
        return row.version

    def _remains(self, brain: Brain, memory_id: str, user_id: str | None) -> _Remains:
        """What is left of the memory for this caller: its document (found by id) and its row; a
        row alone when its document is gone or no longer the memory's (ThoughtError when neither)."""
        doc = self.documents.repo.get_by_id(memory_id) if isinstance(memory_id, str) and memory_id else None
        if doc is not None and doc.brain_id != brain.id:
            doc = None
        facet_user = doc.memory.user_id if doc is not None and doc.memory is not None else None
        owner = facet_user or user_id
        if owner is None or (user_id is not None and owner != user_id):
            raise ThoughtError(NOT_FOUND, NOT_FOUND_SUGGESTION)
        if user_id is None:
            check_user(owner, brain)
        row = self._rows(brain.id, owner, [memory_id]).get(memory_id)
        live = doc is not None and doc.deleted_at is None
        # A document deleted elsewhere took its row with it: forgotten already, unless its row was
        # left behind, which goes now with the document's record (its bytes are the memory's).
        mine = doc if facet_user is not None and (live or row is not None) else None
        if mine is None and row is None:
            raise ThoughtError(NOT_FOUND, NOT_FOUND_SUGGESTION)
        return _Remains(owner, mine, row)

    def _moved(self, brain: Brain, memory_id: str) -> bool:
        """The memory's live document is no longer at the path its row names (renamed through the
        store protocol), where every ThoughtMCP write of it goes."""
        doc = self.documents.repo.get_by_id(memory_id)
        if doc is None or doc.deleted_at is not None or doc.memory is None or doc.memory.user_id is None:
            return False
        row = self._rows(brain.id, doc.memory.user_id, [memory_id]).get(memory_id)
        return row is not None and row.path != doc.path
