"""An in-memory AuditSpill: what a stopped process left, for the next AuditLog on it."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class MemoryAuditSpill:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def append(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.entries.extend(copy.deepcopy(dict(e)) for e in entries)

    def read(self, limit: int) -> list[dict[str, Any]]:
        return copy.deepcopy(self.entries[:limit])

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        changed = (change(copy.deepcopy(e)) for e in self.entries)
        self.entries = [e for e in changed if e is not None]
