"""Uploads past their time. Everything under a brain's uploads folder (blob_keys.uploads_folder) is
on its way to being ingested or was left by an ingest that failed: a failed queued ingest keeps its
bytes until it is asked again, and a presigned upload never ingested stays where the caller put
it. On AWS the upload bucket's lifecycle rule expires everything under `uploads/` seven days after
it was stored (template.yaml, `temporary-uploads`); on the embedded store, which has no lifecycle,
the index sweeper removes what is as old once an hour. An ingest queued again stores its bytes
under a key of its own (services/ingest/service.py `_queue`), so the clock starts anew for a
retry, and bytes this sweep listed as old are never a retry's. An ingest still queued a week after
it was asked (a server stopped that long) loses its bytes here as it would on S3, and fails.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from cairn.ports.blobs import BlobStore, FolderedBlobs
from cairn.services.documents.blob_keys import uploads_folder

log = logging.getLogger(__name__)

EXPIRY_S = 7 * 86400.0
"""As the upload bucket's lifecycle (`ExpirationInDays: 7`)."""


def expire_uploads(
    blobs: BlobStore, brain_ids: Iterable[str], now: float, older_than_s: float = EXPIRY_S
) -> int:
    """Remove the uploads and working folders of `brain_ids` last changed at least `older_than_s`
    before `now` (epoch seconds); returns how many keys went. Run as the system."""
    if not isinstance(blobs, FolderedBlobs):
        return 0
    cutoff = now - older_than_s
    removed = 0
    for brain_id in brain_ids:
        prefix = uploads_folder(brain_id)
        for name, stored in blobs.files(prefix):
            if stored <= cutoff:
                blobs.delete(prefix + name)
                removed += 1
        for name, changed in blobs.folders(prefix):
            # `staging/` holds one folder per job; each goes on its own age
            inner = f"{prefix}{name}/"
            folders = [(f"{inner}{n}/", c) for n, c in blobs.folders(inner)] if name == "staging" else []
            for folder, last in folders or [(inner, changed)]:
                if last <= cutoff:
                    removed += blobs.delete_prefix(folder)
    if removed:
        log.info("removed %d uploads older than %d days", removed, older_than_s // 86400)
    return removed
