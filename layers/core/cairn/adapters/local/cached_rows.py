"""The embedded ChunkIndex's per-brain cache of BrainRows (brain_rows.py), kept in step with its
own writes and compactions.

Loading a brain's rows reads the whole brain (~0.2 s at 100,000 chunks), so they are loaded once
and then derived from each write this process commits (`applied`) and each compaction's
renumbering (`swapped`). A generation this process did not make (another process wrote) drops
the entry, and the next search loads it again. An entry newer than a search's snapshot is used
as it is: chunks the snapshot cannot see are dropped when their ids are looked up in it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from cairn.adapters.local.brain_rows import BrainRows
from cairn.adapters.local.chunk_writes import Delta
from cairn.adapters.local.vector_store import Rows


class CachedRows:
    def __init__(self) -> None:
        self._rows: dict[str, BrainRows] = {}

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __contains__(self, brain_id: object) -> bool:
        return brain_id in self._rows

    def of(self, conn: sqlite3.Connection, brain_id: str, generation: int) -> BrainRows:
        """The brain's cached rows, unless older than this snapshot's generation."""
        cached = self._rows.get(brain_id)
        if cached is not None and cached.generation >= generation:
            return cached
        fresh = BrainRows.load(conn, brain_id, generation)
        current = self._rows.get(brain_id)
        if current is None or current.generation < generation:
            self._rows[brain_id] = fresh
        return fresh

    def applied(self, brain_id: str, delta: Delta) -> None:
        """After a commit: derive the brain's next cached rows from its change."""
        cached = self._rows.get(brain_id)
        if cached is None or cached.generation > delta.before:
            return  # nothing cached, or a reader already loaded the new state
        if cached.generation == delta.before:
            added = list(delta.added.values())
            self._rows[brain_id] = cached.changed(delta.before + 1, added, delta.removed, delta.activated)
        else:  # another process wrote in between: load afresh when next needed
            self._rows.pop(brain_id, None)

    def swapped(self, brain_id: str, before: int, sources: Rows) -> None:
        """Compaction renumbered the brain's rows: move the cached rows along with them."""
        cached = self._rows.get(brain_id)
        if cached is not None and cached.generation == before and (sources < cached.rowid_of.size).all():
            self._rows[brain_id] = cached.permuted(before + 1, sources)
        else:
            self._rows.pop(brain_id, None)

    def forget(self, brain_id: str) -> None:
        self._rows.pop(brain_id, None)
