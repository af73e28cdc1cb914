"""Change events per brain (the store protocol's `events` SSE stream).

Delivery is at-most-once, in commit order, to every subscriber attached when the event is
published (Jeffs STORAGE.md "Event ordering"). Publishing is thread-safe: services run in
worker threads while subscribers are asyncio consumers.

Several processes may share one embedded store (`cairn serve`, `cairn mcp`, the CLI). With a
ChangeLog (ports/change_log.py) each also appends what it publishes there, and `follow`, which an
open stream calls every FOLLOW_S, tells this process's subscribers of what the others appended
since: their changes arrive within about that, in the order they were appended.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from cairn.ports.change_log import ChangeLog, ChangeLogError

ChangeKind = Literal["created", "updated", "deleted", "renamed"]
FOLLOW_S = 0.5
"""How often an open stream looks for other processes' changes (at most one look at a time)."""
FOLLOW_BATCH = 500
ARM_S = 30.0
"""How long a reserved subscription counts against its holder before its stream arms it: a
response that never started streaming (its client left first) releases its slot after this."""

log = logging.getLogger(__name__)


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

    def logged(self) -> str:
        """The event as the change log keeps it: what `wire` sends, and the owner."""
        return json.dumps({**self.wire(), "owner": self.owner}, separators=(",", ":"))

    @classmethod
    def from_log(cls, payload: str) -> ChangeEvent | None:
        """The event another process logged; None for one this release cannot read."""
        try:
            body = json.loads(payload)
            kind, path, when = body["kind"], body["path"], datetime.fromisoformat(body["when"])
            extra = {k: body.get(k) for k in ("old_path", "reason", "owner")}
        except (ValueError, KeyError, TypeError):
            return None
        texts = [path, *(v for v in extra.values() if v is not None)]
        if kind not in get_args(ChangeKind) or not all(isinstance(t, str) for t in texts):
            return None
        return cls(kind=kind, path=path, when=when, **extra)


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
        self.armed = True
        self.reserved_at = time.monotonic()

    def arm(self) -> None:
        """Hear what is published from now on (a reserved subscription hears nothing before)."""
        self.armed = True

    def counts(self, now: float) -> bool:
        """Whether it still holds its holder's slot: armed, or reserved under ARM_S ago."""
        return self.armed or now - self.reserved_at < ARM_S

    def _deliver(self, event: ChangeEvent) -> None:
        if not self.armed or not self.sees(event.owner):
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
    def __init__(self, changes: ChangeLog | None = None) -> None:
        """`changes`: the log the processes of one embedded store share (None: this process only)."""
        self._lock = threading.Lock()
        self._subs: dict[str, list[Subscription]] = {}
        self._listeners: list[Callable[[str, list[ChangeEvent]], None]] = []
        self._changes = changes
        self._origin = secrets.token_hex(8)
        self._following = threading.Lock()
        self._read_past: int | None = None  # the log's last entry this bus has looked at
        self._looked = 0.0

    @property
    def follows(self) -> bool:
        """Whether other processes' changes reach this bus (through `follow`)."""
        return self._changes is not None

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
        who holds it, for `reserve`'s count."""
        sub = Subscription(self, brain_id, sees, holder)
        with self._lock:
            self._subs.setdefault(brain_id, []).append(sub)
        return sub

    def reserve(
        self, brain_id: str, sees: Callable[[str | None], bool], holder: str, limit: int
    ) -> Subscription | None:
        """A subscription that hears nothing until armed, taken only while `holder` holds fewer
        than `limit`: the count and the taking are one step, so a burst of requests cannot all
        pass the count before any subscribes. None at the limit."""
        sub = Subscription(self, brain_id, sees, holder)
        sub.armed = False
        with self._lock:
            now = sub.reserved_at
            for subs in self._subs.values():  # reservations never armed (their client left) lapse
                subs[:] = [s for s in subs if s.counts(now)]
            if self._held_by(holder, now) >= limit:
                return None
            self._subs.setdefault(brain_id, []).append(sub)
        return sub

    def _held_by(self, holder: str, now: float) -> int:
        """How many subscriptions `holder` holds open, on every brain."""
        held = (sub for subs in self._subs.values() for sub in subs if sub.holder == holder)
        return sum(1 for sub in held if sub.counts(now))

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
        self._deliver(subs, events)
        if self._changes is not None:
            try:
                self._changes.append(self._origin, brain_id, [event.logged() for event in events])
            except ChangeLogError as exc:  # the write stands; only other processes miss its news
                log.warning("change events not shared with other processes: %s", exc)

    def follow(self) -> None:
        """Tell this process's subscribers what other processes logged since the last look; with
        no subscriber, only move past it (a subscriber hears nothing from before it attached).
        Blocking I/O: call it from a worker thread. A look under FOLLOW_S / 2 after the last, or
        while another thread looks, is skipped."""
        if self._changes is None or time.monotonic() - self._looked < FOLLOW_S / 2:
            return
        if not self._following.acquire(blocking=False):
            return
        try:
            self._looked = time.monotonic()
            with self._lock:
                listening = {brain: list(subs) for brain, subs in self._subs.items() if subs}
            if self._read_past is None or not listening:
                self._read_past = self._changes.mark()
                return
            while True:
                entries = self._changes.since(self._read_past, FOLLOW_BATCH)
                for entry in entries:
                    self._read_past = entry.seq
                    subs = listening.get(entry.brain_id)
                    if not subs or entry.origin == self._origin:  # nobody listens, or this bus told it
                        continue
                    event = ChangeEvent.from_log(entry.payload)
                    if event is not None:
                        self._deliver(subs, [event])
                if not entries and self._changes.mark() < self._read_past:
                    self._read_past = 0  # a new log file (a damaged one was removed): its numbers began again
                    continue
                if len(entries) < FOLLOW_BATCH:
                    return
        except ChangeLogError as exc:
            log.warning("other processes' change events could not be read: %s", exc)
        finally:
            self._following.release()

    def _deliver(self, subs: list[Subscription], events: list[ChangeEvent]) -> None:
        for sub in subs:
            for event in events:
                try:
                    sub._deliver(event)
                except RuntimeError:  # the subscriber's loop has closed
                    self._remove(sub)
                    break
