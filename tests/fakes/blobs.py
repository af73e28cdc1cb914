"""In-memory BlobStore: a dict under a lock, with the file adapter's key rules."""

from __future__ import annotations

import threading

from cairn.adapters.local.file_blobs import validate_key, validate_prefix
from cairn.domain.errors import NotFound


class MemoryBlobStore:
    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes) -> None:
        validate_key(key)
        with self._lock:
            self.items[key] = bytes(data)

    def get(self, key: str) -> bytes:
        validate_key(key)
        with self._lock:
            try:
                return self.items[key]
            except KeyError:
                raise NotFound(f"no blob {key!r}") from None

    def delete(self, key: str) -> None:
        validate_key(key)
        with self._lock:
            self.items.pop(key, None)

    def exists(self, key: str) -> bool:
        validate_key(key)
        with self._lock:
            return key in self.items

    def delete_prefix(self, prefix: str) -> int:
        validate_prefix(prefix)
        with self._lock:
            doomed = [key for key in self.items if key.startswith(prefix)]
            for key in doomed:
                del self.items[key]
        return len(doomed)
