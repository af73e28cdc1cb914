"""In-memory StoreSecret: the same keys for every AuditLog given it, as the processes of one store
share theirs; `refusing` makes it raise Unavailable as a missing or damaged secret does. `rotate`
and `drop_previous` change it where it is kept (`kept`); a ring already read stays this process's
until it asks `fresh`, as an adapter's cache does, so one FakeStoreSecret per process can stand for
a process that read the ring before another one rotated it (`shared`)."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.domain.errors import Conflict, Unavailable
from cairn.domain.key_rings import KeyRing, SecretKey


@dataclass
class Kept:
    """Where the ring is kept (the key file, the Secrets Manager secret)."""

    ring: KeyRing
    rotations: int = 0


class FakeStoreSecret:
    def __init__(
        self, secret: bytes = b"a fake store secret, 32 bytes at least", kept: Kept | None = None
    ) -> None:
        self.kept = kept if kept is not None else Kept(KeyRing(SecretKey(secret)))
        self.refusing = False
        self.reads = 0
        self._ring: KeyRing | None = None

    @property
    def secret(self) -> bytes:
        return self.kept.ring.current.value

    @secret.setter
    def secret(self, value: bytes) -> None:
        """Another single key where the ring is kept (a test's other store), read from now on."""
        self.kept.ring, self._ring = KeyRing(SecretKey(value)), None

    def shared(self) -> FakeStoreSecret:
        """Another process's view of the same kept ring."""
        return FakeStoreSecret(self.secret, kept=self.kept)

    def ring(self, fresh: bool = False) -> KeyRing:
        self.reads += 1
        if self.refusing:
            raise Unavailable("the store's secret cannot be used: refused by the test")
        if self._ring is None or fresh:
            self._ring = self.kept.ring
        return self._ring

    def read(self) -> bytes:
        return self.ring().current.value

    def rotate(self) -> KeyRing:
        self.kept.rotations += 1
        new = SecretKey(f"rotated key {self.kept.rotations} of {self.secret!r}".encode())
        self.kept.ring = self.ring(fresh=True).rotated(new)
        return self.ring(fresh=True)

    def drop_previous(self, current: str | None = None) -> KeyRing:
        if current is not None and self.ring(fresh=True).current.id != current:
            raise Conflict("the store's secret was rotated meanwhile")
        self.kept.ring = KeyRing(self.ring(fresh=True).current)
        return self.ring(fresh=True)


SECRET = FakeStoreSecret()
"""One secret for the tests' AuditLogs on one store (several of them stand for several processes)."""
