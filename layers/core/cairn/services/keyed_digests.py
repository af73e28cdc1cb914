"""Keyed digests of what an erasure must not reveal (a name, a person's id): HMAC-SHA256 under a key
derived from the store's secret (ports/store_secret.py) for one purpose, so a reader of the store
who lacks the secret cannot test likely values against them, and the digests of one purpose mean
nothing to another's.

Every process must key with the same secret, or one would not see the marks another made: a data
directory restored without its `store-secret.key` (which is then made anew), a key file replaced
under a running process, functions reading another `StoreSecret`. So each family of marks keeps a
check of the key its marks are made with (`KeyCheck`: `meta`/`<check sk>`, a digest of a constant
under the family's key, which says nothing of what was erased), and a process compares it with
its own before it marks or reads. One that differs cannot read the marks made under the other:
it records, as the family does when its marks expire, that every erasure until now can no longer
be checked (`forget`), logs a warning that names no secret, and makes the check its own. The check
is per family because what a family forgets, and how, is its own (services/audit_marks.py,
services/erasure/erased.py); a process keyed otherwise forgets for each family as it first uses it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from cairn.domain.errors import Conflict, Unavailable
from cairn.ports.records import Item, RecordStore
from cairn.ports.store_secret import StoreSecret

log = logging.getLogger(__name__)


class NoSecret(Unavailable):
    """The store's secret cannot be had (missing, damaged, refused): no mark can be made or read."""


def derived_key(secret: StoreSecret, purpose: bytes) -> bytes:
    """The key of `purpose`'s digests (NoSecret when the secret cannot be had)."""
    try:
        raw = secret.read()
    except Unavailable as exc:
        raise NoSecret(exc.message) from None
    return hmac.new(raw, purpose, hashlib.sha256).digest()


def keyed_digest(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class KeyCheck:
    """The store's check of the key one family's marks are made with (see the module's docstring)."""

    records: RecordStore
    sk: str
    family: str  # for the log
    forget: Callable[[], None]
    """Records that the family's erasures until now can no longer be checked."""

    @property
    def key(self) -> tuple[str, str]:
        return ("meta", self.sk)

    def confirm(self, key: bytes, held: Item | None = None, *, read: bool = True) -> bool:
        """Make sure the family's marks are keyed with `key` from now on; whether the store's check
        was another key's (the erasures until now then forgotten). `held` is the check as the caller
        read it (`read=False`), to spare a read. Unavailable when the check keeps changing."""
        check = keyed_digest(key, "the key of this family's marks")
        other = False
        for _ in range(8):
            if read:
                held = self.records.get(*self.key)
            read = True
            if held is not None and held.data.get("check") == check:
                return other
            if held is not None:
                if not other:
                    log.warning(
                        "the store's secret is not the one the %s were keyed with (a data directory "
                        "restored without its store-secret.key, or processes given different secrets): "
                        "the erasures until now can no longer be checked against them",
                        self.family,
                    )
                try:
                    self.forget()
                except Conflict as exc:  # the forgotten erasures kept changing: a busy store
                    raise Unavailable(f"the {self.family} cannot be checked now: {exc.message}") from None
                other = True
            with suppress(Conflict):  # made or changed meanwhile: read it again
                self.records.put(Item(*self.key, {"check": check}), held.version if held else 0)
                return other
        raise Unavailable(f"the {self.family}' key check kept changing; try again")
