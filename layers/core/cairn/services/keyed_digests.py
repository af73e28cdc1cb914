"""Keyed digests of what an erasure must not reveal (a name, a person's id): HMAC-SHA256 under a key
derived from the store's secret (ports/store_secret.py) for one purpose, so a reader of the store
who lacks the secret cannot test likely values against them, and the digests of one purpose mean
nothing to another's.

The secret is a ring (domain/key_rings.py): new marks are made under its current key and labelled
with its id (`key` in the mark's data); a mark is looked for under every key the ring holds, so a
rotation loses none, and a mark found under a previous key is re-keyed to the current one there and
then (a digest cannot be re-keyed without what it digests, which only a lookup has). Those never
looked up again expire with their family's lifetime; until then the previous key must stay in the
ring (`services/secret_rotation.py` says when it may go).

Every process must know the keys the marks are made under, or one would not see the marks another
made: a data directory restored without its `store-secret.key` (which is then made anew), a key
file replaced under a running process, functions reading another `StoreSecret`, a process that read
the ring before a rotation. So each family of marks keeps a check of its keys (`KeyCheck`:
`meta`/`<check sk>`, `check`: a digest of a constant under the family's current key, `held`: those
under the previous keys marks may still be under; neither says anything of what was erased), and a
process compares it with its own ring before it marks or after it reads. A store check of a key the
process does not hold makes it read its ring again (a rotation elsewhere); one it does hold among its
previous keys is a rotation it is the first to see, and it makes the check its own. A process that
still lacks a key the marks may be under cannot read them: it records, as the family does when its
marks expire, that every erasure until now can no longer be checked (`forget`), logs a warning that
names no secret, and makes the check its own. A process that made marks reads the check again after
them: a drop of the previous keys may have narrowed it since (services/secret_rotation.py), and
marks under a key it no longer names are made again under the current one. The check is per family
because what a family forgets, and how, is its own (services/audit_marks.py,
services/erasure/erased.py); a process keyed otherwise forgets for each family as it first uses it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field

from cairn.domain.errors import Conflict, Unavailable
from cairn.ports.records import Item, RecordStore
from cairn.ports.store_secret import StoreSecret

log = logging.getLogger(__name__)

_CHECKED = "the key of this family's marks"


class NoSecret(Unavailable):
    """The store's secret cannot be had (missing, damaged, refused): no mark can be made or read."""


@dataclass(frozen=True)
class FamilyKey:
    """One key of the ring, derived for one family's purpose."""

    id: str  # the ring key's id (domain/key_rings.py): a mark's `key` label
    key: bytes = field(repr=False)

    @property
    def check(self) -> str:
        return keyed_digest(self.key, _CHECKED)

    def digest(self, value: str) -> str:
        return keyed_digest(self.key, value)


@dataclass(frozen=True)
class FamilyKeys:
    current: FamilyKey
    previous: tuple[FamilyKey, ...] = ()

    @property
    def all(self) -> tuple[FamilyKey, ...]:
        return (self.current, *self.previous)


def family_keys(secret: StoreSecret, purpose: bytes, *, fresh: bool = False) -> FamilyKeys:
    """The ring's keys derived for `purpose` (NoSecret when the secret cannot be had)."""
    try:
        ring = secret.ring(fresh)
    except Unavailable as exc:
        raise NoSecret(exc.message) from None
    derived = [FamilyKey(k.id, hmac.new(k.value, purpose, hashlib.sha256).digest()) for k in ring.keys]
    return FamilyKeys(derived[0], tuple(derived[1:]))


def derived_key(secret: StoreSecret, purpose: bytes) -> bytes:
    """The current key of `purpose`'s digests (NoSecret when the secret cannot be had)."""
    return family_keys(secret, purpose).current.key


