"""Waypoint links between a user's memories: made when a memory is stored (its most similar
memories), weighed by thought_scoring, and removed with the memory.

The links are written after the memory's own commit, which marks them pending
(services/links/pending.py, kind WAYPOINTS): a store that refuses them (Unavailable) leaves the
memory stored with the links made so far, and the mark has the sweep finish them
(`finish_links`). They are removed after the commit removing the memory, which marks that too
(removal.py, kind UNLINKS): a store that refuses them leaves the mark, and the sweep removes what
is left (`finish_unlinks`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from cairn.domain.errors import Conflict, Unavailable
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, Link
from cairn.ports.records import Delete, Put
from cairn.services.documents.chunk_ids import chunk_id
from cairn.services.links.pending import RELINKS, Finished, Mark
from cairn.services.thoughtmcp import thought_scoring as ts
from cairn.services.thoughtmcp.models import (
    LINK_KINDS,
    MAX_CONNECTIONS,
    WAYPOINT_CANDIDATES,
    Row,
    waypoint_side,
)
from cairn.services.thoughtmcp.removal import unlinks_mark
from cairn.services.thoughtmcp.store import ThoughtStore

log = logging.getLogger(__name__)

WAYPOINTS = "waypoints"
"""The kind of a memory's pending-links mark (services/links/pending.py)."""

UNLINKS_PER_COMMIT = 19
"""Links removed in one transaction: four link items and the other end's row each, the memory's
own row and its removal's mark, within DynamoDB's 100 items."""


