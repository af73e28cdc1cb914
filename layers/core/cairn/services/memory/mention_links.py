"""A typed memory's entity links (services/memory/entities.py), made after its own commit.

An entity's records move under their own versions, and up to MAX_MENTIONS entities with their
aliases, ranks and counters would pass DynamoDB's 100 items in one transaction, so the links are
not in the memory's commit. That commit (a store, or an update that changes the text) marks them
pending instead (services/links/pending.py, kind MENTIONS_PENDING), and the mark is deleted once
they are made and the memory's text is still the one linked (`_caught_up`); a new memory that
mentions nothing has no mark (nothing to link). A store that
refuses them (Unavailable) or a writer that stops between leaves the memory stored, answered as
stored, and the mark has the sweep finish the links (`finish`), or the same memory sent again (a
duplicate).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain, Document
from cairn.services.documents.service import DocumentService
from cairn.services.links.pending import RELINKS, Finished, Mark, PendingLinks
from cairn.services.memory.entities import EntityService, Mention

log = logging.getLogger(__name__)

MENTIONS_PENDING = "mentions"
"""The kind of a typed memory's pending-links mark."""


class MentionLinks:
    def __init__(self, entities: EntityService, pending: PendingLinks, documents: DocumentService) -> None:
        self.entities = entities
        self.pending = pending
        self.documents = documents

    def mark(self, brain_id: str, memory_id: str, *, relink: bool) -> Mark:
        """`relink`: the memory may have links from an earlier text (an update, a kept id)."""
        return self.pending.mark(brain_id, memory_id, MENTIONS_PENDING, relink=relink)

    def link(
        self, brain: Brain, written: Document, mentions: Sequence[Mention], at: datetime, mark: Mark
    ) -> None:
        """After the commit that carried `mark` and wrote `written`: link the memory, then drop the
        mark once the memory's text is still the one linked. A writer overtaken by another's
        commit (its own links made after theirs) links the memory again from its text as it is
        now. A refusal leaves the links made so far and the mark, for the sweep."""
        link = self.entities.relink if mark.relink else self.entities.record_mentions
        try:
            link(brain, written.id, mentions, at)
            if self._caught_up(brain, written):
                self.pending.done(mark)
        except Unavailable as exc:
            log.warning("entity links of memory %s left for the sweep: %s", written.id, exc.message)

    def resent(self, brain: Brain, doc: Document) -> None:
        """The memory sent again (a duplicate): its links, if its writer left them pending."""
        self.pending.finish_now(brain, doc.id, MENTIONS_PENDING)

    def finish(self, brain: Brain, memory_id: str, relink: bool) -> Finished:
        """The Finisher of MENTIONS_PENDING marks: link the memory as its text is now (relinking
        drops links to entities it no longer mentions, and adds none twice); a memory deleted or
        erased meanwhile is not linked."""
        doc = self._live(brain, memory_id)
        if doc is None or doc.memory is None:
            return Finished.GONE
        self.entities.relink(
            brain, memory_id, self._mentions(doc), doc.updated_at if relink else doc.created_at
        )
        if self._live(brain, memory_id) is None:  # erased while it was linked: its links go too
            self.entities.forget(brain, memory_id)
            return Finished.GONE
        return Finished.LINKED if self._caught_up(brain, doc) else Finished.LATER

    def _caught_up(self, brain: Brain, linked: Document) -> bool:
        """Whether the memory's links are those of its text as it is now, `linked` being the
        version whose mentions were linked last: a text changed since (an update committed while
        this writer linked, whose own links may have been made first) is linked again, as often
        as it changes under it up to RELINKS times; False then (the marks stay, for the sweep).
        Each writer links after its own commit and checks after its links, so the last writer
        to check sees the text left in place."""
        for _ in range(RELINKS):
            doc = self._live(brain, linked.id, linked.path)
            if doc is None or doc.memory is None or _text_of(doc) == _text_of(linked):
                return True  # gone meanwhile: its deletion or erasure sees to its links
            self.entities.relink(brain, doc.id, self._mentions(doc), doc.updated_at)
            linked = doc
        return False

    def _mentions(self, doc: Document) -> list[Mention]:
        assert doc.memory is not None
        text = self.documents.content(doc).decode("utf-8", errors="replace")
        return self.entities.extract(
            text, client_id=doc.memory.client_id, source_agent=doc.memory.source_agent
        )

    def _live(self, brain: Brain, memory_id: str, path: str | None = None) -> Document | None:
        """The memory as it is now, if live; read at `path` where it was (one read, not the id's
        pointer and then the record), by its id when it is no longer there (renamed)."""
        repo = self.documents.repo
        doc = repo.stored(brain.id, path) if path is not None else None
        doc = doc if doc is not None and doc.id == memory_id else repo.get_by_id(memory_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None:
            return None
        return doc if doc.memory is not None and doc.memory.user_id is None else None


def _text_of(doc: Document) -> tuple[str | None, int | None]:
    """What a memory's mentions are drawn from: its text's hash (its version when it has none)."""
    hashed = doc.memory.content_hash if doc.memory is not None else None
    return hashed, doc.version if hashed is None else None
