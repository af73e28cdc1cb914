"""StoreSecret: a secret every process of one store shares, kept where the store keeps its
secrets (the data directory's key file; Secrets Manager on AWS), never in the records or blobs.
What the core derives from it (services/audit_marks.py: the keyed digests of the names an erasure
redacted) reveals nothing to a reader of the store who lacks it. It is a ring of keys
(domain/key_rings.py): the current one and those a rotation kept."""

from __future__ import annotations

from typing import Protocol

from cairn.domain.key_rings import KeyRing


class StoreSecret(Protocol):
    def ring(self, fresh: bool = False) -> KeyRing:
        """The keys, the same in every process of the store (made on first use where the backend
        can). `fresh`: read again from where they are kept, not what this process read before
        (another process may have rotated them). Raises Unavailable, with a message that holds no
        part of them, when they cannot be had."""


class RotatableSecret(StoreSecret, Protocol):
    """What the operator's `cairn secret` does to the secret where it is kept (durably, at once)."""

    def rotate(self) -> KeyRing:
        """A new random current key; the current one kept first among the previous keys."""

    def drop_previous(self, current: str) -> KeyRing:
        """The ring with its current key alone, when that key's id is `current`; Conflict, and
        nothing changed, when it is not (rotated since the caller counted the marks)."""
