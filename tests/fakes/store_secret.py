"""In-memory StoreSecret: the same bytes for every AuditLog given it, as the processes of one store
share theirs; `refusing` makes it raise Unavailable as a missing or damaged secret does."""

from __future__ import annotations

from cairn.domain.errors import Unavailable


class FakeStoreSecret:
    def __init__(self, secret: bytes = b"a fake store secret, 32 bytes at least") -> None:
        self.secret = secret
        self.refusing = False
        self.reads = 0

    def read(self) -> bytes:
        self.reads += 1
        if self.refusing:
            raise Unavailable("the store's secret cannot be used: refused by the test")
        return self.secret


SECRET = FakeStoreSecret()
"""One secret for the tests' AuditLogs on one store (several of them stand for several processes)."""
