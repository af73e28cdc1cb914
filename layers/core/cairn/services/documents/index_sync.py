"""The chunk index following the document records (services/documents/index_intents.py says why and how).

After a commit and its index writes, `settle` finishes the commit's intents; a document whose
intent moved (a later commit landed between this writer's commit and its index writes, maybe in
another process), or whose record the commit changed without its chunks being written, is
reconciled from its record. `settle_pending` reconciles what stopped writers left standing, and
`ensure_indexed` lets a write that changes nothing still repair its document.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from cairn.auth import access
from cairn.domain.errors import CairnError, Unavailable
from cairn.domain.models import Document
from cairn.ports.records import Item
from cairn.services.documents.index_intents import Intent
from cairn.services.documents.indexing import DocumentIndexer
from cairn.services.documents.siblings import SiblingContext, keeps_to_itself
from cairn.services.repositories import Committed, DocumentRepository

log = logging.getLogger(__name__)
_RECONCILE_TRIES = 16


def state_of(doc: Document | None) -> tuple[str, int, object] | None:
    """What tells one version of a document's record from another."""
    return (doc.id, doc.version, doc.deleted_at) if doc is not None else None


class IndexSync:
    def __init__(
        self,
        repo: DocumentRepository,
        indexer: DocumentIndexer,
        siblings: SiblingContext,
        text_of: Callable[[Document], str],
    ) -> None:
        self.repo = repo
        self.indexer = indexer
        self.siblings = siblings
        self.text_of = text_of

    def reconcile(
        self,
        brain_id: str,
        doc_id: str,
        *,
        context: str | None = None,
    ) -> bool:
        """Make the document's chunks what its record says, whatever the index holds now (none,
        an older version's, a staged version's), and finish its intent; a record gone or
        soft-deleted leaves no chunk. Safe beside any writer, in this process or another: an
        index write of an older version landing after this one shows as a moved intent or
        record, and the document is reconciled again. False when it kept moving (its intent,
        if any, stays for a later reconcile). `context` is the index-only context the document's
        chunks carried, for when its siblings no longer record it (a rebuild read it from them)."""
        with access.as_system():
            for _ in range(_RECONCILE_TRIES):
                intent = self.repo.intents.get(doc_id)
                doc = self.repo.stored_by_id(doc_id)
                self._index_as_recorded(brain_id, doc_id, doc, context)
                if intent is not None:
                    if not self._finish([intent]):
                        return True
                elif state_of(self.repo.stored_by_id(doc_id)) == state_of(doc):
                    return True
        log.warning("document %s kept changing while its chunks were reconciled", doc_id)
        return False

    def settle_pending(self, older_than_s: float = 0.0, stop: Callable[[], bool] | None = None) -> int:
        """Reconcile every document whose intent is still standing (written at least
        `older_than_s` ago): what a crash left between a commit and its index writes. Returns
        how many were settled; one that fails is logged and left for the next sweep. Once `stop`
        says so it ends before the next document: the intents left stand for the next sweep or
        start."""
        settled = 0
        for intent in list(self.repo.intents.pending(older_than_s)):
            if stop is not None and stop():
                break
            try:
                settled += self.reconcile(intent.brain_id, intent.doc_id)
            except CairnError as exc:
                log.warning("could not reconcile document %s: %s", intent.doc_id, exc.message)
        return settled

    def _index_as_recorded(
        self,
        brain_id: str,
        doc_id: str,
        doc: Document | None,
        carried: str | None = None,
        ring: Item | None = None,
    ) -> None:
        if doc is None or doc.deleted_at is not None or doc.brain_id != brain_id:
            self.indexer.index.delete_document(brain_id, doc_id)
            return
        prepared = self.indexer.prepare(doc, self.text_of(doc), capped=False)
        if not keeps_to_itself(doc):  # as the write that linked it among its siblings gave it
            context = self.siblings.context_of(doc, ring)
            context = carried if context is None else context
            if context is not None:
                prepared = prepared.with_context(context or None)
        self.indexer.apply(doc, prepared)

    def settle(self, committed: Committed, applied: Iterable[str], ring: Item | None = None) -> None:
        """After a commit and the index writes of the documents in `applied`: index the commit's
        other documents as it wrote them (a record it wrote is as good as read), then finish every
        one of these intents at once (one transaction, not one a document); a document whose
        intent moved meanwhile, or whose record the commit did not write, is reconciled from a
        fresh read. `ring`: the folder's recent siblings as the commit wrote them (their record
        read again otherwise); a later commit that changed them under a document moved its intent.
        Every intent stands until the chunks of its document are written, so a crash in between
        leaves them to the sweeper, as before."""
        done = set(applied)
        finishing = [i for d, i in committed.intents.items() if d in done]
        records = {doc.id: doc for doc in committed.documents}
        unread: list[Intent] = []
        with access.as_system():
            for doc_id, intent in committed.intents.items():
                doc = records.get(doc_id)
                if doc_id in done:
                    continue
                if doc is None:
                    unread.append(intent)
                    continue
                self._index_as_recorded(intent.brain_id, doc_id, doc, ring=ring)
                finishing.append(intent)
        for intent in [*self._finish(finishing), *unread]:
            self.reconcile(intent.brain_id, intent.doc_id)

    def _finish(self, intents: list[Intent]) -> list[Intent]:
        """Finish the intents; returns those that moved. When the record store refuses the delete
        (its writer lock held by another process: unavailable) after the chunks were written, an
        intent still standing as written is left to the sweeper, which reconciles its document as
        its chunks already are: the write committed and is searchable, and is not answered as a
        failure the caller would repeat (an append twice). One gone or rewritten meanwhile is
        returned as moved, to be reconciled now, as `finish` does."""
        try:
            return self.repo.intents.finish(intents)
        except Unavailable as exc:
            log.warning("index intents left for the sweeper: %s", exc.message)
            standing = {i.doc_id: self.repo.intents.get(i.doc_id) for i in intents}
            return [i for i in intents if standing[i.doc_id] != i]

    def ensure_indexed(self, doc: Document) -> None:
        """A write that changes nothing still repairs what a crash left: a standing intent, or
        chunks that do not match the record's count."""
        held = self.indexer.index.fingerprints(doc.brain_id, doc.id)
        if len(held) != doc.chunk_count or self.repo.intents.get(doc.id) is not None:
            self.reconcile(doc.brain_id, doc.id)
