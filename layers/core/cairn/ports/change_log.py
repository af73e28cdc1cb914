"""ChangeLog: change events shared by the processes of one embedded store.

Each process has its own in-process change bus (services/events.py); what a process publishes is
also appended here, so a server streaming a brain's changes can tell its subscribers of what
another process on the same data directory (`cairn mcp`, the CLI) committed. Entries are numbered
in the order they were appended, kept for minutes, never replayed from before a reader began,
and read at most once a reader: a store of recent news, not of record. On AWS there is none (the
change stream is not served there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class ChangeLogError(Exception):
    """The log could not be read or written (its file damaged, its disk full): the change is then
    told only in this process, as if no other process listened."""


@dataclass(frozen=True)
class LoggedChange:
    seq: int
    origin: str
    """The appending process's token: a reader skips its own entries, which its bus told already."""
    brain_id: str
    payload: str
    """One change event as JSON (services/events.py owns its shape)."""


class ChangeLog(Protocol):
    def append(self, origin: str, brain_id: str, payloads: list[str]) -> None:
        """Add the events, numbered after every entry appended before."""

    def mark(self) -> int:
        """The number of the last entry appended (0 for none): a new reader starts after it."""

    def since(self, mark: int, limit: int) -> list[LoggedChange]:
        """Up to `limit` entries numbered after `mark`, in order."""

    def forget(self, brain_ids: list[str]) -> None:
        """Remove every entry of these brains and leave none of their bytes in the log's files (an
        erasure, a brain's deletion)."""
