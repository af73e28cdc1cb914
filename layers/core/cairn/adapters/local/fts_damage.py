"""A brain's keyword index found unreadable while serving: its reads and writes refused as
damaged, and the damage reported once to whoever repairs it.

SQLite flags only some of what breaks an FTS5 table as corrupt: a shadow table dropped or its
`_config` version changed is a plain SQLITE_ERROR ("no such table", "vtable constructor failed",
"invalid fts5 file format", "SQL logic error"), which is also what a bug in a query raises. So an
error out of a read or a write is taken as damage only when the cheap probe of fts_health.py finds the
brain's keyword index unreadable; errors of the moment (a lock, the disk, an interrupt, a full
disk) never are. Damage that raises nothing (`_idx` emptied: terms silently not found; term
postings damaged) is found by the same probe, run on the first keyword search of each brain in
this process (about 45 ms at 100,000 chunks) and on every read of a brain found damaged, so a
brain rebuilt (by this process's repair or by `cairn check` in another) answers again at once.

A damaged brain is reported to the listeners once, when first found; again only after a probe
has found it sound in between. A rebuild that leaves it damaged therefore starts no other: its
reads stay refused, naming the brain, until `cairn check` or a restart.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from cairn.adapters.local import fts_health
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.domain.errors import DamagedStore


class KeywordsDamaged(DamagedStore):
    def __init__(self, brain_id: str, why: str) -> None:
        super().__init__(
            f"the keyword index of brain {brain_id} cannot be read ({why}): a running server "
            "rebuilds it in the background, `cairn check` rebuilds it now"
        )
        self.brain_id = brain_id


class KeywordHealth:
    """Which brains this process has found with a readable keyword index, and which damaged."""

    def __init__(self, tell: Callable[[str], None]) -> None:
        self._tell = tell
        self._lock = threading.Lock()
        self._sound: set[str] = set()  # probed readable, and no read has failed since
        self._told: set[str] = set()  # found damaged and reported, until a probe finds them sound

    def ensure_sound(self, conn: sqlite3.Connection, brain_ids: Iterable[str]) -> None:
        """Probe each brain not known sound; KeywordsDamaged for the first found damaged."""
        for brain_id in brain_ids:
            if brain_id not in self._sound:
                self._probe(conn, brain_id, None)

    @contextmanager
    def reading(self, conn: sqlite3.Connection, brain_ids: Iterable[str]) -> Iterator[None]:
        """Around reads of these brains' keyword tables: an error a probe confirms as damage is
        KeywordsDamaged naming the brain; any other passes unchanged."""
        try:
            yield
        except KeywordsDamaged:
            raise
        # ValueError, IndexError: numpy reading term postings whose bytes were overwritten
        except (sqlite3.DatabaseError, ValueError, IndexError) as exc:
            if fts_health.transient(exc):
                raise
            for brain_id in list(brain_ids):
                self._probe(conn, brain_id, exc)
            raise

    @contextmanager
    def writing(self, db: ThreadConnections, brain_ids: Iterable[str]) -> Iterator[None]:
        """Around a write transaction of these brains (outside it: what failed is rolled back):
        an error a probe then confirms as damage is KeywordsDamaged naming the brain."""
        try:
            yield
        except KeywordsDamaged:
            raise
        except (sqlite3.DatabaseError, DamagedStore, ValueError, IndexError) as exc:
            cause = exc.__cause__ if isinstance(exc, DamagedStore) else exc
            if not isinstance(cause, sqlite3.DatabaseError | ValueError | IndexError) or fts_health.transient(
                cause
            ):
                raise
            with db.snapshot() as conn:
                for brain_id in list(brain_ids):
                    self._probe(conn, brain_id, exc)
            raise

    def forget(self, brain_id: str) -> None:
        with self._lock:
            self._sound.discard(brain_id)
            self._told.discard(brain_id)

    def _probe(self, conn: sqlite3.Connection, brain_id: str, failed: BaseException | None) -> None:
        why = fts_health.problem(conn, brain_id)
        with self._lock:
            if not why:
                self._sound.add(brain_id)
                self._told.discard(brain_id)
                return
            self._sound.discard(brain_id)
            first = brain_id not in self._told
            self._told.add(brain_id)
        if first:
            self._tell(brain_id)
        raise KeywordsDamaged(brain_id, why) from failed