def keyed_digest(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class KeyCheck:
    """The store's check of the keys one family's marks are made under (the module's docstring)."""

    records: RecordStore
    sk: str
    family: str  # for the log
    forget: Callable[[], None]
    """Records that the family's erasures until now can no longer be checked."""
    secret: StoreSecret
    purpose: bytes

    @property
    def key(self) -> tuple[str, str]:
        return ("meta", self.sk)

    def keys(self, *, fresh: bool = False) -> FamilyKeys:
        return family_keys(self.secret, self.purpose, fresh=fresh)

    def confirm(
        self, keys: FamilyKeys, held: Item | None = None, *, read: bool = True
    ) -> tuple[FamilyKeys, bool]:
        """Make sure the family's marks are made under `keys.current` from now on, and that the keys
        to look for them under are known: the keys to use (read again when the store's check names
        one `keys` lacks: a rotation elsewhere), and whether the erasures until now were forgotten
        (the store's check was of keys this process does not hold). `held` is the check as the
        caller read it (`read=False`), to spare a read. Unavailable when the check keeps changing."""
        forgot = False
        refreshed = False
        for _ in range(8):
            if read:
                held = self.records.get(*self.key)
            read = True
            if held is None:
                wanted = _check_of(keys)
            else:
                stored = _stored_checks(held)
                mine = {k.check for k in keys.all}
                if stored[0] == [keys.current.check] and set(stored[1]) <= mine:
                    return keys, forgot
                if not set(stored[0]) | set(stored[1]) <= mine:
                    if not refreshed:  # rotated elsewhere since this process read its ring?
                        refreshed = True
                        keys = self.keys(fresh=True)
                        read = False
                        continue
                    if not forgot:
                        log.warning(
                            "the store's secret is not the one the %s were keyed with, or lacks a previous "
                            "key they may still be under (a data directory restored without its "
                            "store-secret.key, processes given different secrets, or a previous key "
                            "dropped while marks were under it): the erasures until now can no longer be "
                            "checked against them",
                            self.family,
                        )
                        try:
                            self.forget()
                        except Conflict as exc:  # the forgotten erasures kept changing: a busy store
                            raise Unavailable(
                                f"the {self.family} cannot be checked now: {exc.message}"
                            ) from None
                        forgot = True
                wanted = _check_of(keys)
            with suppress(Conflict):  # made or changed meanwhile: read it again
                self.records.put(Item(*self.key, wanted), held.version if held else 0)
                return keys, forgot
        raise Unavailable(f"the {self.family}' key check kept changing; try again")

    def names(self, key: FamilyKey) -> bool:
        """Whether the store's check still names `key` (current or held): asked after marks were
        made under it, as a drop of the previous keys narrows the checks before it counts the marks
        left (services/secret_rotation.py), so marks made under a key no longer named are made
        again under the current one."""
        held = self.records.get(*self.key)
        if held is None:
            return False
        stored = _stored_checks(held)
        return key.check in stored[0] or key.check in stored[1]

    def mark_under_current(self, write: Callable[[FamilyKey], None], what: str) -> None:
        """`write` the family's marks under the current key as confirmed, again under the current
        one if the check no longer names that key afterwards (a drop narrowed it meanwhile: `names`);
        Unavailable, naming `what`, if it kept changing."""
        keys = self.keys()
        for _ in range(3):
            keys, _ = self.confirm(keys)
            write(keys.current)
            if self.names(keys.current):
                return
        raise Unavailable(f"{what} key check kept changing; try again")

    def narrow(self, keys: FamilyKeys) -> None:
        """Say that no mark is under a previous key any more (they were re-keyed or expired), so
        that a ring without them reads the family without forgetting anything."""
        self.name(FamilyKeys(keys.current))

    def name(self, keys: FamilyKeys) -> None:
        """Make the store's check name `keys`, whatever it named."""
        for _ in range(8):
            held = self.records.get(*self.key)
            with suppress(Conflict):
                self.records.put(Item(*self.key, _check_of(keys)), held.version if held else 0)
                return
        raise Unavailable(f"the {self.family}' key check kept changing; try again")


def _check_of(keys: FamilyKeys) -> dict[str, object]:
    return {"check": keys.current.check, "held": [k.check for k in keys.previous]}


def _stored_checks(held: Item) -> tuple[list[str], list[str]]:
    """The store's check as ([current], previous): an earlier release's has no `held`; a damaged
    one is of no key."""
    current = held.data.get("check")
    previous = held.data.get("held", [])
    return (
        [current] if isinstance(current, str) else ["(damaged)"],
        [p for p in previous if isinstance(p, str)] if isinstance(previous, list) else ["(damaged)"],
    )
