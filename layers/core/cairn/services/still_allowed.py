"""Whether the caller that began something long (a change stream, a streamed answer) may still
read the brain it is about: its key not revoked since, the brain not made private, handed over or
deleted meanwhile. What a request was authorised for at its start holds no longer once either moved.
"""

from __future__ import annotations

import time
from typing import Final, Protocol

from cairn.auth import access
from cairn.auth.principal import Principal
from cairn.domain.models import Brain

RECHECK_S: Final = 1.0
"""How long a check read holds, unless this process revoked a key or rewrote a brain since: a
revocation by another process (`cairn keys revoke`) is seen within this."""


class Revocations(Protocol):
    revocations: int

    def revoked(self, subject: str) -> bool: ...


class BrainChanges(Protocol):
    def still_readable(self, brain_id: str, principal: Principal) -> bool: ...

    @property
    def changes(self) -> int: ...


class StillAllowed:
    """`check` reads both again; `fresh` says, without reading, that the last read still holds: it
    is under RECHECK_S old and this process has revoked no key and rewritten no brain since (a busy
    stream would otherwise cost a read, and a worker thread, a frame). The system (no access set)
    is always allowed."""

    def __init__(self, keys: Revocations, brains: BrainChanges, brain: Brain) -> None:
        now = access.current()
        self.principal = now.principal if now is not None else None
        self.keys, self.brains, self.brain = keys, brains, brain
        self.last: tuple[float, int, int] | None = None  # when it was read, the counts it was read at

    def _counts(self) -> tuple[int, int]:
        return self.keys.revocations, self.brains.changes

    def fresh(self) -> bool:
        if self.principal is None:
            return True
        last = self.last
        return last is not None and last[1:] == self._counts() and time.monotonic() - last[0] < RECHECK_S

    def check(self) -> bool:
        if self.principal is None:
            return True
        counts = self._counts()
        if self.keys.revoked(self.principal.subject):
            return False
        if not self.brains.still_readable(self.brain.id, self.principal):
            return False
        self.last = (time.monotonic(), *counts)
        return True
