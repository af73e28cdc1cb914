"""StoreSecret: a secret every process of one store shares, kept where the store keeps its
secrets (the data directory's key file; Secrets Manager on AWS), never in the records or blobs.
What the core derives from it (services/audit_marks.py: the keyed digests of the names an erasure
redacted) reveals nothing to a reader of the store who lacks it."""

from __future__ import annotations

from typing import Protocol


class StoreSecret(Protocol):
    def read(self) -> bytes:
        """The secret, at least 32 bytes, the same in every process of the store (made on first
        use where the backend can). Raises Unavailable, with a message that holds no part of it,
        when it cannot be had."""