class ThoughtLinks(ThoughtStore):
    """The waypoint links of ThoughtMemories."""

    def _link(
        self, brain: Brain, row: Row, *, finishing: bool = False, mark: Mark | None = None
    ) -> tuple[int, bool]:
        """Link the memory to its most similar recent memories of the same user (at most
        MAX_CONNECTIONS connections, both ways, weight >= the threshold); `finishing` what a writer
        began leaves out those it is linked to already. Returns the links made and whether every
        one was (False: the store refused one, Unavailable; it keeps those made so far). `mark`,
        the pending mark of the writer's commit, goes with the last link's transaction once every
        link is made (alone when no transaction carried it): a write pays no commit for it."""
        chosen = self._chosen(brain, row)
        if chosen and finishing:
            linked = self._linked_to(brain.id, row.id)
            chosen = [pair for pair in chosen if pair[1].id not in linked]
        side, made, carried = waypoint_side(row), 0, False
        for n, (weight, other) in enumerate(chosen):
            last = [self.pending.delete_op(mark)] if mark is not None and n == len(chosen) - 1 else []
            try:
                got = self._connect(brain, row, other, weight, ts.link_type(side, waypoint_side(other)), last)
            except Unavailable as exc:
                log.warning(
                    "waypoint links of memory %s left for the sweep after %d: %s", row.id, made, exc.message
                )
                return made, False
            made += got
            carried = bool(last and got)
        if mark is not None and not carried:
            self.pending.done(mark)
        return made, True

    def _chosen(self, brain: Brain, row: Row) -> list[tuple[float, Row]]:
        """The memories `row` would link to now, with their weights, best first."""
        others = [r for r in self._newest(brain.id, row.user_id, WAYPOINT_CANDIDATES + 1) if r.id != row.id]
        others = others[:WAYPOINT_CANDIDATES]
        if not others:
            return []
        ids = [chunk_id(row.id, 0), *(chunk_id(r.id, 0) for r in others)]
        vectors = self.chunks.get_vectors(brain.id, ids)
        mine = vectors.get(ids[0])
        if mine is None:
            return []
        side = waypoint_side(row)
        scored: list[tuple[float, Row]] = []
        for other in others:
            theirs = vectors.get(chunk_id(other.id, 0))
            if theirs is None or other.strength <= 0:
                continue
            cosine = float(np.dot(np.asarray(mine).ravel(), np.asarray(theirs).ravel()))
            weight = ts.waypoint_weight(cosine, side, waypoint_side(other))
            if weight >= ts.WAYPOINT_THRESHOLD:
                scored.append((weight, other))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        return scored[:MAX_CONNECTIONS]

    def _linked_to(self, brain_id: str, memory_id: str) -> set[str]:
        return {
            link.target_id for link in self.links.outgoing(brain_id, memory_id) if link.kind in LINK_KINDS
        }

    def _relink(
        self, brain: Brain, user_id: str, memory_id: str, mark: Mark | None = None
    ) -> tuple[int, bool]:
        """The memory's text changed: drop its links, then link it as it is now; returns the links
        removed and made, and whether every change was made (False: the store refused one, and
        `mark` stays). `mark`: as `_link`'s."""
        try:
            removed = self._unlink(brain, user_id, memory_id)[0]
        except Unavailable as exc:
            log.warning("waypoint links of memory %s left for the sweep: %s", memory_id, exc.message)
            return 0, False
        row = self._rows(brain.id, user_id, [memory_id]).get(memory_id)
        if row is None:  # forgotten meanwhile
            if mark is not None:
                self.pending.done(mark)
            return removed, True
        made, whole = self._link(brain, row, mark=mark)
        return removed + made, whole

    def finish_links(self, brain: Brain, memory_id: str, relink: bool) -> Finished:
        """Finish the waypoint links a pending mark names (services/links/pending.py): those the
        memory would get now; GONE when the memory is (its mark is dropped)."""
        doc = self._memory_doc(brain, memory_id)
        if doc is None:
            return Finished.GONE
        assert doc.memory is not None and doc.memory.user_id is not None
        if self.documents.repo.intents.get(memory_id) is not None:
            return Finished.LATER  # its vectors are not indexed yet: the index sweep comes first
        if relink:
            whole = self._relink(brain, doc.memory.user_id, memory_id)[1]
        else:
            row = self._rows(brain.id, doc.memory.user_id, [memory_id]).get(memory_id)
            if row is None:  # forgotten meanwhile
                return Finished.GONE
            whole = self._link(brain, row, finishing=True)[1]
        return Finished.LINKED if whole and self._caught_up(brain, doc) else Finished.LATER

    def _caught_up(self, brain: Brain, linked: Document) -> bool:
        """Whether the memory's links are those of its text as it is now, `linked` being the
        version read (or written, by an update) before its links were chosen. An update committed
        meanwhile relinks the memory after its commit, but a link this settler or writer chose
        for the older text may have committed after that update's relink dropped the old ones:
        the memory is relinked from what it is now, as often as it changes under it up to
        RELINKS times; False then (a settler's marks stay, for the sweep). An update committing
        after this read drops the links made here itself. One read when nothing changed. Each
        relink is marked first (one transaction, only when the text changed): the writer's mark
        went with its last link, and the other update's with its own, so a relink the store
        refuses here would otherwise leave the older text's link with nothing to mend it."""
        for _ in range(RELINKS):
            doc = self._memory_doc(brain, linked.id)
            if doc is None or doc.checksum_sha256 == linked.checksum_sha256:
                return True  # gone meanwhile: its removal takes its links
            assert doc.memory is not None and doc.memory.user_id is not None
            if self.documents.repo.intents.get(doc.id) is not None:
                return False  # the new text's vectors are not indexed yet
            mark = self.pending.mark(brain.id, doc.id, WAYPOINTS, relink=True)
            try:
                self.pending.records.transact([self.pending.put_op(mark)])
            except Unavailable as exc:
                log.warning("waypoint links of memory %s left for the sweep: %s", doc.id, exc.message)
                return False
            if not self._relink(brain, doc.memory.user_id, doc.id, mark)[1]:
                return False
            linked = doc
        return False

    def _memory_doc(self, brain: Brain, memory_id: str) -> Document | None:
        """The memory's live document, when it is one of a user's memories of the brain."""
        doc = self.documents.repo.get_by_id(memory_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None:
            return None
        return doc if doc.memory is not None and doc.memory.user_id is not None else None

    def _connect(
        self, brain: Brain, a: Row, b: Row, weight: float, kind: str, also: Sequence[Put | Delete]
    ) -> int:
        """Link a and b both ways, `also` in the same transaction; returns links made (0: one
        of them is gone, or kept moving)."""
        now = self.clock.now()
        weight = round(weight, 6)  # as the links store it, so the statistics add up exactly
        for _ in range(8):
            rows = self._rows(brain.id, a.user_id, [a.id, b.id])
            if a.id not in rows or b.id not in rows:
                return 0
            ops: list[Put | Delete] = []
            for src, dst in ((a.id, b.id), (b.id, a.id)):
                link = Link(id=new_id("lnk"), brain_id=brain.id, source_id=src, target_id=dst, kind=kind,
                            weight=weight, created_at=now)  # fmt: skip
                ops += self.links.add_ops(link)
            for r in (rows[a.id], rows[b.id]):
                r.link_sum += 2 * weight  # both directions touch each end
                r.link_count += 2
                ops.append(self.rows.put_op(brain.id, r, r.version))
            try:
                self.rows.commit([*ops, *also])
            except Conflict:
                continue  # a row moved (a read reinforced it) or the link exists: read again
            self._touched(brain.id, a.user_id, a.id, b.id)
            return 2
        return 0

    def unlink_removed(self, brain: Brain, doc: Document) -> int:
        """A memory's document about to be erased (services/erasure/documents.py): its links go,
        and the other ends' statistics, as a hard forget's do, so no memory keeps the weight of a
        link to one that is gone; returns the links removed, each direction counted (as an
        erasure's receipt counts links). No mark is touched: the erase's own commit marks the
        memory (removal.py) and its removal hook (`unlink_all_removed`) drops the mark, with any
        link made between; deleting it here was a transaction for a mark not written yet."""
        user_id = doc.memory.user_id if doc.memory is not None else None
        if user_id is None:
            return 0
        return self._unlink(brain, user_id, doc.id)[0]

    def unlink_all_removed(self, brain: Brain, docs: Sequence[Document]) -> int:
        """`unlink_removed` for the documents one removal took (DocumentService.when_removed: a
        batch's together): the marks of those with no link left go in one transaction, not one
        each. One the store refuses is left with its mark, and the rest go on."""
        removed, unlinked = 0, list[Mark]()
        for doc in docs:
            user_id = doc.memory.user_id if doc.memory is not None else None
            if user_id is None:
                continue
            mark = unlinks_mark(self.pending, brain.id, doc.id)
            try:
                removed += self._unlink(brain, user_id, doc.id, mark, unlinked)[0]
            except Unavailable as exc:
                log.warning("waypoint links of removed memory %s left for the sweep: %s", doc.id, exc.message)
        self.pending.done_all(unlinked)
        return removed

    def finish_unlinks(self, brain: Brain, memory_id: str, relink: bool) -> Finished:
        """Finish a removal its unlinking did not (services/links/pending.py, kind UNLINKS): the
        memory's remaining waypoint links go, with the other ends' statistics. The mark names no
        user: the other ends are memories of the same user (`_chosen`), whose documents name it.
        UNLINKED once those left are removed, GONE when none was (the mark only goes), LATER when a
        link kept conflicting."""
        links = [link for kind in LINK_KINDS for link in self.links.outgoing(brain.id, memory_id, kind)]
        if not links:
            return Finished.GONE
        user_id = self._user_of(brain, [memory_id, *(link.target_id for link in links)])
        whole = self._unlink(brain, user_id, memory_id)[1]
        return Finished.UNLINKED if whole else Finished.LATER

    def _user_of(self, brain: Brain, memory_ids: Sequence[str]) -> str | None:
        """The user whose memories these are, from the first document (live or soft-deleted) that
        names one; None when none is left (every end removed: no row left to correct)."""
        for memory_id in memory_ids:
            doc = self.documents.repo.get_by_id(memory_id)
            if doc is not None and doc.brain_id == brain.id and doc.memory is not None and doc.memory.user_id:
                return doc.memory.user_id
        return None

    def _unlink(
        self,
        brain: Brain,
        user_id: str | None,
        memory_id: str,
        mark: Mark | None = None,
        unlinked: list[Mark] | None = None,
    ) -> tuple[int, bool]:
        """Remove every waypoint link of the user's memory, both ways, and both ends' statistics
        (its own row's too while it has one); returns the links removed, each direction counted
        (as `linksCreated` counts those made: 2 a connection), and whether every one went.
        UNLINKS_PER_COMMIT links go in each transaction: with a transaction each, forgetting a
        memory 4,000 others linked to took 4,000 commits on the embedded store (1.55 s, 15.89 s
        beside other disk work). A transaction that conflicts (an end read meanwhile) goes again
        one link at a time, as each did. `mark`, the removal's (removal.py), goes with the last
        link's transaction once every link is gone (alone when there was none, or into
        `unlinked` for the caller to delete with others'); a store that refuses a transaction
        (Unavailable, raised) leaves it."""
        batches = [
            (kind, links[start : start + UNLINKS_PER_COMMIT])
            for kind in LINK_KINDS
            for links in [self.links.outgoing(brain.id, memory_id, kind)]
            for start in range(0, len(links), UNLINKS_PER_COMMIT)
        ]
        removed, whole, carried = 0, True, False
        for n, (kind, batch) in enumerate(batches):
            last = (
                [self.pending.delete_op(mark)] if mark is not None and whole and n == len(batches) - 1 else []
            )
            if len(batch) > 1 and self._unlink_all(brain, user_id, memory_id, kind, batch, last):
                removed += 2 * len(batch)
                carried = bool(last)
                continue
            for i, link in enumerate(batch):
                also = last if i == len(batch) - 1 else []
                for _ in range(8):
                    if self._unlink_all(brain, user_id, memory_id, kind, [link], also):
                        removed += 2
                        carried = bool(also)
                        break
                else:
                    whole = False  # kept conflicting: left, with the mark, for the sweep
                    last = also = []
        if mark is not None and whole and not carried:
            if unlinked is not None:
                unlinked.append(mark)
            else:
                self.pending.done(mark)
        return removed, whole

    def _unlink_all(
        self,
        brain: Brain,
        user_id: str | None,
        memory_id: str,
        kind: str,
        links: list[Link],
        also: Sequence[Put | Delete] = (),
    ) -> bool:
        """Remove these links of one kind (each to another memory) in one transaction, with the
        statistics of both ends of each, subtracted link by link as one at a time did, and `also`;
        False on a Conflict (nothing removed). No user: no row left to correct."""
        targets = [link.target_id for link in links]
        ends = self._rows(brain.id, user_id, [memory_id, *targets]) if user_id is not None else {}
        ops: list[Put | Delete] = []
        for link in links:
            ops += self.links.remove_ops(brain.id, memory_id, kind, link.target_id)
            ops += self.links.remove_ops(brain.id, link.target_id, kind, memory_id)
            for end in {r.id: r for r in (ends.get(memory_id), ends.get(link.target_id)) if r}.values():
                end.link_count = max(0, end.link_count - 2)  # both directions touched each end (_connect)
                end.link_sum = max(0.0, end.link_sum - 2 * link.weight) if end.link_count else 0.0
        ops += [self.rows.put_op(brain.id, end, end.version) for end in ends.values()]
        try:
            self.rows.commit([*ops, *also])
        except Conflict:
            return False
        if user_id is not None:
            self._touched(brain.id, user_id, memory_id, *targets)
        return True
