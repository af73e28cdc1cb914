"""Index intents: what makes a document's chunks as durable as its record.

A document's record and its chunks live in two stores that share no transaction (the record
store; the chunk index, whose both legs commit together). So every commit that changes a
document record writes, in the same transaction, an intent naming the document: "bring its
chunks in line with its record". The writer applies the chunks, then deletes the intent on the
condition that it is still at the version its commit wrote (`finish`), and only then answers.

A crash between the commit and that delete leaves the intent behind, and whoever finds it
reconciles the document from its record (DocumentService.reconcile): a process starting on the
data, the sweeper of a running server, the scheduled sweep on AWS, or the next write of the
same document. Every commit rewrites the document's intent, bumping its version, so a delete
that finds another version tells the writer that a later commit may have landed between its
own commit and its index writes: it reconciles rather than leaving its (maybe older) chunks.

An intent names only the brain and the document, never a path or any of its text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from cairn.domain.errors import Conflict
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.record_shards import every_item, shard_pk

_PK = "reindex#"  # spread over shards (services/record_shards.py)
_FINISH_AT_ONCE = 100  # conditional deletes per transaction (DynamoDB's one-call limit)


@dataclass(frozen=True)
class Intent:
    brain_id: str
    doc_id: str
    version: int
    at: float  # when it was written, seconds since the epoch


def intent_key(doc_id: str) -> tuple[str, str]:
    return shard_pk(_PK, doc_id), doc_id


def is_intent(item: Item) -> bool:
    return item.pk.startswith(_PK)


class IndexIntents:
    def __init__(self, records: RecordStore, now: Callable[[], float] = time.time) -> None:
        self.records = records
        self.now = now

    def put_ops(self, refs: Iterable[tuple[str, str]]) -> list[Put | Delete]:
        """The ops that record an intent for each (brain id, document id), in a commit."""
        at = self.now()
        return [
            Put(Item(*intent_key(doc_id), data={"brain_id": brain_id, "doc_id": doc_id, "at": at}))
            for brain_id, doc_id in dict.fromkeys(refs)
        ]

    @staticmethod
    def written(items: Sequence[Item]) -> dict[str, Intent]:
        """Document id -> the intent a commit wrote, from the items it returned."""
        return {item.sk: _intent(item) for item in items if is_intent(item)}

    def get(self, doc_id: str) -> Intent | None:
        item = self.records.get(*intent_key(doc_id))
        return _intent(item) if item is not None else None

    def finish(self, intents: Iterable[Intent]) -> list[Intent]:
        """Delete each intent if it is still at its version; returns those that were not (another
        commit of the document rewrote it, or someone finished that one already)."""
        wanted = list({i.doc_id: i for i in intents}.values())
        moved: list[Intent] = []
        for start in range(0, len(wanted), _FINISH_AT_ONCE):
            part = wanted[start : start + _FINISH_AT_ONCE]
            try:
                self.records.transact([_delete(i) for i in part])
            except Conflict:  # one of them moved: find which, deleting the others
                moved += [i for i in part if not self._finish_one(i)]
        return moved

    def _finish_one(self, intent: Intent) -> bool:
        try:
            self.records.transact([_delete(intent)])
        except Conflict:
            return False
        return True

    def pending(self, older_than_s: float = 0.0) -> Iterator[Intent]:
        """Every intent left standing, written at least `older_than_s` ago, shard by shard."""
        cutoff = self.now() - older_than_s
        return (i for i in map(_intent, every_item(self.records, _PK)) if i.at <= cutoff)


def _delete(intent: Intent) -> Delete:
    return Delete(*intent_key(intent.doc_id), expected_version=intent.version)


def _intent(item: Item) -> Intent:
    return Intent(
        brain_id=str(item.data.get("brain_id", "")),
        doc_id=item.sk,
        version=item.version,
        at=float(item.data.get("at", 0.0)),
    )
