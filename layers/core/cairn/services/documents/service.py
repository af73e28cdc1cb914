"""Documents by path: the store protocol's operations, indexed on every committed write.

Every mutation holds the in-process lock of the paths it touches, prepares chunks and
vectors (embedding only the chunks whose text changed), commits the records in one conditional
transaction, then updates the chunk index and publishes change events. Bytes live in the blob
store under a content address, so a record update is the single atomic step that makes new
content visible.

The commit carries an index intent per document it changes (services/documents/index_intents.py); a
write answers only once its chunks are applied and the intent is finished, and a document whose
intent outlives its writer (a crash, a later commit landing in between) is reconciled from its
record (`reconcile`), by the writer itself, a later process (`settle_pending`) or its next write.
A commit that loses to a writer of the same path in another process is staged and committed again
(`_again`): in-process writers of a path wait on its lock; other processes only show up there.

Every write path (single, versioned, append, modify, rename, delete, erase, batch, bulk) shares
the same path locks, staging, conditional commit, index settling and events: those live in
core.py, and each seam in a module of its own: reads.py, writes.py, bulk.py (write_many),
batch.py (batch-ops); inputs.py holds what goes in and comes out. The index's side is in
index_sync.py, indexing.py and index_intents.py.
"""

from __future__ import annotations

from cairn.services.documents.batch import BatchWrites
from cairn.services.documents.bulk import BulkWrites


class DocumentService(BulkWrites, BatchWrites):
    """Documents by path: reads (reads.py), single writes (writes.py), bulk writes (bulk.py) and
    batch-ops (batch.py) over the shared write protocol (core.py)."""
