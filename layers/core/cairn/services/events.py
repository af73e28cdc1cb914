"""In-process change events per brain (the store protocol's `events` SSE stream).

Delivery is at-most-once, in commit order, to every subscriber attached when the event is
published (Jeffs STORAGE.md "Event ordering"). Publishing is thread-safe: services run in
worker threads while subscribers are asyncio consumers.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

ChangeKind = Literal["created", "updated", "deleted", "renamed"]


@dataclass(frozen=True)
class ChangeEvent:
    kind: ChangeKind
    path: str
    when: datetime
    old_path: str | None = None
    reason: str | None = None
    owner: str | None = None
    """The changed document's owner (Document.owner), never sent: a subscriber that may not see
    the owner's items is not told of it (auth/access.py)."""

    def wire(self) -> dict[str, str]:
        body = {"kind": self.kind, "path": self.path}
        if self.old_path is not None:
            body["old_path"] = self.old_path
        if self.reason is not None:
            body["reason"] = self.reason
        body["when"] = self.when.isoformat().replace("+00:00", "Z")
        return body


class Subscription:
    def __init__(
        self, bus: EventBus, brain_id: str, sees: Callable[[str | None], bool], holder: str | None = None
    ) -> None:
        self._bus = bus
        self.brain_id = brain_id
        self.sees = sees
        self.holder = holder
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[ChangeEvent] = asyncio.Queue(maxsize=10_000)

    def _deliver(self, event: ChangeEvent) -> None:
        if not self.sees(event.owner):
            return

        def put() -> None:
            if not self._queue.full():  # a consumer that stopped reading loses events, never blocks writers
                self._queue.put_nowait(event)

        self._loop.call_soon_threadsafe(put)

    async def next(self, timeout: float) -> ChangeEvent | None:
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None

    def close(self) -> None:
        self._bus._remove(self)

    async def __aiter__(self) -> AsyncIterator[ChangeEvent]:
        while True:
            yield await self._queue.get()


class EventBus:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[str, list[Subscription]] = {}
        self._listeners: list[Callable[[str, list[ChangeEvent]], None]] = []

    def listen(self, listener: Callable[[str, list[ChangeEvent]], None]) -> None:
        """Call `listener(brain_id, events)` in the publishing thread whenever a brain's documents
        change in this process (a cache keeps itself exact with it)."""
        with self._lock:
            self._listeners.append(listener)

    def subscribe(
        self,
        brain_id: str,
        sees: Callable[[str | None], bool] = lambda owner: True,
        holder: str | None = None,
    ) -> Subscription:
        """Attach a subscriber; must be called from the event loop that will consume it. `sees`
        says, by a changed document's owner, whether the subscriber may be told of the change
        (auth/access.py `seer`: the access rule of the request that subscribed); `holder` names
        who holds it, for `held_by`."""
        sub = Subscription(self, brain_id, sees, holder)
        with self._lock:
            self._subs.setdefault(brain_id, []).append(sub)
        return sub

    def held_by(self, holder: str) -> int:
        """How many subscriptions `holder` holds open, on every brain."""
        with self._lock:
            return sum(1 for subs in self._subs.values() for sub in subs if sub.holder == holder)

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subs.get(sub.brain_id, [])
            if sub in subs:
                subs.remove(sub)

    def publish(self, brain_id: str, events: list[ChangeEvent]) -> None:
        with self._lock:
            subs = list(self._subs.get(brain_id, []))
            listeners = list(self._listeners)
        for listener in listeners:
            listener(brain_id, events)
        for sub in subs:
            for event in events:
                try:
                    sub._deliver(event)
                except RuntimeError:  # the subscriber's loop has closed
                    self._remove(sub)
                    break
