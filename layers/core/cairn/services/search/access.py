"""Which memories were handed back to callers, how often and when last (pruning reads it).

Reads must stay cheap, so `saw` only counts in memory; counts reach the record store in batches
(`flush`: in a background thread once `flush_at` documents are pending, and before each prune),
one item per document under `access#<brain>`, each increment a conditional write retried on a
lost race, so concurrent flushers never lose a count. A flush the store refuses (its writer lock
held by another process past the wait: unavailable) keeps the counts it did not write pending, for
the next flush; the background one logs that once, until a flush succeeds again, and the next
background flush waits `RETRY_S` (a store refusing at once, DynamoDB throttled past its retries,
was sent every pending count again by every search). Pending counts take one entry per distinct
(brain, document) seen since the last flush that wrote them, however long the store refuses them:
about 250 bytes each (170 measured beside the document id's string), so 250 MB were a million
distinct documents read while it refuses. Counts not yet
flushed when the process dies are lost: access is a hint for pruning, not an audit trail.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from cairn.domain.errors import CairnError, Conflict, reading_record
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.repositories import get_all

log = logging.getLogger(__name__)

_RETRIES = 32
_BATCH = 100  # documents per transaction (DynamoDB takes at most 100 items in one)
RETRY_S = 5.0


@dataclass(frozen=True)
class Access:
    count: int
    last: datetime | None


def _key(brain_id: str, doc_id: str) -> tuple[str, str]:
    return access_pk(brain_id), doc_id


def _stored(item: Item | None) -> tuple[int, datetime | None]:
    """A document's stored count and when it was last read (0 and None when none is stored)."""
    if item is None:
        return 0, None
    with reading_record(item.pk, item.sk, "read count"):
        return int(item.data["count"]), datetime.fromisoformat(item.data["last"])


def access_pk(brain_id: str) -> str:
    """The partition of a brain's access counts, one item per document."""
    return f"access#{brain_id}"


