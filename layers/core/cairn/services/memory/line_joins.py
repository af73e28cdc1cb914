"""A key's or subject's line joined over values that go: a soft-deleted value inside it (after the
delete commits, whichever surface deleted it) and erased ones (before they are removed); the
part of MemoryService (memories.py) that keeps "no two values overlap" when values leave a line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

from cairn.domain.errors import Conflict
from cairn.domain.models import Brain, Document
from cairn.ports.records import Put
from cairn.services.memory.history_line import closed_over, neighbours, reopened
from cairn.services.memory.memory_reads import MemoryReads

RETRIES = 64
"""Tries of a write conditional on the versions it read, before another writer is taken to hold on."""


class MemoryLineJoins(MemoryReads):
    def close_lines(self, brain: Brain, erased: Sequence[Document]) -> int:
        """Join each erased value's live neighbours in its key's or subject's line (an erasure:
        the documents are going); an erased current value's live predecessor is current again,
        holding its line's claim (one deleted before the erasure was no longer current: its
        predecessor takes the claim and stays superseded). Returns how many records changed
        (history_line.closed_over)."""
        return self._join_over(brain, erased, reopen=True)

    def join_over_deleted(self, brain: Brain, deleted: Sequence[Document]) -> None:
        """After a soft delete of documents (DocumentService.when_retired: a memory deleted through
        zengram, MCP or the web UI, a document deleted through REST, a batch's delete): each
        deleted value inside its key's or subject's line (superseded) has its neighbours joined
        over it, as an erasure's are. A deleted current value stays its line's last: the key has
        no current value until the next store goes on from the value before it (`_last_kept`)."""
        inside = [d for d in deleted if d.memory is not None and d.memory.superseded_by is not None]
        if inside:
            self._join_over(brain, inside, reopen=False)

    def _join_over(self, brain: Brain, erased: Sequence[Document], *, reopen: bool) -> int:
        by_id = {d.id: d for d in erased if d.memory is not None}
        changed = 0
        for doc in by_id.values():
            for _ in range(RETRIES):
                # the neighbours as they are now (a value may have been stored between them since
                # the delete committed), each write conditional on the version read
                earlier, later, over = neighbours(self.documents.repo, by_id, doc)
                if later is not None:
                    ops = closed_over(self.documents.repo, earlier, later, over)
                elif reopen:
                    ops = self._reopen_ops(brain, by_id, earlier, over)
                else:
                    ops = []
                if not ops:
                    break
                try:
                    self.documents.sync.settle(self.documents.repo.commit(ops), [])
                except Conflict:
                    continue  # a neighbour changed since it was read: read them again
                changed += len(ops)
                break
        return changed

    def _reopen_ops(
        self, brain: Brain, erased: Mapping[str, Document], earlier: Document | None, over: Set[str]
    ) -> list[Put]:
        """When erased values end a line (the last of them current): the live value before them,
        `earlier` (passing over deleted values too, `neighbours`), current again and its line's
        claim given to it, each at the version read; only the claim when the line's end had been
        deleted before the erasure. Nothing when the claim names a value that
        stays (one stored meanwhile), or `earlier` names a successor not passed over."""
        m = earlier.memory if earlier is not None else None
        if earlier is None or m is None or earlier.deleted_at is not None:
            return []
        if m.superseded_by not in over or m.expired_at is not None:
            return []
        claim = self.claims.line(brain.id, m.type, m.key, m.subject)
        end = erased.get(claim.doc_id) if claim is not None and claim.doc_id is not None else None
        if claim is None or end is None:
            return []
        if end.deleted_at is not None:
            # the line's end was deleted before it was erased: no longer current, so nothing is
            # current again (the key had no current value, and has none); the claim goes to the
            # value kept, which stays superseded and which the next value goes on from (_last_kept)
            return [self.claims.take(claim, earlier.id)]
        return [
            self.documents.repo.put_op(reopened(earlier), earlier.version),
            self.claims.take(claim, earlier.id),
        ]
