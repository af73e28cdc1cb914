"""RecordStore: versioned JSON items addressed by (partition key, sort key).

One narrow port serves every record type: repositories in the core map domain models onto
items (a single-table design, so the DynamoDB adapter is the same shape). Every write
increments the item's `version`; a write may require the version it expects, which is how
optimistic concurrency works on every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

MAX_GET_MANY = 1000  # keys per get_many call; above it InvalidInput
MAX_PK_BYTES = 2048  # UTF-8 bytes of a partition key on every adapter; above it InvalidInput
MAX_SK_BYTES = 1024  # UTF-8 bytes of a sort key (DynamoDB's bound), the `after` cursor included
MAX_SCAN_PREFIXES = 100  # prefixes per scan call (DynamoDB's 4 KB expression bound); above it InvalidInput


@dataclass(frozen=True)
class Item:
    pk: str
    sk: str
    data: dict[str, Any] = field(default_factory=dict)
    version: int = 0


@dataclass(frozen=True)
class Put:
    """Write `item`. expected_version: None = unconditional, 0 = must not exist, N = must be at N."""

    item: Item
    expected_version: int | None = None


@dataclass(frozen=True)
class Delete:
    """Remove (pk, sk). expected_version: None = if present, N = must be at N (0 is invalid)."""

    pk: str
    sk: str
    expected_version: int | None = None


@dataclass(frozen=True)
class Page:
    items: list[Item]
    next_after: str | None = None


@dataclass(frozen=True)
class ScanPage:
    """One page of `RecordStore.scan`: `cursor` is opaque, and None once the scan is done."""

    items: list[Item]
    cursor: str | None = None


class RecordStore(Protocol):
    def get(self, pk: str, sk: str) -> Item | None: ...

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        """What `get` returns for each key, read in as few round trips as the store allows.

        Keys with no item are absent from the result; duplicates are allowed. At most
        MAX_GET_MANY keys (duplicates counted); more, or any bad key, raises InvalidInput.
        """

    def put(self, item: Item, expected_version: int | None = None) -> Item:
        """Store the item and return it with its new version; raises Conflict on a version mismatch."""

    def delete(self, pk: str, sk: str, expected_version: int | None = None) -> bool:
        """Remove the item; True when it existed. Raises Conflict on a version mismatch."""

    def query(
        self,
        pk: str,
        prefix: str = "",
        *,
        after: str | None = None,
        limit: int | None = None,
        descending: bool = False,
    ) -> Page:
        """Items of `pk` whose sort key starts with `prefix`, ordered by sort key (bytewise).

        `after` is an exclusive sort-key cursor; it need not be a stored key (any string within
        MAX_SK_BYTES is a position), so a caller may resume past a whole range of keys.
        `next_after` is set exactly when `limit` cut the page: more items follow it.
        """

    def transact(self, ops: Sequence[Put | Delete]) -> list[Item]:
        """Apply every op or none; returns the written items (puts only) in op order.

        Raises Conflict (and writes nothing) when any condition fails.
        """

    def scan(self, prefixes: Sequence[str], *, cursor: str | None = None, limit: int = 1000) -> ScanPage:
        """Items of every partition whose key starts with one of `prefixes`, across partitions,
        in no promised order; resume with the returned cursor until it is None.

        For maintenance that cannot know every partition in advance (deleting a brain, erasing
        a person): on DynamoDB it is a table Scan, so it is never for a request's hot path.
        `prefixes` must be non-empty (at most MAX_SCAN_PREFIXES), each a non-empty string within
        MAX_PK_BYTES: a scan of everything is never meant. `limit` is 1..MAX_GET_MANY. Anything
        else raises InvalidInput, as does a garbled cursor or one from a scan of other prefixes.

        A page may hold fewer than `limit` items, even none, while `cursor` is not None
        (DynamoDB filters after reading), so callers loop until the cursor is None. Items
        deleted during a scan may or may not be returned; every item that exists for the whole
        scan is returned exactly once, with its version as `query` returns it.
        """


@runtime_checkable
class ScrubbableRecords(Protocol):
    """A store that keeps its own files: make deleted items unrecoverable from them."""

    def scrub(self) -> None:
        """Purge what deleted items left in the store's files (e.g. old page images in a log)."""


@runtime_checkable
class CommitWatch(Protocol):
    """A store that can tell, cheaply, whether anything was committed to it since a moment: what a
    process may check before it answers from what it keeps of the store (several processes share
    the embedded store's files)."""

    def commit_mark(self) -> int:
        """An opaque number that differs from a mark read earlier whenever another writer (another
        process, or another store object on the same files) has committed since that read. This
        object's own commits need not move it: its callers know what they wrote (though own
        commits racing each other may move it: a cache then only reads again). Marks compare only
        for equality, and only marks of one store object. Cheap enough to call on every read that
        answers from a cache."""
