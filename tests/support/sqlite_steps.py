"""How much work SQLite does for a call: its virtual machine's steps, counted through a progress
handler on the connection the call uses. Tests compare a call's steps at a small and a ten times
larger size to catch a read that grows with the data where it should not (no timing)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def steps(conn: sqlite3.Connection, work: Callable[[], T], every: int = 10) -> tuple[int, T]:
    """The steps (in `every`s) `work` takes on `conn`, and what it answered."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    conn.set_progress_handler(tick, every)
    try:
        answer = work()
    finally:
        conn.set_progress_handler(None, every)
    return counted[0], answer
