"""Typed memories: small documents with a memory facet, for every surface that stores them.

Types and their lifecycles:
- `event`: something happened; append-only. The consolidation job soft-expires events nobody
  read for EVENT_TTL_DAYS when their importance is medium or low.
- `fact`: knowledge that changes; a fact with a `key` supersedes the current fact with that key.
- `decision`: a choice and its reason; append-only, never expires.
- `status`: the current state of something; a status supersedes the current one of its `subject`.
- `note`: anything else (what the canonical surface writes). A document with no facet at all (a
  note another surface wrote) is updated and deleted by its id too (plain_notes.py).

A memory lives at `memories/<type>/<id>.md`; its text is scrubbed of credentials first
(domain/scrub.py). Three kinds of claim records, written in the same transaction as the memory,
keep the rules atomic on every record store (one conditional transaction: SQLite's or
DynamoDB's TransactWriteItems):
- `key#…` / `subject#…`: the current memory of a fact key or status subject. A writer commits its
  memory, the claim (conditional on the version it read) and the superseded memory's record
  (conditional on its version) together; a concurrent writer's transaction fails and retries
  against the new current memory, so exactly one stays current whatever the interleaving.
- `hash#<type>#<client>#<hash>`: the memory holding that text for that client and type. A
  store whose text is already held by a current memory returns it instead (a duplicate).
- `memtime#<brain>` items ordered by creation time, so "what happened since T" reads a range.

Superseded memories stay (with `superseded_by`, `superseded_at` and `valid_to`), searchable
when history is asked for; deletes are soft. A restore stores a memory that was superseded as it
was (`MemoryInput.superseded_by`), ending nothing, even when the value that superseded it is gone
(deleted) or was restored before it; the value restored after it that superseded it records so
again (its `supersedes`). A memory that began before the current one of its line is history:
it takes its place in the line's chain in order of beginning, between the values before and after
it, and no two values' intervals overlap (history_line.py).

The parts: memory_model.py (inputs, outputs, keys), memory_reads.py (the reads), line_joins.py
(a line joined over deleted and erased values); this module holds the writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, MemoryFacet, MemoryType, MetadataValue
from cairn.domain.text import excerpt
from cairn.ports.records import Delete, Item, Put
from cairn.services.documents.inputs import DocumentInput, expect_version, keep_info
from cairn.services.documents.memory_counts import replacing
from cairn.services.memory import earlier_ends
from cairn.services.memory.claims import Claim
from cairn.services.memory.history_line import (
    live_before,
    place,
    place_by_end,
    relinked,
)
from cairn.services.memory.line_joins import RETRIES, MemoryLineJoins
from cairn.services.memory.memory_model import (
    EVENT_TTL_DAYS,
    EXPIRE_PER_RUN,
    MEMORY_ID,
    SUPERSEDES,
    Deleted,
    MemoryInput,
    Stored,
    Updated,
    checked_input,
    checked_text,
    content_hash,
    memory_path,
    title_of,
)
from cairn.services.memory.memory_ranking import (
    DECAYING,
    DEFAULT_IMPORTANCE,
)
from cairn.services.memory.plain_notes import delete_note, plain_note, update_note
from cairn.services.repositories import doc_key, document_of


class MemoryService(MemoryLineJoins):
    """Typed memories (module docstring): the writes here, the reads in memory_reads.py."""

    def store(self, brain: Brain, m: MemoryInput) -> Stored:
        """Store a memory: a duplicate of a current one returns it; a keyed fact or a status
        supersedes the current one of its key or subject, atomically."""
        text = checked_input(m)
        digest = content_hash(text)
        client = m.client_id or "global"
        if m.memory_id is not None:
            self._check_restore(brain, m.type, m.memory_id)
        for _ in range(RETRIES):
            # read once an attempt: the duplicate check, then the version the commit takes it at
            claim = self.claims.text(brain.id, m.type.value, client, digest)
            duplicate = self._duplicate(brain, m.type, claim, digest)
            if duplicate is not None:
                if self.mention_links is not None:  # its writer may have stopped before linking it
                    self.mention_links.resent(brain, duplicate)
                return Stored(duplicate, deduplicated=True)
            try:
                return self._store_once(brain, m, text, digest, client, claim)
            except Conflict:
                continue  # another writer moved a claim we read: read them again
        raise Conflict("too many concurrent writers of this memory's key, subject or text; retry")

    def _check_restore(self, brain: Brain, kind: MemoryType, memory_id: str) -> None:
        """A kept id may overwrite the memory it names (upsert), never another document: one of
        another brain, another type, or not a memory."""
        if not MEMORY_ID.fullmatch(memory_id):
            raise InvalidInput(
                "memory id must be 1-128 letters, digits, '_', '.' or '-', starting alphanumeric"
            )
        held = self.documents.repo.holder_of(memory_id)  # whoever may see it: an id is the store's
        if held is not None and held != (brain.id, memory_path(kind, memory_id)):
            raise InvalidInput(f"memory id {excerpt(memory_id)} is already used by another document")

    def _store_once(
        self, brain: Brain, m: MemoryInput, text: str, digest: str, client: str, claim: Claim
    ) -> Stored:
        now = self.clock.now()
        memory_id = m.memory_id or new_id("mem")
        ops: list[Put | Delete] = [
            self.claims.take(claim, memory_id),
            self.claims.stamp(brain.id, now, memory_id),
        ]
        # without a stated start a fact is true from now, unless it has already ended (then its
        # start is unknown: it was true until its end)
        over = m.valid_to is not None and m.valid_to <= now
        valid_from = m.valid_from or (now if m.type in DECAYING and not over else None)
        valid_to = m.valid_to
        line = self.claims.line(brain.id, m.type, m.key, m.subject)
        old: Document | None = None
        read: Item | None = None  # `old`'s record as read at its path: the commit's counts take it
        history: Document | None = None  # the value it ends at, when this memory was true before
        earlier: Document | None = None  # the value it then supersedes (history_line.py)
        if line is not None:
            if line.doc_id is not None:
                old, read = self._current_read(brain, m.type, line.doc_id)
            if old is None and line.doc_id is not None:  # its current value was deleted: the line
                old = self._last_kept(brain, line.doc_id, memory_id)  # goes on from the one before
            if old is not None and old.id != memory_id and _is_history(m, now, old):
                history, old = old, None
                # placed by its start, stated or now (a change is scheduled ahead); with none it has
                # ended, its start unknown: placed by its end, starting where the value before ends
                if valid_from is not None:
                    spot = place(self.documents.repo, history, valid_from)
                    history, earlier = spot.later, spot.earlier
                    ops += relinked(self.documents.repo, spot, memory_id, valid_from, now)
                elif valid_to is not None:
                    spot, valid_from = place_by_end(self.documents.repo, history, valid_to)
                    history, earlier = spot.later, spot.earlier
                    ops += relinked(self.documents.repo, spot, memory_id, valid_from or valid_to, now)
                assert history.memory is not None
                began = history.memory.valid_from
                if began is not None:
                    valid_to = min(valid_to or began, began)
            elif m.superseded_by is not None and old is not None:
                old = None  # restored superseded beside the line's current value: it ends nothing
            else:
                ops.append(self.claims.take(line, memory_id))
                if old is None and line.doc_id is not None and m.memory_id is not None:
                    earlier = self._restored_before(brain, line.doc_id, memory_id)
            if old is not None and old.id != memory_id:
                assert old.memory is not None
                successor_from = valid_from or now
                ends = old.memory.valid_to
                # it was true until its successor became true (or until its own end); one that
                # had not begun yet never was (an empty interval, never an inverted one)
                until = successor_from if ends is None else min(ends, successor_from)
                if old.memory.valid_from is not None:
                    until = max(until, old.memory.valid_from)
                # one superseded already (by a value deleted since) was no longer current from
                # then on: a search of what Cairn knew between still says so
                superseded_at = old.memory.superseded_at or now
                ended = old.memory.model_copy(
                    update={
                        "superseded_by": memory_id,
                        "superseded_at": superseded_at,
                        "valid_to": until,
                        # the end it had until now is kept beside: what Cairn knew then does not move
                        "earlier_ends": earlier_ends.beside(old.memory, now, superseded_at),
                    }
                )
                superseded = old.model_copy(update={"memory": ended, "updated_at": now})
                ops.append(replacing(self.documents.repo.put_op(superseded, old.version), read))
        facet = MemoryFacet(
            type=m.type,
            key=m.key if m.type is MemoryType.fact else None,
            subject=m.subject if m.type is MemoryType.status else None,
            status_value=m.status_value if m.type is MemoryType.status else None,
            importance=m.importance,
            category=m.category,
            sector=m.sector,
            source_agent=m.source_agent,
            client_id=client,
            valid_from=valid_from,
            valid_to=valid_to,
            # a restored value its line had moved past stays superseded (by one perhaps deleted since)
            superseded_by=history.id if history is not None else m.superseded_by,
            superseded_at=now if history is not None or m.superseded_by is not None else None,
            knowledge_category=m.knowledge_category,
            content_hash=digest,
        )
        before = old if old is not None and old.id != memory_id else earlier
        metadata = {**m.metadata, **({SUPERSEDES: before.id} if before is not None else {})}
        info = DocumentInput(
            title=title_of(text), tags=m.tags, metadata=metadata, memory=facet, doc_id=memory_id
        )
        # its entity links come after the commit, which marks them pending (mention_links.py); a
        # kept id may be an upsert: the links its old text had go (relink). A new memory that
        # mentions nothing has none to make: no mark.
        links, mark, mentions = self.mention_links, None, []
        if links is not None:
            mentions = links.entities.extract(text, client_id=client, source_agent=m.source_agent)
            if mentions or m.memory_id is not None:
                mark = links.mark(brain.id, memory_id, relink=m.memory_id is not None)
                ops.append(links.pending.put_op(mark))
        # The superseded memory's record changes in the same commit: its chunks follow it there.
        outcome = self.documents.write(brain, memory_path(m.type, memory_id), text.encode(), info, also=ops)
        if links is not None and mark is not None:
            links.link(brain, outcome.document, mentions, outcome.document.created_at, mark)
        replaced = old.id if old is not None and old.id != memory_id else None
        return Stored(outcome.document, deduplicated=False, supersedes=replaced)

    def _restored_before(self, brain: Brain, claimed: str, memory_id: str) -> Document | None:
        """The value its line's claim names, when that one was restored superseded by the memory
        `memory_id` being restored now (oldest first): it supersedes that one, as where it was
        exported (its `supersedes`)."""
        doc = self.documents.repo.get_by_id(claimed)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None or doc.memory is None:
            return None
        return doc if doc.memory.superseded_by == memory_id else None

    def _duplicate(self, brain: Brain, kind: MemoryType, claim: Claim, digest: str) -> Document | None:
        if claim.doc_id is None:
            return None
        doc = self._current(brain, kind, claim.doc_id)
        if doc is None or doc.memory is None or doc.memory.content_hash != digest:
            return None
        return doc

    def _current(self, brain: Brain, kind: MemoryType, memory_id: str) -> Document | None:
        return self._current_read(brain, kind, memory_id)[0]

    def _current_read(
        self, brain: Brain, kind: MemoryType, memory_id: str
    ) -> tuple[Document | None, Item | None]:
        """The claimed memory if it is current: read where a memory of its kind is stored (one
        read), or by its id's pointer if it is not there (moved by a rename, or erased); and its
        record as read at its path (None when found by its pointer), which a commit superseding it
        passes on to its counts (memory_counts.Replacing) instead of reading it again."""
        repo = self.documents.repo
        item = repo.records.get(*doc_key(brain.id, memory_path(kind, memory_id)))
        doc = repo.seen(document_of(item)) if item is not None else None  # what repo.get answers
        if doc is None or doc.id != memory_id:
            item, doc = None, repo.get_by_id(memory_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None or doc.memory is None:
            return None, None
        return (doc, item) if doc.memory.current else (None, None)

    def _last_kept(self, brain: Brain, memory_id: str, storing: str) -> Document | None:
        """When the value a line's claim names was deleted (a delete leaves its key or subject with
        no current value), the latest value before it that was not: the one a value stored next
        follows, so the line stays one chain (it superseded the deleted one, and stays superseded
        until then). The claimed value itself when it stays but its successor is gone: a restore
        brings back a value whose successor was deleted superseded, and an archive holds no deleted
        value, so the claim names it (as where it was exported the claim named the deleted one).
        None when the claimed value is current, or no value before it stays, or it is superseded
        by the memory being restored now (`storing`, restored oldest first)."""
        doc = self.documents.repo.get_by_id(memory_id)
        if doc is None or doc.brain_id != brain.id or doc.memory is None:
            return None
        if doc.deleted_at is None:
            return doc if self._successor_gone(brain, doc, storing) else None
        kept = live_before(self.documents.repo, doc)
        return (
            kept if kept is not None and kept.memory is not None and kept.memory.expired_at is None else None
        )

    def _successor_gone(self, brain: Brain, doc: Document, storing: str) -> bool:
        """Whether `doc`, live and superseded, is its line's end: the value that superseded it is
        deleted, erased, or was never restored (and is not the one being stored now)."""
        m = doc.memory
        if m is None or m.superseded_by is None or m.superseded_by == storing or m.expired_at is not None:
            return False
        after = self.documents.repo.get_by_id(m.superseded_by)
        return after is None or after.brain_id != brain.id or after.deleted_at is not None

    def update(
        self,
        brain: Brain,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        knowledge_category: str | None = None,
        metadata: Mapping[str, MetadataValue] | None = None,
        expected_version: int | None = None,
    ) -> Updated:
        """Change a memory in place (no new version): new text is scrubbed, re-hashed, re-embedded.
        With `expected_version`, only the version the caller read (VersionConflict otherwise)."""
        if content is None and importance is None and knowledge_category is None and metadata is None:
            raise InvalidInput("nothing to update: give content, importance, knowledge_category or metadata")
        try:
            doc = self.get(brain, memory_id)
        except NotFound:
            if (note := plain_note(self.documents, brain, memory_id)) is None:
                raise
            return update_note(
                self.documents,
                brain,
                note,
                content=content,
                importance=importance,
                knowledge_category=knowledge_category,
                metadata=metadata,
                expected_version=expected_version,
            )
        changed: list[str] = []

        def change(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
            if live is None or live.memory is None or data is None:
                raise NotFound(f"memory not found: {excerpt(memory_id)}")
            if live.memory.user_id is not None:  # its row, sector vectors and bytes are ThoughtMCP's
                raise InvalidInput(
                    f"memory {excerpt(memory_id)} is a ThoughtMCP user's: update it through "
                    "ThoughtMCP (update_memory)"
                )
            if expected_version is not None:
                expect_version(live.path, live, expected_version)
            changed.clear()  # a commit lost to another process's writer runs this again
            facet, text, title = live.memory, data.decode(), live.title
            if content is not None:
                new_text = checked_text(content)
                if new_text != text:
                    text, title = new_text, title_of(new_text)
                    hashed = {"content_hash": content_hash(new_text), "text_at": self.clock.now()}
                    facet = facet.model_copy(update=hashed)
                    changed.extend(["content", "content_hash"])
            if importance is not None and importance != facet.importance:
                facet = facet.model_copy(update={"importance": importance})
                changed.append("importance")
            if knowledge_category is not None and knowledge_category != facet.knowledge_category:
                facet = facet.model_copy(update={"knowledge_category": knowledge_category})
                changed.append("knowledge_category")
            if metadata is not None and dict(metadata) != {
                k: v for k, v in live.metadata.items() if k != "tags"
            }:
                changed.append("metadata")
            if not changed:
                return None
            info = keep_info(live, metadata=metadata, memory=facet)
            return text.encode(), DocumentInput(
                title=title,
                tags=info.tags,
                metadata=info.metadata,
                source=info.source,
                content_type=info.content_type,
                memory=facet,
            )

        links = self.mention_links
        mark = links.mark(brain.id, doc.id, relink=True) if links is not None else None

        def pending() -> list[Put | Delete]:  # new text: its entity links are remade after the commit
            return [links.pending.put_op(mark)] if links and mark and "content" in changed else []

        outcome = self.documents.modify(brain, doc.path, change, also=pending)
        if outcome is None:
            return Updated(doc, [])
        updated = outcome.document
        if "content" in changed and updated.memory is not None:
            m = updated.memory
            self.claims.give_text(
                brain.id, m.type.value, m.client_id or "global", m.content_hash or "", updated.id
            )
            if links is not None and mark is not None:
                found = links.entities.extract(
                    self.text(updated), client_id=m.client_id, source_agent=m.source_agent
                )
                links.link(brain, updated, found, updated.updated_at, mark)
        return Updated(updated, changed)

    def delete(self, brain: Brain, memory_id: str, *, reason: str | None = None) -> Deleted:
        """Soft delete. A memory already deleted is left as it is; one superseded or expired is
        deleted too (its text leaves history and time travel), reported `already_inactive` as
        zengram's API answers for a memory it no longer counts as active."""
        try:
            doc = self.record(brain, memory_id)
        except NotFound:
            if (note := plain_note(self.documents, brain, memory_id)) is None:
                raise
            return delete_note(self.documents, brain, note, reason)
        assert doc.memory is not None
        if doc.deleted_at is not None:
            return Deleted(doc, already_inactive=True)
        # a value inside its line: its neighbours join over it once it is gone (join_over_deleted,
        # which DocumentService.retire calls whatever surface deletes)
        gone = self.documents.retire(brain, doc.path, reason=reason, why=reason or "deleted")
        return Deleted(gone, already_inactive=not doc.memory.current)

    def expire_events(
        self, brain: Brain, *, ttl_days: int = EVENT_TTL_DAYS, limit: int = EXPIRE_PER_RUN
    ) -> int:
        """Soft-expire events older than `ttl_days` that nobody read, of medium or low importance."""
        now = self.clock.now()
        cutoff = now - timedelta(days=ttl_days)
        stale = [
            doc
            for doc in self.current_of_type(brain, [MemoryType.event])
            if doc.memory is not None
            and doc.created_at < cutoff
            and (doc.memory.importance if doc.memory.importance is not None else DEFAULT_IMPORTANCE)
            <= DEFAULT_IMPORTANCE
        ]
        unread = self.access_of(brain, [d.id for d in stale])
        expired = 0
        for doc in stale:
            if expired >= limit or unread[doc.id].count > 0:
                continue

            def expire(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
                if live is None or live.memory is None or data is None or not live.memory.current:
                    return None
                return data, keep_info(live, memory=live.memory.model_copy(update={"expired_at": now}))

            if self.documents.modify(brain, doc.path, expire, reason="expired") is not None:
                expired += 1
        return expired

    def forget_records(self, brain: Brain, doc_ids: set[str]) -> int:
        """Remove the claims (key, subject, text hash) and the by-time entries that name these
        memories (an erasure: their documents are gone); returns how many records went."""
        gone = self.claims.forget(brain.id, doc_ids)
        with self._counted_lock:
            for key in [k for k in self._counted if k[0] == brain.id]:
                del self._counted[key]
        return gone


_AHEAD = timedelta(minutes=1)  # a current value beginning later than this is a change scheduled ahead


def _is_history(m: MemoryInput, now: datetime, current: Document) -> bool:
    """Whether a memory being stored is history to the current one of its key or subject: it is
    stored as superseded, in its place in the line (history_line.py). It is when it began before
    the current one. A memory without a stated start begins now, so it supersedes the current one
    unless that one begins later still (a change scheduled ahead, which it would otherwise end
    before it began), or unless it has ended already (its `valid_to` has passed; its start is then
    unknown, and it never displaces what is true now)."""
    if m.valid_from is None and m.valid_to is not None and m.valid_to <= now:
        return True
    began = current.memory.valid_from if current.memory is not None else None
    if began is None:
        return False
    if m.valid_from is not None:
        return m.valid_from < began
    # concurrent writers without a start supersede in commit order: one that committed a moment
    # after this writer read the clock is not a change scheduled ahead (nor, across servers, is
    # one a little clock skew puts ahead)
    return began > now + _AHEAD
