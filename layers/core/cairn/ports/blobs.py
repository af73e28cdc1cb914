"""BlobStore: bytes by key. Adapters: files (embedded), S3 (AWS)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there; readers never see a partial write."""

    def get(self, key: str) -> bytes:
        """The bytes under `key`; raises NotFound."""

    def delete(self, key: str) -> None:
        """Remove `key`; deleting a missing key is not an error."""

    def exists(self, key: str) -> bool: ...

    def delete_prefix(self, prefix: str) -> int:
        """Remove every key that starts with `prefix` and return how many were removed.

        `prefix` must be non-empty and end with '/' (InvalidInput otherwise): a whole folder
        such as a brain's, never a partial name. A missing folder removes nothing and returns 0.
        """


@runtime_checkable
class FolderedBlobs(Protocol):
    """A BlobStore that can list the folders under a prefix cheaply (files: one directory read),
    so bytes no record names, left by a writer killed between storing them and committing its
    record, can be found and collected (services/documents/orphan_bytes.py)."""

    def folders(self, prefix: str) -> Iterator[tuple[str, float]]:
        """(name, time of the newest change of anything in it, epoch seconds) of each folder
        directly under `prefix` (a folder ending with '/'); none when it does not exist."""

    def files(self, prefix: str) -> Iterator[tuple[str, float]]:
        """(name, time it was stored, epoch seconds) of each key directly under `prefix` (a
        folder ending with '/'), folders not included; none when it does not exist."""
