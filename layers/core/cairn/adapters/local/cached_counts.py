"""How many chunks each brain of the embedded ChunkIndex holds, counted again only when the brain's
generation moved: every write transaction touching a brain moves it (chunk_schema.py), and a
brain dropped and written again starts past every generation it had (brain_erasure.py). Mnemosyne's
graph leg asks each library's count on every search, and counting reads the whole brain
(4.5 ms at 100,000 chunks)."""

from __future__ import annotations

import sqlite3

from cairn.adapters.local import chunk_schema as schema


class CachedCounts:
    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}

    def of(self, conn: sqlite3.Connection, brain_id: str) -> int:
        """The brain's chunk count as `conn`'s read transaction sees it."""
        state = schema.brain_state(conn, brain_id)
        if state is None:
            self._counts.pop(brain_id, None)
            return 0
        cached = self._counts.get(brain_id)
        if cached is not None and cached[0] == state[1]:
            return cached[1]
        (counted,) = conn.execute("SELECT count(*) FROM chunks WHERE brain_id = ?", (brain_id,)).fetchone()
        self._counts[brain_id] = (state[1], int(counted))
        return int(counted)
