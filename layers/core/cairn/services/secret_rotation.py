"""Rotating the store's secret (`cairn secret`): what a rotation keeps, and when a previous key may go.

`rotate` makes a new current key where the secret is kept (the old one kept among the previous keys:
ports/store_secret.py), then makes each family's key check name it, so every process of the store
reads its ring again at its next check (services/keyed_digests.py). From then on marks are made
under the new key, matched under every key the ring holds, and re-keyed to the new one when a lookup
finds them under an old one. A digest cannot be re-keyed without what it digests, which the store
never keeps, so the marks no lookup meets stay under their key until their family's lifetime ends
(30 days after their erasure's last pass); `status` counts them. Marks under a key the ring no
longer holds (dropped by force, a secret replaced) are counted apart, as lost: no lookup reads them,
the erasures they stand for were forgotten when their key went, and they hold back no drop. Once no
mark is left under a previous key, `drop_previous` says so in each family's check and then removes
the previous keys from the secret, and nothing is forgotten. It first makes each check its own (so a
key the checks name that the ring has lost is forgotten then, not hidden by the narrowed check),
and drops nothing when the ring it counted against was rotated meanwhile (another `rotate`: its
marks would be under a key the count never saw). Dropped while marks are left (`force`), the
families forget the erasures until now, as when a mark expires: work queued before then writes
nothing drawn from a person, and audit entries waiting from before are written redacted; nothing
erased comes back.

A drop narrows the checks, then counts the marks again before it drops the keys: an erasure that
checked the keys before the narrowing may have marked under a previous key since the first count
(this count sees it, and the drop is given up, the checks naming every key again, or forgets it with
`force`), and one that marks after the narrowing reads the check again after its write and marks
again under the current key (`KeyCheck.names`).

A kill at any point leaves every mark checkable: the new ring is written whole before any check
names it (a process that reads it before the checks do is the first to see the rotation and makes
them its own), and each re-keying is one transaction; a drop narrows the checks before the secret
(killed between, the ring still holds the keys the marks are under).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cairn import faults
from cairn.domain.errors import Conflict
from cairn.domain.key_rings import ROTATED_MEANWHILE, KeyRing
from cairn.ports.store_secret import RotatableSecret
from cairn.services.keyed_digests import KeyCheck
from cairn.services.mark_lifetimes import HeldUnder


class MarkFamily(Protocol):
    @property
    def check(self) -> KeyCheck: ...

    def held_under_previous_keys(self, ring: KeyRing) -> HeldUnder: ...


@dataclass(frozen=True)
class FamilyStatus:
    name: str
    held: HeldUnder


@dataclass(frozen=True)
class RotationStatus:
    current: str  # the current key's id
    previous: tuple[str, ...]
    families: tuple[FamilyStatus, ...]

    @property
    def held(self) -> int:
        """Marks under another key than the current one, in every family."""
        return sum(f.held.count for f in self.families)

    @property
    def last_until(self) -> str | None:
        """When the last of them expires."""
        return max((f.held.last_until for f in self.families if f.held.last_until), default=None)


class SecretRotation:
    def __init__(self, secret: RotatableSecret, families: Sequence[MarkFamily]) -> None:
        self.secret = secret
        self.families = families

    def status(self) -> RotationStatus:
        ring = self.secret.ring(fresh=True)
        return RotationStatus(
            ring.current.id,
            tuple(k.id for k in ring.previous),
            tuple(FamilyStatus(f.check.family, f.held_under_previous_keys(ring)) for f in self.families),
        )

    def rotate(self) -> RotationStatus:
        self.secret.rotate()
        faults.reached("secret.rotated")
        for family in self.families:
            family.check.confirm(family.check.keys(fresh=True))
        return self.status()

    def drop_previous(self, *, force: bool = False) -> RotationStatus:
        """Remove the previous keys; Conflict, and nothing changed, while marks are still under
        them, unless `force` (the erasures until now then forgotten: the module's docstring).
        Conflict too, and nothing dropped, when the secret was rotated meanwhile."""
        for family in self.families:  # a key the checks name that the ring lost: forgotten first
            family.check.confirm(family.check.keys(fresh=True))
        status = self.status()
        if not status.previous:
            return status
        if status.held and not force:
            raise _still_held(status)
        for family in self.families:
            keys = family.check.keys(fresh=True)
            if keys.current.id != status.current:  # the count was of another ring: its keys stay
                self._name_the_ring()
                raise Conflict(ROTATED_MEANWHILE)
            family.check.narrow(keys)
        # Counted again: a process that checked the keys before they were narrowed may have made a
        # mark under a previous key since the count (one that checks after makes it again).
        again = self.status()
        if again.current != status.current or (again.held and not force):
            self._name_the_ring()
            raise Conflict(ROTATED_MEANWHILE) if again.current != status.current else _still_held(again)
        for family, held in zip(self.families, again.families, strict=True):
            if held.held.count:
                family.check.forget()
        self.secret.drop_previous(status.current)
        return self.status()

    def _name_the_ring(self) -> None:
        """Make each check name every key of the ring again (a drop given up)."""
        for family in self.families:
            family.check.name(family.check.keys(fresh=True))


def _still_held(status: RotationStatus) -> Conflict:
    return Conflict(
        f"{status.held} erasure marks are still under a previous key of the store's secret "
        f"(the last expires at {status.last_until}); dropping it now would make every erasure "
        "until now uncheckable (work queued before it refused, waiting audit entries redacted): "
        "wait, or drop it with --force"
    )