class AccessLog:
    def __init__(self, records: RecordStore, clock: Clock, *, flush_at: int = 256) -> None:
        self.records = records
        self.clock = clock
        self.flush_at = flush_at
        self._pending: dict[tuple[str, str], tuple[int, datetime]] = {}
        self._lock = threading.Lock()
        self._flushing = False
        self._flush_lock = threading.Lock()
        self._retry_at: datetime | None = None  # the last background flush failed (and said so): none before

    def saw(self, brain_id: str, doc_ids: Iterable[str]) -> None:
        now = self.clock.now()
        with self._lock:
            for doc_id in dict.fromkeys(doc_ids):
                count, _ = self._pending.get((brain_id, doc_id), (0, now))
                self._pending[(brain_id, doc_id)] = (count + 1, now)
            start = len(self._pending) >= self.flush_at and not self._flushing
            start = start and (self._retry_at is None or now >= self._retry_at)
            if start:
                self._flushing = True
        if start:  # off the request path: the caller is a search waiting to answer
            threading.Thread(target=self._flush_in_background, daemon=True).start()

    def _flush_in_background(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # the counts wait for the next flush; the searches answered
            said, self._retry_at = self._retry_at is not None, self.clock.now() + timedelta(seconds=RETRY_S)
            if not said:
                log.warning(
                    "read counts not written yet, kept for the next flush: %s",
                    exc,
                    exc_info=not isinstance(exc, CairnError),
                )
        finally:
            with self._lock:
                self._flushing = False

    def flush(self) -> int:
        """Write pending counts; returns how many documents were updated. Returns only once any
        flush already under way has finished too, so a caller reads every count it saw."""
        with self._flush_lock:
            with self._lock:
                pending, self._pending = self._pending, {}
            left = dict(pending)  # what no write took yet: pending again if a write fails
            try:
                items = list(pending.items())
                for start in range(0, len(items), _BATCH):
                    self._add_batch(items[start : start + _BATCH], left)
            except BaseException:
                self._keep(left)
                raise
            self._retry_at = None
        return len(pending)

    def _keep(self, counts: dict[tuple[str, str], tuple[int, datetime]]) -> None:
        """Counts a flush did not write, pending again beside those seen since."""
        with self._lock:
            for key, (count, last) in counts.items():
                held, held_last = self._pending.get(key, (0, last))
                self._pending[key] = (held + count, max(last, held_last))

    def _add_batch(
        self,
        batch: list[tuple[tuple[str, str], tuple[int, datetime]]],
        left: dict[tuple[str, str], tuple[int, datetime]],
    ) -> None:
        """The counts of many documents in one conditional transaction (one read, one commit: a
        flush of 256 documents one by one was 512 store calls competing with the searches that
        caused it); a lost race falls back to one document at a time."""
        keys = [_key(brain_id, doc_id) for (brain_id, doc_id), _ in batch]
        stored = self.records.get_many(keys)
        ops: list[Put | Delete] = []
        for key, (_, (count, last)) in zip(keys, batch, strict=True):
            item = stored.get(key)
            held, held_last = _stored(item)
            total = held + count
            newest = max(last, held_last) if held_last else last
            data = {"count": total, "last": newest.isoformat()}
            ops.append(Put(Item(*key, data=data), expected_version=item.version if item else 0))
        try:
            self.records.transact(ops)
        except Conflict:
            for (brain_id, doc_id), (count, last) in batch:
                self._add(brain_id, doc_id, count, last)
                del left[(brain_id, doc_id)]
        else:
            for key, _ in batch:
                del left[key]

    def get_many(self, brain_id: str, doc_ids: Iterable[str]) -> dict[str, Access]:
        """`get` for each document, in one batch read (ranking reads every hit's count)."""
        ids = list(dict.fromkeys(doc_ids))
        items = get_all(self.records, [_key(brain_id, doc_id) for doc_id in ids])
        with self._lock:
            pending = {doc_id: self._pending.get((brain_id, doc_id), (0, None)) for doc_id in ids}
        out = {}
        for doc_id in ids:
            item = items.get(_key(brain_id, doc_id))
            count, last = pending[doc_id]
            held, stored_last = _stored(item)
            newest = max((t for t in (last, stored_last) if t is not None), default=None)
            out[doc_id] = Access(held + count, newest)
        return out

    def get(self, brain_id: str, doc_id: str) -> Access:
        item = self.records.get(*_key(brain_id, doc_id))
        with self._lock:
            count, last = self._pending.get((brain_id, doc_id), (0, None))
        held, stored_last = _stored(item)
        newest = max((t for t in (last, stored_last) if t is not None), default=None)
        return Access(held + count, newest)

    def _add(self, brain_id: str, doc_id: str, count: int, last: datetime) -> None:
        pk, sk = _key(brain_id, doc_id)
        for _ in range(_RETRIES):
            item = self.records.get(pk, sk)
            held, held_last = _stored(item)
            total = held + count
            newest = max(last, held_last) if held_last else last
            data = {"count": total, "last": newest.isoformat()}
            try:
                self.records.put(Item(pk, sk, data=data), expected_version=item.version if item else 0)
                return
            except Conflict:
                continue
        raise Conflict(f"access count of {doc_id} kept losing races")

    def forget(self, brain_id: str, doc_ids: Iterable[str]) -> int:
        """Drop the read counts of these documents, stored and pending (an erasure); how many were stored."""
        ids = list(dict.fromkeys(doc_ids))
        with self._flush_lock:  # after any flush under way, so it cannot write them back
            with self._lock:
                for doc_id in ids:
                    self._pending.pop((brain_id, doc_id), None)
            # read in batches first: a delete of each, held or not, cost an erasure a request a document
            held = get_all(self.records, [_key(brain_id, doc_id) for doc_id in ids])
            return sum(self.records.delete(pk, sk) for pk, sk in held)
