"""An in-memory AuditSpill: what a stopped process left, for the next AuditLog on it."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any


class MemoryAuditSpill:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def append(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.entries.extend(copy.deepcopy(dict(e)) for e in entries)

    def take(self) -> list[dict[str, Any]]:
        taken, self.entries = self.entries, []
        return taken
