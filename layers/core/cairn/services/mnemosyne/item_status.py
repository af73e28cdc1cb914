"""Where a queued ingest stands: an item's `embedding_status` before its document is committed.

An ingest small enough to run at once commits its document with live chunks: the item is
`completed` and no record is kept. A queued ingest (embedded job queue or the ingest state
machine) records `queued` when it is queued, `processing` when a worker picks it up, and on
success the record is removed (the committed document is the completed item); on failure it
stays `failed` with the error, until a retry queues it again or the item is ingested anew.

| record          | pk                  | sk              |
|-----------------|---------------------|-----------------|
| pending ingest  | `pending#<brain>`   | `<document id>` |
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from cairn.domain.errors import CairnError, Conflict, reading_record
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore
from cairn.services.repositories import all_items, get_all

QUEUED: Final = "queued"
PROCESSING: Final = "processing"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
MAX_ERROR: Final = 500


@dataclass(frozen=True)
class PendingItem:
    brain_id: str
    document_id: str
    path: str
    status: str
    error: str | None
    job_id: str | None
    updated_at: datetime


class ItemStatusLog:
    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def mark(
        self,
        brain_id: str,
        document_id: str,
        path: str,
        status: str,
        *,
        job_id: str | None = None,
        error: str | None = None,
    ) -> None:
        """Record the ingest of `document_id` at `status` (queued, processing or failed). Queuing
        a path forgets what an earlier ingest of it under another document id left (a failure)."""
        if status == QUEUED:
            for stale in self.pending(brain_id):
                if stale.path == path and stale.document_id != document_id:
                    self.records.delete(pending_pk(brain_id), stale.document_id)
        self.records.put(Item(pending_pk(brain_id), document_id, self._data(path, status, job_id, error)))

    def failed(self, brain_id: str, document_id: str, path: str, *, job_id: str, error: str) -> bool:
        """Record that job `job_id`'s ingest of `document_id` failed, over the record its queuing
        made; False, writing nothing, when that record is gone or names another job. An attempt
        handed back by a stopping process, or whose lease ran out, may still be running when
        another attempt completes the item (removing its record) or a new ingest queues it: its
        failure must not bring back an item that is done, nor replace where another job stands."""
        pk = pending_pk(brain_id)
        current = self.records.get(pk, document_id)
        if current is None or current.data.get("job_id") not in (job_id, None):
            return False
        try:
            self.records.put(
                Item(pk, document_id, self._data(path, FAILED, job_id, error)),
                expected_version=current.version,
            )
        except Conflict:  # completed or queued again since it was read
            return False
        return True

    def _data(self, path: str, status: str, job_id: str | None, error: str | None) -> dict[str, object]:
        return {
            "path": path,
            "status": status,
            "error": error[:MAX_ERROR] if error else None,
            "job_id": job_id,
            "updated_at": self.clock.now().isoformat(),
        }

    def completed(self, brain_id: str, document_id: str) -> None:
        self.records.delete(pending_pk(brain_id), document_id)

    def held(self, brain_id: str, document_ids: Iterable[str]) -> set[str]:
        """Those of the documents with an item, read in batches (an erasure deletes only those)."""
        keys = [(pending_pk(brain_id), doc_id) for doc_id in dict.fromkeys(document_ids)]
        return {sk for _, sk in get_all(self.records, keys)}

    def get(self, brain_id: str, document_id: str) -> PendingItem | None:
        item = self.records.get(pending_pk(brain_id), document_id)
        return _pending(brain_id, item) if item is not None else None

    def pending(self, brain_id: str) -> list[PendingItem]:
        return [_pending(brain_id, item) for item in all_items(self.records, pending_pk(brain_id))]


def failure_text(exc: BaseException) -> str:
    """What a failed item says went wrong: Cairn's own message, else only the kind of failure."""
    if isinstance(exc, CairnError):
        return exc.message
    return f"ingest failed ({type(exc).__name__})"


def pending_pk(brain_id: str) -> str:
    """The partition of a brain's items not yet committed (embedding_status)."""
    return f"pending#{brain_id}"


def _pending(brain_id: str, item: Item) -> PendingItem:
    with reading_record(item.pk, item.sk, "pending item"):
        return _decoded(brain_id, item)


def _decoded(brain_id: str, item: Item) -> PendingItem:
    d = item.data
    return PendingItem(
        brain_id=brain_id,
        document_id=item.sk,
        path=str(d["path"]),
        status=str(d["status"]),
        error=d.get("error"),
        job_id=d.get("job_id"),
        updated_at=datetime.fromisoformat(str(d["updated_at"])),
    )
