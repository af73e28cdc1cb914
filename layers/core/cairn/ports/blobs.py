"""BlobStore: bytes by key. Adapters: files (embedded), S3 (AWS)."""

from __future__ import annotations

from typing import Protocol


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
