"""Each brain's ANN index and the compaction that reclaims dead vector rows.

Vector files only grow: an updated or deleted chunk leaves its old row behind, unreferenced.
Compaction copies the live rows, in order, into the next epoch's file, builds the base index over
them, then in one write transaction copies the rows written meanwhile, renumbers `vec_row` in
`chunks`, `chunk_tags` and `chunk_facets` and moves `brain_state.vec_epoch` on. Searches never
wait: until that commit they read the old epoch, whose files stay mapped by whoever uses them.
Writers wait only for the final transaction (about 1 s at 100,000 live rows; it shows its
progress to other processes' writers, upgrade_wait.py). When no row is dead, only the index is
rebuilt.

Compaction runs in the background (one daemon thread, after writes make a brain need it: an
index is missing at `ann_min_rows` live rows, a fifth of the rows are dead, or more rows are
outside the base index than a tenth of it) and on demand (`cairn compact`, and a scrub, which
needs the dead rows gone however few they are). A file lock per brain keeps two processes from
compacting the same brain at once; dropping the brain takes it too (`exclusive`), then removes it
with the brain's other files.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from cairn import faults
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings_build, vector_health, vector_sums
from cairn.adapters.local.ann_index import BrainAnn, build, sum_path, verified
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.adapters.local.vector_checkpoint import Identity, identity
from cairn.adapters.local.vector_copy import UnsoundRows, copy_checked
from cairn.adapters.local.vector_store import Rows, VectorFile, VectorStore, file_name, stem
from cairn.ports.chunks import ANN_NONE, ANN_OK, ANN_REBUILDING, Compaction

log = logging.getLogger(__name__)
ANN_MIN_ROWS = 20_000  # below this many live rows exact search is as fast (docs/ANN.md)
DEAD_SHARE = 0.2
CATCH_UP_BATCH = 256  # rows added to a delta per lock hold when catching up
_COPY_ROWS = 50_000
_MOVES = "CREATE TEMP TABLE IF NOT EXISTS vec_moves (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)"


# Called with (brain_id, generation before the swap, new epoch, sources) after a rewrite commits,
# `sources[i]` being the old row now at row i, so the caller can move its cached rows along.
Swapped = Callable[[str, int, int, Rows], None]


class VectorMaintenance:
    def __init__(
        self,
        db: ThreadConnections,
        vectors: VectorStore,
        write_lock: threading.Lock,
        swapped: Swapped,
        *,
        grown: Callable[[str], None] = lambda brain_id: None,
        damaged: Callable[[str], object] = lambda brain_id: None,
        ann_min_rows: int = ANN_MIN_ROWS,
        background: bool = True,
    ) -> None:
        self.db = db
        self.vectors = vectors
        self.write_lock = write_lock
        self.swapped = swapped
        self.grown = grown  # the brain's other upkeep at this size (its full-text postings)
        self.damaged = damaged  # checks the brain's file, recording its damage (vector_health.py)
        self.ann_min_rows = ann_min_rows
        self.background = background
        self._anns: dict[tuple[str, int], BrainAnn] = {}
        # Index files found damaged, by identity: passed over until it moves, which a file rewritten
        # in place does even with its mtime set back (its ctime).
        self._unsound: dict[tuple[str, int], Identity] = {}
        self._lock = threading.Lock()
        self._wanted: set[str] = set()
        self._wake = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None

    # -- the indexes ----------------------------------------------------------------------

    def ann(self, brain_id: str, epoch: int) -> BrainAnn | None:
        """The brain's index in this epoch, opened (memory-mapped) on first use once its file is
        checked against its sum; None when it has none, or none that is sound (exact search then,
        and compaction builds it again)."""
        key = (brain_id, epoch)
        found = self._anns.get(key)
        if found is not None:
            return found
        path = self.index_path(brain_id, epoch)
        signature = identity(path)
        if signature is None or self._unsound.get(key) == signature:
            return None
        with self._lock:
            found = self._anns.get(key)
            if found is None:
                try:
                    if not verified(path):
                        raise RuntimeError("the index does not match its sum")
                    found = BrainAnn(path, self.vectors.dimension)
                except (RuntimeError, OSError):  # damaged, half-written, or deleted since
                    if identity(path) is not None:
                        log.warning("a vector index is damaged: searching exactly until it is rebuilt")
                        self._unsound[key] = signature
                        self._wanted.add(brain_id)
                    return None
                self._anns[key] = found
        self.poke(brain_id, epoch)  # rows written since the base was built are caught up
        return found

    def ann_state(self, brain_id: str, epoch: int) -> str:
        """ANN_OK, ANN_NONE (exact search is as fast), or ANN_REBUILDING (none sound yet: exact
        search until compaction builds it)."""
        if self.ann(brain_id, epoch) is not None:
            return ANN_OK
        with self.db.snapshot() as conn:
            live = _live_count(conn, brain_id)
        if live < self.ann_min_rows:
            return ANN_NONE
        self.poke(brain_id, epoch)
        return ANN_REBUILDING

    def index_path(self, brain_id: str, epoch: int) -> Path:
        return self.vectors.directory / f"{stem(brain_id, epoch)}.faiss"

    def added(self, brain_id: str, epoch: int, first_row: int, vectors: np.ndarray) -> None:
        """A write appended these rows: grow the open index, then see if compaction is due."""
        ann = self._anns.get((brain_id, epoch))
        if ann is not None:
            for start in range(0, len(vectors), CATCH_UP_BATCH):  # searches wait one batch at most
                ann.add(first_row + start, vectors[start : start + CATCH_UP_BATCH])
        self.poke(brain_id, epoch)

    def lost(self, brain_id: str, epoch: int) -> None:
        """The brain's open index was found cut short: passed over (exact search) until rebuilt."""
        log.warning("a vector index was cut short while in use: searching exactly until it is rebuilt")
        key = (brain_id, epoch)
        with self._lock:
            self._anns.pop(key, None)
            signature = identity(self.index_path(brain_id, epoch))
            if signature is not None:
                self._unsound[key] = signature
            self._wanted.add(brain_id)

    def forget(self, brain_id: str) -> None:
        """Let go of the brain's open indexes (every epoch) and of any pending work on it."""
        with self._lock:
            for key in [k for k in self._anns if k[0] == brain_id]:
                del self._anns[key]
            self._wanted.discard(brain_id)

    @contextmanager
    def exclusive(self, brain_id: str) -> Iterator[None]:
        """Hold the brain's compaction lock (no process compacts it meanwhile), then the write
        lock; the lock file is removed before it is let go: for dropping the brain."""
        with _brain_lock(self._lock_path(brain_id), wait=True, remove=True), self.write_lock:
            yield

    def _lock_path(self, brain_id: str) -> Path:
        return self.vectors.directory / f"{stem(brain_id)}.compact.lock"

    # -- the background worker ------------------------------------------------------------

    def poke(self, brain_id: str, epoch: int) -> bool:
        """Note that the brain changed; the worker starts only for brains big enough to index.
        Whether the worker will maintain it."""
        if not self.background or self.vectors.file(brain_id, epoch).rows < self.ann_min_rows:
            return False
        with self._lock:
            self._wanted.add(brain_id)
            if self._worker is None and not self._stop.is_set():
                self._worker = threading.Thread(
                    target=self._run, name="cairn-vector-maintenance", daemon=True
                )
                self._worker.start()
            self._wake.notify()
            return not self._stop.is_set()

    def stopping(self) -> bool:
        """Whether close was asked for: long work (a postings build, a compaction) stops at its
        next step, leaving what it had not committed to the next write or start."""
        return self._stop.is_set()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._wake.notify()
            worker = self._worker
        if worker is not None:
            worker.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                while not self._wanted and not self._stop.is_set():
                    self._wake.wait()
                brains = list(self._wanted)
                self._wanted.clear()
            for brain_id in brains:
                if self._stop.is_set():
                    return
                try:
                    self._maintain(brain_id)
                except Exception:  # the next write pokes it again; searches stay exact meanwhile
                    log.exception("vector maintenance of a brain failed")

    def _maintain(self, brain_id: str) -> None:
        self.grown(brain_id)
        with self.db.snapshot() as conn:
            epoch = schema.vector_epoch(conn, brain_id)
            live = _live_count(conn, brain_id)
        file = self.vectors.file(brain_id, epoch)
        ann = self.ann(brain_id, epoch)
        if ann is not None and ann.indexed_rows < file.rows:
            first = ann.indexed_rows
            for start in range(first, file.rows, CATCH_UP_BATCH):
                rows = np.arange(start, min(start + CATCH_UP_BATCH, file.rows), dtype=np.int64)
                ann.add(start, file.read(rows))
                if self._stop.is_set():
                    return
        if self._due(file.rows, live, ann):
            self.compact(brain_id, threads=1, wait=False)

    def _due(self, rows: int, live: int, ann: BrainAnn | None) -> bool:
        dead = rows - live
        if dead >= max(self.ann_min_rows / 20, DEAD_SHARE * rows):  # 1,000 rows by default
            return True
        if live < self.ann_min_rows:
            return False
        return ann is None or ann.delta_rows + (rows - ann.indexed_rows) > max(
            self.ann_min_rows, ann.base_rows / 10
        )

    # -- compaction -----------------------------------------------------------------------

    def compact(self, brain_id: str, *, threads: int | None = None, wait: bool = True) -> Compaction | None:
        """Reclaim the brain's dead rows and rebuild its index; None if another process is
        compacting it and `wait` is False. An unknown (or dropped) brain has nothing to compact,
        and no lock file is made for it."""
        started = time.perf_counter()
        self.grown(brain_id)
        nothing = Compaction(brain_id, 0, 0, 0, 0, 0, 0.0)
        if not self._exists(brain_id):
            return nothing
        with _brain_lock(self._lock_path(brain_id), wait) as held:
            if not held:
                return None
            with self.db.snapshot() as conn:
                if schema.brain_state(conn, brain_id) is None:  # dropped meanwhile: any file of
                    return nothing  # its name is a brain's created since, not a leftover
                epoch = schema.vector_epoch(conn, brain_id)
                if vector_health.damaged(conn, brain_id, epoch):
                    return None  # its unsound rows are rebuilt first (vector_health.py)
                live = _referenced(conn, brain_id)
                sums = vector_sums.pieces(conn, brain_id, epoch)
                old = self.vectors.file(brain_id, epoch)
                rows_before = old.stored_rows()  # inside the snapshot: every row it uses is below
            self._drop_leftovers(brain_id, epoch)
            rewrite = live.size < rows_before
            target = epoch + 1 if rewrite else epoch
            current = self.ann(brain_id, epoch)
            if not rewrite and (current.base_rows if current else 0) == (
                rows_before if live.size >= self.ann_min_rows else 0
            ):
                return Compaction(
                    brain_id,
                    epoch,
                    rows_before,
                    rows_before,
                    int(live.size),
                    rows_before if current else 0,
                    time.perf_counter() - started,
                )
            if rewrite:
                try:
                    self._copy(old, live, sums, self.vectors.file(brain_id, target), self.stopping)
                except UnsoundRows as bad:
                    self._refused(brain_id, target, bad)
                    return None
                if self._stop.is_set():  # closing, the copy perhaps cut short: the next epoch's
                    return None  # files are leftovers, dropped by the next compaction
                faults.reached("compaction.copied")
            new_rows = live.size if rewrite else rows_before
            indexed = 0
            index = self.index_path(brain_id, target)
            if live.size >= self.ann_min_rows:
                matrix = self.vectors.file(brain_id, target).head(new_rows)  # build copies a slice at a time
                extend = not rewrite and current is not None and 0 < current.base_rows <= new_rows
                cores = threads or os.cpu_count() or 1
                if not build(matrix, index, threads=cores, stop=self._stop, extend=extend):
                    return None
                indexed = new_rows
            else:
                index.unlink(missing_ok=True)
                sum_path(index).unlink(missing_ok=True)
            if rewrite and self._stop.is_set():  # closing: the swap's transaction (seconds at a
                return None  # million rows) is left to the next compaction, as the copy is
            paused = time.perf_counter()
            if rewrite:  # rows written since the snapshot are in both files: counted in both
                try:
                    rows_before, rows_after = self._swap(brain_id, epoch, live)
                except UnsoundRows as bad:
                    self._refused(brain_id, target, bad)
                    return None
            else:
                rows_after = rows_before
            faults.reached("compaction.swapped")
            paused = time.perf_counter() - paused if rewrite else 0.0
            with self._lock:
                self._anns.pop((brain_id, target), None)
                for key in [k for k in self._anns if k[0] == brain_id and k[1] < target]:
                    del self._anns[key]
            if rewrite:
                self.vectors.retire(brain_id, target)
                for previous in range(target):
                    self.index_path(brain_id, previous).unlink(missing_ok=True)
                    sum_path(self.index_path(brain_id, previous)).unlink(missing_ok=True)
            return Compaction(
                brain_id,
                target,
                rows_before,
                rows_after,
                int(live.size),
                indexed,
                time.perf_counter() - started,
                paused,
            )

    @staticmethod
    def _copy(
        old: VectorFile,
        rows: Rows,
        sums: dict[int, tuple[int, int]],
        new: VectorFile,
        stop: Callable[[], bool],
    ) -> None:
        copy_checked(old, rows, sums, new, batch_rows=_COPY_ROWS, stop=stop)

    def _refused(self, brain_id: str, target: int, bad: UnsoundRows) -> None:
        """A row to copy no longer matches its sum: the new epoch's files go, the old one stays,
        and the brain's file is checked, which records the damage and tells who repairs it."""
        log.warning("%s: compaction stopped, the brain's current vectors kept", bad)
        self.vectors.forget(brain_id, target)
        self.vectors.directory.joinpath(file_name(brain_id, target)).unlink(missing_ok=True)
        self.index_path(brain_id, target).unlink(missing_ok=True)
        sum_path(self.index_path(brain_id, target)).unlink(missing_ok=True)
        self.damaged(brain_id)

    def _swap(self, brain_id: str, epoch: int, live: Rows) -> tuple[int, int]:
        """Commit the move of the rows in `live` to rows 0..n-1 of the next epoch, after copying
        the rows written since the copy was taken; returns the old file's row count then and the
        new file's. Every row a committed chunk uses is below the first (rows are appended before
        their chunks commit), so their difference is what the switch reclaimed."""
        new = self.vectors.file(brain_id, epoch + 1)
        with self.write_lock:
            with self.db.transaction(long=True) as conn:  # other processes' writers wait for it
                if schema.vector_epoch(conn, brain_id) != epoch:
                    raise RuntimeError("the brain was compacted by another process meanwhile")
                state = schema.brain_state(conn, brain_id)
                assert state is not None
                extra = np.setdiff1d(_referenced(conn, brain_id), live, assume_unique=True)
                rows_before = self.vectors.file(brain_id, epoch).stored_rows()
                if extra.size:  # checked against the sums as they are now, as the rest was
                    sums = vector_sums.pieces(conn, brain_id, epoch)
                    copy_checked(self.vectors.file(brain_id, epoch), extra, sums, new, batch_rows=_COPY_ROWS)
                sources = np.concatenate([live, extra])
                moves = np.full(int(sources.max()) + 1 if sources.size else 0, -1, dtype=np.int64)
                moves[sources] = np.arange(sources.size, dtype=np.int64)
                conn.execute(_MOVES)
                conn.execute("DELETE FROM vec_moves")
                conn.execute(
                    "INSERT INTO vec_moves SELECT key, value FROM json_each(?) WHERE value >= 0",
                    (json.dumps(moves.tolist()),),
                )
                for table in ("chunks", "chunk_tags", "chunk_facets"):
                    conn.execute(
                        f"UPDATE {table} SET vec_row = m.new FROM vec_moves m "
                        f"WHERE {table}.brain_id = ? AND m.old = {table}.vec_row",
                        (brain_id,),
                    )
                conn.execute("DELETE FROM vec_moves")
                conn.execute(
                    "UPDATE brain_state SET vec_epoch = ?, generation = generation + 1 WHERE brain_id = ?",
                    (epoch + 1, brain_id),
                )
                fts_postings_build.text_untouched(conn, schema.fts_table(state[0]), state[1])
                vector_sums.forget(conn, brain_id, below_epoch=epoch + 1)
                vector_health.forget(conn, brain_id, below_epoch=epoch + 1)
                vector_sums.extend(conn, brain_id, epoch + 1, new, int(sources.size))
            self.swapped(brain_id, state[1], epoch + 1, sources)  # after the commit
        return rows_before, int(sources.size)

    def _exists(self, brain_id: str) -> bool:
        with self.db.snapshot() as conn:
            return schema.brain_state(conn, brain_id) is not None

    def _drop_leftovers(self, brain_id: str, epoch: int) -> None:
        """Files of other epochs than the committed one are what a compaction left: of a later
        one, a compaction that stopped before its commit; of an earlier one, one that stopped
        after it, before deleting them (they still hold the rows it reclaimed)."""
        for path, other in self.vectors.files_of(brain_id).items():
            if other != epoch:
                self.vectors.forget(brain_id, other)
                path.unlink(missing_ok=True)


def _referenced(conn: sqlite3.Connection, brain_id: str) -> Rows:
    """The brain's vector rows its chunks use, ascending."""
    rows = conn.execute("SELECT vec_row FROM chunks WHERE brain_id = ?", (brain_id,))
    return np.unique(np.fromiter((r[0] for r in rows), dtype=np.int64))


def _live_count(conn: sqlite3.Connection, brain_id: str) -> int:
    return int(conn.execute("SELECT count(*) FROM chunks WHERE brain_id = ?", (brain_id,)).fetchone()[0])


@contextmanager
def _brain_lock(path: Path, wait: bool, *, remove: bool = False) -> Iterator[bool]:
    """Lock the file at `path` (True), or yield False when another holds it and `wait` is False.
    With `remove` the file is deleted before the lock is let go; whoever got the lock of a file
    deleted meanwhile locks the one now at the path instead."""
    while True:
        with path.open("a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            if not _same_file(fh.fileno(), path):
                continue
            try:
                yield True
            finally:
                if remove:
                    path.unlink(missing_ok=True)
                fcntl.flock(fh, fcntl.LOCK_UN)
            return


def _same_file(fd: int, path: Path) -> bool:
    try:
        found = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (found.st_dev, found.st_ino)
