"""AuditSpill: audit entries a stopping process could not write to its record store, kept on
durable storage for the next process to write (services/audit.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class AuditSpill(Protocol):
    def append(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Keep these entries (each a JSON object), durably before returning."""

    def take(self) -> list[dict[str, Any]]:
        """Every whole entry kept, oldest first, and none kept any more. An entry cut short (a
        stop while it was appended) or unreadable is left out, never raised."""
