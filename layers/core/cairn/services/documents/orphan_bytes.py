"""Bytes no record names: what a writer killed after storing a version's bytes in its document's
own folder (blob_keys.py) and before committing the record that names them left behind.

Such a folder's document has no record at all (a new document's first write), so neither the
old-bytes log (old_bytes.py: versions a committed write replaced) nor an erasure (which finds what
to remove by its records) ever reaches it. A write stores its bytes, embeds its chunks and commits
within seconds, minutes for the largest file an ingest takes; a folder whose newest file is older
than GRACE_S and whose document no record names is collected. The index sweeper runs this every
EVERY_S on the embedded store, whose files can be listed a directory at a time (FolderedBlobs);
on AWS such objects stay until their brain is deleted (an S3 listing of every document's folder
each hour would cost more than the bytes).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from cairn.ports.blobs import BlobStore, FolderedBlobs
from cairn.services.repositories import DocumentRepository

log = logging.getLogger(__name__)

GRACE_S = 6 * 3600.0
"""Older than any write still in flight (one embedding the largest file an ingest takes)."""
EVERY_S = 3600.0
_BATCH = 100


def collect_orphan_bytes(
    blobs: BlobStore,
    repo: DocumentRepository,
    brain_ids: Iterable[str],
    now: float,
    older_than_s: float = GRACE_S,
) -> int:
    """Remove the folders of documents no record names, last changed at least `older_than_s`
    before `now` (epoch seconds); returns how many folders went. Run as the system."""
    if not isinstance(blobs, FolderedBlobs):
        return 0
    removed = 0
    for brain_id in brain_ids:
        stale = [name for name, changed in blobs.folders(f"{brain_id}/doc/") if changed <= now - older_than_s]
        for start in range(0, len(stale), _BATCH):
            batch = stale[start : start + _BATCH]
            recorded = repo.get_many_by_id(batch)  # live or soft-deleted: either keeps its bytes
            for doc_id in batch:
                if doc_id not in recorded:
                    blobs.delete_prefix(f"{brain_id}/doc/{doc_id}/")
                    removed += 1
    if removed:
        log.warning("removed the bytes of %d writes that stopped before committing their records", removed)
    return removed
