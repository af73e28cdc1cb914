"""The clients dynamic registration made, in Cairn's records: `oauthclients` / `client#<id>`, so an
operator can list and revoke them, and so a token issued to one is known to be meant for Cairn.

`knows` answers the JWT audience check on every request with such a token: a client's answer is
kept `cache_s` seconds (a revoked client's tokens may pass that long after; its access tokens last
an hour anyway), in at most `max_cached` entries. The first token a client presents stamps its
`first_used_at`, so registration can take back the places of clients nobody ever signed in with
(`never_used`).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime

from pydantic import BaseModel

from cairn.auth.revocable import revoke_record
from cairn.domain.errors import Conflict, Unavailable
from cairn.domain.text import excerpt
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore

CLIENTS_PK = "oauthclients"
_CLIENT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


class RegisteredClient(BaseModel):
    client_id: str
    client_name: str | None = None
    redirect_uris: list[str]
    scopes: list[str]
    confidential: bool = False
    created_at: datetime
    revoked_at: datetime | None = None
    # Set for clients registered since use was tracked; those made before can never be told unused.
    use_tracked: bool = False
    first_used_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class RegisteredClients:
    def __init__(
        self,
        records: RecordStore,
        clock: Clock,
        *,
        cache_s: float = 300.0,
        max_cached: int = 10_000,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.records, self.clock = records, clock
        self._cache_s, self._max_cached, self._monotonic = cache_s, max_cached, monotonic
        self._cache: OrderedDict[str, tuple[bool, float]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, client: RegisteredClient) -> None:
        self.records.put(Item(CLIENTS_PK, _sk(client.client_id), client.model_dump(mode="json")), 0)

    def get(self, client_id: str) -> RegisteredClient | None:
        found = self._read(client_id)
        return found[1] if found is not None else None

    def _read(self, client_id: str) -> tuple[Item, RegisteredClient] | None:
        item = self.records.get(CLIENTS_PK, _sk(client_id)) if _CLIENT_ID.fullmatch(client_id) else None
        return (item, RegisteredClient.model_validate(item.data)) if item is not None else None

    def list(self) -> list[RegisteredClient]:
        """Every client registered, revoked ones included, oldest id first."""
        found: list[RegisteredClient] = []
        after: str | None = None
        while True:
            page = self.records.query(CLIENTS_PK, "client#", after=after, limit=500)
            found += [RegisteredClient.model_validate(i.data) for i in page.items]
            if page.next_after is None:
                return found
            after = page.next_after

    def active_count(self) -> int:
        return sum(1 for client in self.list() if client.active)

    def never_used(self, registered_before: datetime) -> Sequence[RegisteredClient]:
        """Active clients registered before then that no token has come from since."""
        return [
            c
            for c in self.list()
            if c.active and c.use_tracked and c.first_used_at is None and c.created_at < registered_before
        ]

    def mark_revoked(self, client_id: str, *, unless_used: bool = False) -> RegisteredClient:
        """The client's record, revoked (idempotent); NotFound for an id never registered.
        `unless_used`: left as it is if a token of it has come in."""
        revoked = revoke_record(
            self.records,
            CLIENTS_PK,
            _sk(client_id) if _CLIENT_ID.fullmatch(client_id) else None,
            RegisteredClient,
            self.clock,
            missing=f"no registered OAuth client {excerpt(client_id)}",
            busy=f"the OAuth client {client_id} kept changing while being revoked",
            only_if=(lambda c: c.first_used_at is None) if unless_used else None,
        )
        self.forget(client_id)
        return revoked

    def knows(self, client_id: str) -> bool:
        """Whether `client_id` is a live client registered here (cached)."""
        now = self._monotonic()
        with self._lock:
            cached = self._cache.get(client_id)
            if cached is not None and cached[1] > now:
                return cached[0]
        found = self._read(client_id)
        known = found is not None and found[1].active
        if found is not None and known and found[1].first_used_at is None:
            self._stamp_first_use(*found)
        with self._lock:
            self._cache[client_id] = (known, now + self._cache_s)
            self._cache.move_to_end(client_id)
            while len(self._cache) > self._max_cached:
                self._cache.popitem(last=False)
        return known

    def _stamp_first_use(self, item: Item, client: RegisteredClient) -> None:
        """Record that a token of this client came in (best effort: a failed stamp only leaves the
        client looking unused until the next read past the cache stamps it)."""
        used = client.model_copy(update={"first_used_at": self.clock.now()})
        with contextlib.suppress(Conflict, Unavailable):
            self.records.put(Item(CLIENTS_PK, item.sk, used.model_dump(mode="json")), item.version)

    def forget(self, client_id: str) -> None:
        with self._lock:
            self._cache.pop(client_id, None)


def _sk(client_id: str) -> str:
    return f"client#{client_id}"
