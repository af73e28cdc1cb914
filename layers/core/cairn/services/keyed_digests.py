"""Keyed digests of what an erasure must not reveal (a name, a person's id): HMAC-SHA256 under a key
derived from the store's secret (ports/store_secret.py) for one purpose, so a reader of the store
who lacks the secret cannot test likely values against them, and the digests of one purpose mean
nothing to another's."""

from __future__ import annotations

import hashlib
import hmac

from cairn.ports.store_secret import StoreSecret


def derived_key(secret: StoreSecret, purpose: bytes) -> bytes:
    """The key of `purpose`'s digests (Unavailable when the secret cannot be had)."""
    return hmac.new(secret.read(), purpose, hashlib.sha256).digest()


def keyed_digest(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()
