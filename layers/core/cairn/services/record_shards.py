"""Records a sweep reads back, spread over SHARDS partitions (`<prefix>00` to `<prefix>15`, the
shard chosen by the CRC-32 of a key): one DynamoDB partition takes about 1,000 writes a second,
and every write of a document or memory writes one. Index intents, pending-links marks and the
log of replaced bytes are kept this way."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from cairn.ports.records import Item, RecordStore

SHARDS = 16
_PAGE = 500


def shard_pk(prefix: str, key: str) -> str:
    """The partition of `key`'s record."""
    return f"{prefix}{zlib.crc32(key.encode('utf-8', 'surrogatepass')) % SHARDS:02d}"


def every_item(records: RecordStore, prefix: str) -> Iterator[Item]:
    """Every record of the shards, shard by shard, a page at a time."""
    for shard in range(SHARDS):
        after: str | None = None
        while True:
            page = records.query(f"{prefix}{shard:02d}", after=after, limit=_PAGE)
            yield from page.items
            if page.next_after is None:
                break
            after = page.next_after
