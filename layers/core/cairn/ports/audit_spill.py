"""AuditSpill: audit entries a stopping process could not write to its record store, kept on
durable storage for the next process to write (services/audit.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol


class AuditSpill(Protocol):
    def append(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Keep these entries (each a JSON object), durably before returning."""

    def read(self, limit: int) -> list[dict[str, Any]]:
        """The first `limit` whole entries kept, oldest first, left kept (a process stopped
        before it wrote them loses none). An entry cut short (a stop while it was appended) or
        unreadable (not a JSON object with a string `id`) is left out, never raised."""

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        """Each entry kept becomes `change(entry)`, or is dropped when that is None, as one
        change: a stop midway leaves every entry as it was. Entries unreadable are dropped."""
