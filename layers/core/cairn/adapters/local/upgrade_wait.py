"""How a process waits for another one's long hold of the chunk database's writer lock.

The one-time upgrades of the keyword index at open (fts_tag_words.backfill, fts_retokenize), and
the rebuild of a damaged brain's keyword index (`cairn check`, a server's repair), hold SQLite's
writer lock for as long as they run: about 30 s per 100,000 chunks. So do, for seconds to tens of
seconds at that size (bench/writer_lock_100k.py), a brain's scrub, the discard of its chunks on
unsound vector rows, the making of its term postings, and, at a million chunks, compaction's final
transaction and a brain's drop. Another process opening the same file, or writing to it while it
serves, waits for that lock, and SQLite's busy timeout (30 s) ended its wait with "database is
locked" (a traceback, or a 500) while the first was still at work.

So such transactions (an opening's, ThreadConnections.opening; a `long` one) show their progress:
one that has held the lock for BEAT_S beats a mark file beside the database
(`chunks.sqlite3.upgrading`: its process id, its time the last beat) at most every BEAT_S, from
SQLite's progress handler, which runs only while its statements run: a process stopped or stuck
beats no more. An opener whose wait for the lock runs out keeps waiting while the mark is fresh,
and says so once; a lock held with no fresh mark for BUSY_TIMEOUT_S (the same 30 s) ends in
`Unavailable`, a clear error. A serving process's writer waits the same way once its busy timeout
has run out: on while the mark is fresh, else `Unavailable` at once.
The mark is removed when the transaction ends; one a killed process left is stale, and ignored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from cairn.adapters.local import sqlite_threads
from cairn.domain.errors import Unavailable

log = logging.getLogger(__name__)

BEAT_S = 1.0
"""A transaction of an opening that has held the lock this long beats the mark, at most this often."""
STALE_S = 10.0
"""A mark older than this says nothing: its process stopped or is stuck. A waiter gives up only
BUSY_TIMEOUT_S after the last mark this fresh, so a gap of 40 s between two progress calls is
borne: the longest measured was 18 s, in a rebuild of 100,000 chunks slowed to 130 s by other
work (one statement, or the commit, that calls no progress handler)."""
POLL_S = 0.25
"""How often a waiting opener looks at the mark."""
PROGRESS_STEPS = 10_000
"""SQLite's virtual-machine steps between two progress calls (well under a millisecond)."""


class OpeningWait:
    """The mark beside one database, and the wait of an opener for the process that beats it."""

    def __init__(self, db_path: Path) -> None:
        self.mark = db_path.with_name(db_path.name + ".upgrading")
        self._said = False

    def begin(self, conn: sqlite3.Connection, *, waited: bool = False) -> None:
        """BEGIN IMMEDIATE, waiting for the writer lock as long as its holder shows progress.
        `waited`: the caller's busy timeout has run out already (no more patience without a mark)."""
        patience_s = sqlite_threads.BUSY_TIMEOUT_S
        deadline = time.monotonic() + (0 if waited else patience_s)
        if waited:  # a serving process's writer: said once per wait, not once per process
            self._said = False
        conn.execute(f"PRAGMA busy_timeout = {int(POLL_S * 1000)}")
        try:
            while True:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                        raise
                holder = self._progressing()
                if holder is not None:
                    deadline = time.monotonic() + patience_s
                    self._say(holder)
                elif time.monotonic() >= deadline:
                    raise Unavailable(
                        f"another process has held the writer lock of {self.mark.with_suffix('').name} "
                        f"for over {patience_s:g} s without showing progress: if no other Cairn "
                        "process is upgrading, rebuilding or maintaining this data directory's index, "
                        "one may be stuck; stop it and start again",
                        retry_after_s=max(1, int(patience_s)),
                    )
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(patience_s * 1000)}")

    @contextlib.contextmanager
    def beating(self, conn: sqlite3.Connection) -> Iterator[None]:
        """While the block runs on `conn` (inside its write transaction), beat the mark once the
        transaction has held the lock for BEAT_S."""
        next_beat = time.monotonic() + BEAT_S
        beaten = False

        def progress() -> int:
            nonlocal next_beat, beaten
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + BEAT_S
                beaten = self._beat(first=not beaten) or beaten
            return 0  # anything else would interrupt the statement

        conn.set_progress_handler(progress, PROGRESS_STEPS)
        try:
            yield
        finally:
            conn.set_progress_handler(None, PROGRESS_STEPS)
            if beaten:
                with contextlib.suppress(OSError):
                    self.mark.unlink()

    def _beat(self, *, first: bool) -> bool:
        try:
            if first:
                self.mark.write_text(f"{os.getpid()}\n", encoding="utf-8")
            else:
                os.utime(self.mark)
        except OSError:  # a mark not written costs the waiters patience only
            return False
        return True

    def _progressing(self) -> str | None:
        """The id of the process that beat the mark within STALE_S, or None."""
        try:
            if time.time() - self.mark.stat().st_mtime > STALE_S:
                return None
            return self.mark.read_text(encoding="utf-8").strip() or "?"
        except OSError:
            return None

    def _say(self, holder: str) -> None:
        if self._said:
            return
        self._said = True
        # A warning, so that it shows without logging set up, as the upgrade's own lines do.
        log.warning(
            "another process (pid %s) is upgrading or rebuilding the keyword index of this data directory, "
            "or scrubbing, repairing, compacting or dropping one of its brains; waiting for it to finish "
            "(about 30 s per 100,000 chunks)",
            holder,
        )
