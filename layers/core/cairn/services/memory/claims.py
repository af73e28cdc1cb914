"""The records typed memories keep beside their documents: claims and the memories-by-time index.

| record                                   | pk                 | sk                                  |
|------------------------------------------|--------------------|-------------------------------------|
| current fact of a key, status of a subject | `memory#<brain>` | `key#<digest>`, `subject#<digest>`  |
| a memory's text (type, client, sha256)   | `memory#<brain>`   | `hash#<digest>`                     |
| memories by time                         | `memtime#<brain>`  | `<created, UTC, sortable>#<memory id>` |

Every item holds `{"doc_id": <memory id>}`. Claims are taken by a conditional put at the version
read (0: create only), in the same transaction as the memory's document, so two writers of one
key or one text never both win. This repository is the only user of these keys.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from cairn.domain.models import MemoryType
from cairn.ports.records import Item, Put, RecordStore
from cairn.services.repositories import all_items


@dataclass(frozen=True)
class Claim:
    """A claim as read: the memory holding it (None: nobody) and the version to take it at."""

    key: tuple[str, str]
    doc_id: str | None
    version: int


@dataclass(frozen=True)
class Stamped:
    """An entry of the memories-by-time index."""

    doc_id: str
    at: str  # the sortable UTC time of the entry

    def no_later_than(self, moment: datetime) -> bool:
        return self.at <= sortable(moment)


class MemoryClaims:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def text(self, brain_id: str, kind: str, client: str, digest: str) -> Claim:
        """The claim of a memory's text: its type, client and content hash."""
        return self._read(_claim_key(brain_id, "hash", kind, client, digest))

    def line(self, brain_id: str, kind: MemoryType, key: str | None, subject: str | None) -> Claim | None:
        """The claim that makes a memory supersede another: a fact's key, a status's subject;
        None for a memory that supersedes nothing."""
        if kind is MemoryType.fact and key:
            return self._read(_claim_key(brain_id, "key", key))
        if kind is MemoryType.status and subject:
            return self._read(_claim_key(brain_id, "subject", subject))
        return None

    @staticmethod
    def take(claim: Claim, memory_id: str) -> Put:
        """The op giving `claim` to `memory_id`, if it is still as read."""
        return Put(Item(*claim.key, data={"doc_id": memory_id}), claim.version)

    @staticmethod
    def stamp(brain_id: str, at: datetime, memory_id: str) -> Put:
        """The op adding `memory_id` to the index at `at`."""
        return Put(Item(memtime_pk(brain_id), f"{sortable(at)}#{memory_id}", data={"doc_id": memory_id}))

    def give_text(self, brain_id: str, kind: str, client: str, digest: str, memory_id: str) -> None:
        """Point a text's claim at `memory_id` (an update changed the memory's text)."""
        self.records.put(
            Item(*_claim_key(brain_id, "hash", kind, client, digest), data={"doc_id": memory_id})
        )

    def since(self, brain_id: str, since: datetime, *, limit: int) -> list[str]:
        """The ids of the index entries at or after `since`, newest first, at most about `limit`
        (an upserted memory has an entry per store, so an id may come twice)."""
        pk, start = memtime_pk(brain_id), sortable(since)
        ids: list[str] = []
        after: str | None = None
        while len(ids) < limit:
            page = self.records.query(pk, after=after, limit=min(limit, 500), descending=True)
            fresh = [item for item in page.items if item.sk >= start]
            ids.extend(item.data["doc_id"] for item in fresh)
            if len(fresh) < len(page.items) or page.next_after is None:
                break
            after = page.next_after
        return ids

    def oldest_first(self, brain_id: str, *, page: int = 500) -> Iterator[list[Stamped]]:
        """Every index entry in the order stored, `page` at a time."""
        after: str | None = None
        while True:
            found = self.records.query(memtime_pk(brain_id), after=after, limit=page)
            yield [Stamped(item.data["doc_id"], item.sk.split("#", 1)[0]) for item in found.items]
            if found.next_after is None:
                return
            after = found.next_after

    def forget(self, brain_id: str, doc_ids: Iterable[str]) -> int:
        """Remove every claim and index entry naming one of `doc_ids`; returns how many went."""
        wanted = set(doc_ids)
        gone = 0
        for pk in (claims_pk(brain_id), memtime_pk(brain_id)):
            doomed = [item for item in all_items(self.records, pk) if item.data.get("doc_id") in wanted]
            for item in doomed:
                gone += self.records.delete(item.pk, item.sk)
        return gone

    def _read(self, key: tuple[str, str]) -> Claim:
        item = self.records.get(*key)
        return Claim(key, item.data["doc_id"] if item else None, item.version if item else 0)


def claims_pk(brain_id: str) -> str:
    """The partition of a brain's memory claims (current key and subject, text hashes)."""
    return f"memory#{brain_id}"


def memtime_pk(brain_id: str) -> str:
    """The partition of a brain's memories by time."""
    return f"memtime#{brain_id}"


def sortable(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _claim_key(brain_id: str, kind: str, *parts: str) -> tuple[str, str]:
    # Hashed: keys and subjects are caller text of any length and alphabet.
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]
    return claims_pk(brain_id), f"{kind}#{digest}"
