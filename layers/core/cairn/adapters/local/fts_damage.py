"""A brain's keyword index found unreadable while serving: its reads and writes refused as
damaged, and the damage reported once to whoever repairs it.

SQLite flags only some of what breaks an FTS5 table as corrupt: a shadow table dropped or its
`_config` version changed is a plain SQLITE_ERROR ("no such table", "vtable constructor failed",
"invalid fts5 file format", "SQL logic error"), which is also what a bug in a query raises. So an
error out of a read or a write is taken as damage only when the cheap probe of fts_health.py finds the
brain's keyword index unreadable; errors of the moment (a lock, the disk, an interrupt, a full
disk) never are. Damage that raises nothing (`_idx` emptied: terms silently not found; term
postings damaged) is found by the same probe, run on the first keyword search of each brain in
this process (about 45 ms at 100,000 chunks; a brain's first write too, before its commit) and
on every read of a brain found damaged, so a brain rebuilt (by this process's repair or by `cairn
check` in another) answers again at once. A check of the brain in this process (`check`, which a
serving process's start runs on every brain) runs the same probe: its finding counts as one.
Such damage done while the process serves, after the brain's first search, is found by the same
probe run again in the background on the brain's first search REPROBE_S after its last: no search
waits for it, and a brain nobody searches costs nothing.

A damaged brain is reported to the listeners once, when first found; again only after a probe
has found it sound in between. A rebuild that leaves it damaged therefore starts no other: its
reads stay refused, naming the brain, until `cairn check` or a restart.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from cairn.adapters.local import fts_health
from cairn.adapters.local.damage_notices import DamageNotices
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.domain.errors import BrainIndexDamaged, DamagedStore

log = logging.getLogger(__name__)

REPROBE_S = 300.0
"""A brain probed sound is probed again (in the background) on its first keyword search this long
after: one probe per searched brain per period, 0.03 % of a core at 100,000 chunks
(docs/PERFORMANCE.md, "Keyword damage done while serving")."""


class KeywordsDamaged(BrainIndexDamaged):
    def __init__(self, brain_id: str, why: str) -> None:
        super().__init__(
            f"the keyword index of brain {brain_id} cannot be read ({why}): a running server "
            "rebuilds it in the background, `cairn check` rebuilds it now",
            brain_id,
        )


class KeywordHealth:
    """Which brains this process has found with a readable keyword index, and which damaged."""

    def __init__(self, tell: Callable[[str], None], db: ThreadConnections) -> None:
        self._tell = tell
        self._db = db
        self._lock = threading.Lock()
        self._sound: dict[str, float] = {}  # probed readable (when), and no read has failed since
        self._told = DamageNotices()  # found damaged and reported, until a probe finds them sound
        self._reprobing: dict[str, threading.Thread] = {}
        self._closed = False

    def ensure_sound(self, conn: sqlite3.Connection, brain_ids: Iterable[str]) -> None:
        """Probe each brain not known sound; KeywordsDamaged for the first found damaged. One
        probed sound REPROBE_S ago or more is probed again in the background."""
        for brain_id in brain_ids:
            probed = self._sound.get(brain_id)
            if probed is None:
                self._probe(conn, brain_id, None, whole_content=False)
            elif time.monotonic() - probed >= REPROBE_S:
                self._reprobe_later(brain_id)

    def checked(self, brain_id: str, why: str) -> None:
        """A check's probe of the brain (fts_health.problem: `why` it cannot be read, or "") stands
        for a read's: found sound, the brain's reads and writes take it as probed then, so a
        serving process, whose start checks every brain, does not probe it again on its first
        search or write; found damaged, the next read or write probes it (and is refused)."""
        with self._lock:
            if why:
                self._sound.pop(brain_id, None)
                return
            self._sound[brain_id] = time.monotonic()
            self._told.sound(brain_id)

    def close(self) -> None:
        """Before the connections close (one closed under a probe's statement kills the process):
        no background probe starts after this, and those under way are waited for."""
        with self._lock:
            self._closed = True
            running = list(self._reprobing.values())
        for thread in running:
            thread.join()

    def _reprobe_later(self, brain_id: str) -> None:
        with self._lock:
            if self._closed or brain_id in self._reprobing:
                return
            thread = threading.Thread(
                target=self._reprobe, args=(brain_id,), name="cairn-keyword-probe", daemon=True
            )
            self._reprobing[brain_id] = thread
            thread.start()

    def _reprobe(self, brain_id: str) -> None:
        try:
            with self._db.snapshot() as conn:
                self._probe(conn, brain_id, None)
        except KeywordsDamaged:
            pass  # told; the brain's next read probes it again, and is refused
        except Exception:  # a lock, the disk, a closed index: the next search after REPROBE_S tries again
            log.debug("probing the keyword index of brain %s again failed", brain_id, exc_info=True)
        finally:
            with self._lock:
                self._reprobing.pop(brain_id, None)

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
            self._sound.pop(brain_id, None)
            self._told.sound(brain_id)

    def _probe(
        self,
        conn: sqlite3.Connection,
        brain_id: str,
        failed: BaseException | None,
        *,
        whole_content: bool = True,
    ) -> None:
        why = fts_health.problem(conn, brain_id, whole_content=whole_content)
        with self._lock:
            if not why:
                self._sound[brain_id] = time.monotonic()
                self._told.sound(brain_id)
                return
            self._sound.pop(brain_id, None)
        if self._told.damaged(brain_id):
            self._tell(brain_id)
        raise KeywordsDamaged(brain_id, why) from failed
