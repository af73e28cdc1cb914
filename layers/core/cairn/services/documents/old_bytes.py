"""The bytes a document's earlier versions leave behind, collected once no reader can want them.

A write that replaces a document's bytes keeps the earlier version's blob for a while: a reader
that read the older record, or a presigned download of it (5 minutes), may still be on its way.
In the same transaction as the write it records that blob as old: `oldbytes#NN` / `<document
id>#<the key's last segment>`, naming the brain, the document and the key, never a path or any
text. The index sweeper (every 30 s in `cairn serve`; the scheduled sweep on AWS) removes those
older than GRACE_S, then their records. Why it is safe: every write's blob key carries a token of
its own (blob_keys.py), so a key once old is never the key of a later write; and a blob a record
still names is never removed. An erasure forgets the records of the documents it removed (their
folders went whole), a brain's deletion its brain's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress

from cairn.domain.errors import Conflict, NotFound
from cairn.ports.blobs import BlobStore
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.record_shards import every_item, shard_pk

log = logging.getLogger(__name__)

GRACE_S = 900.0
"""How long an earlier version's bytes stay after the write that replaced them."""
_PK = "oldbytes#"  # spread over shards (services/record_shards.py)
_PAGE = 500
CurrentKeys = Callable[[list[str]], dict[str, str]]
"""The blob key each of these documents' records names now (documents without one absent)."""


def _pk(doc_id: str) -> str:
    return shard_pk(_PK, doc_id)


class OldBytesLog:
    def __init__(self, records: RecordStore, now: Callable[[], float] = time.time) -> None:
        self.records = records
        self.now = now

    def put_op(self, brain_id: str, doc_id: str, key: str) -> Put:
        """The op that records `key`, the replaced version's blob of the document, as old."""
        item = Item(
            _pk(doc_id),
            f"{doc_id}#{key.rsplit('/', 1)[-1]}",
            data={"brain_id": brain_id, "doc_id": doc_id, "key": key, "at": self.now()},
        )
        return Put(item)

    def due(self, older_than_s: float = GRACE_S) -> Iterator[Item]:
        """Every record of old bytes written at least `older_than_s` ago."""
        cutoff = self.now() - older_than_s
        return (i for i in every_item(self.records, _PK) if float(i.data.get("at", 0.0)) <= cutoff)

    def collect(
        self,
        blobs: BlobStore,
        current_keys: CurrentKeys,
        older_than_s: float = GRACE_S,
        stop: Callable[[], bool] = lambda: False,
    ) -> int:
        """Remove the old bytes past their grace and their records; returns how many blobs went.
        `current_keys` gives the blob key each of these documents' records names now: one a
        record names is kept (its record only goes). `stop` ends it before its next 100 (the
        rest stays for the next sweep): a backlog must not outlast the AWS sweep's invocation."""
        removed = 0
        due = list(self.due(older_than_s))
        for start in range(0, len(due), 100):
            if stop():
                break
            batch = due[start : start + 100]
            named = current_keys([str(i.data.get("doc_id", "")) for i in batch])
            for item in batch:
                key = str(item.data.get("key", ""))
                if key and key != named.get(str(item.data.get("doc_id", ""))):
                    with suppress(NotFound):
                        blobs.delete(key)
                    removed += 1
                with suppress(Conflict):  # written again meanwhile: the next sweep sees it
                    self.records.transact([Delete(item.pk, item.sk, expected_version=item.version)])
        if removed:
            log.info("removed %d earlier versions' bytes", removed)
        return removed

    def forget(self, doc_ids: Iterable[str]) -> int:
        """Delete the records of these documents' old bytes (the documents went, with their
        folders); returns how many there were."""
        gone = 0
        for doc_id in dict.fromkeys(doc_ids):
            items = self.records.query(_pk(doc_id), f"{doc_id}#", limit=_PAGE).items
            while items:
                self.records.transact([Delete(i.pk, i.sk) for i in items[:100]])
                gone += len(items[:100])
                items = items[100:] or self.records.query(_pk(doc_id), f"{doc_id}#", limit=_PAGE).items
        return gone

    def forget_brain(self, brain_id: str) -> int:
        """Delete every record of the brain's old bytes (its blobs went with the brain)."""
        doomed = [i for i in every_item(self.records, _PK) if i.data.get("brain_id") == brain_id]
        for start in range(0, len(doomed), 100):
            self.records.transact([Delete(i.pk, i.sk) for i in doomed[start : start + 100]])
        return len(doomed)
