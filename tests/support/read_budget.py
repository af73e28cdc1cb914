"""A cap on the reads a piece of work may make of a record store: a test of work that must stay
bounded (a damaged record read as a huge count) fails at the cap instead of running for hours."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from cairn.ports.records import RecordStore

READS = ("get", "get_many", "query", "scan")


class ReadBudgetSpent(BaseException):
    """Past the cap (a BaseException: no `except Exception` on the way swallows it)."""


class Reads:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def counted(self, read: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.count > self.limit:
                raise ReadBudgetSpent(f"more than {self.limit} reads of the record store")
            return read(*args, **kwargs)

        return call


@contextmanager
def read_budget(monkeypatch: pytest.MonkeyPatch, records: RecordStore, limit: int) -> Iterator[Reads]:
    """Count every read of `records` (each call of a read method) inside the block; the one past
    `limit` raises ReadBudgetSpent."""
    reads = Reads(limit)
    with monkeypatch.context() as patched:
        for name in READS:
            patched.setattr(records, name, reads.counted(getattr(records, name)))
        yield reads
