"""How long each long write transaction of the embedded ChunkIndex holds SQLite's writer lock.

A writer in another process waits for that lock; past its busy timeout (30 s) it waits on only
while the holder shows progress (adapters/local/upgrade_wait.py, `transaction(long=True)`). This
builds one brain of synthetic chunks as bench/chunk_index_100k.py does (or reuses `--store`),
then, each on a fresh copy of the store, times every write transaction of: rebuilding the
brain's keyword index, compacting it with a fifth of its chunks deleted (the final transaction),
scrubbing it after that delete (its compaction, then the purge of its text and free pages),
discarding its chunks on vector rows found unsound (all of them, and a tenth), dropping it, and
making its term postings (a brain from before they existed, on its first search), and a write of
one chunk that carries it past the size that has term postings (run it on a store of `--chunks
20000`, which has none yet), without and with the maintenance worker (which then makes them: the
write's whole time is what its caller waits), and with the worker closing the index a second
after that write (how long close waits for the worker's build), and with the worker's build closed a
second into it CLOSES times (opened again each time) then let finish, against one never closed
(the rows it tokenized and its CPU in all: a build goes on from where a close stopped it). Each
line gives the longest transaction of the operation, whether it shows progress, its first
transaction (the write's own, for a write) and the operation's time.

    .venv/bin/python bench/writer_lock_100k.py                      # 100k chunks
    .venv/bin/python bench/writer_lock_100k.py --store DIR          # reuse (or keep) the built store
    .venv/bin/python bench/writer_lock_100k.py --case drop --case scrub   # some operations only
    .venv/bin/python bench/writer_lock_100k.py --chunks 20000 --store DIR20K --case "past the size"
    .venv/bin/python bench/writer_lock_100k.py --chunks 20000 --store DIR20K --case "postings build"
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.domain.models import Chunk
from chunk_index_100k import BRAIN, Corpus, build, unit_vectors

HELD: list[tuple[float, bool]] = []  # each transaction's hold of the lock, and whether it was long
_transaction = ThreadConnections.transaction


@contextmanager
def _timed_transaction(
    self: ThreadConnections, *, zero_freed: bool = False, long: bool = False
) -> Iterator[sqlite3.Connection]:
    with _transaction(self, zero_freed=zero_freed, long=long) as conn:
        started = time.perf_counter()  # BEGIN IMMEDIATE has taken the lock
        try:
            yield conn
        finally:
            HELD.append((time.perf_counter() - started, long))


def _copy(store: Path, into: Path, dim: int, background: bool) -> SqliteChunkIndex:
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(store, into)
    return SqliteChunkIndex(into / "chunks.db", into / "vectors", dim, background_maintenance=background)


def _delete_fifth(index: SqliteChunkIndex) -> None:
    """Every fifth chunk's document (a fifth of the chunks), a thousand chunks a transaction."""
    with sqlite3.connect(index._db.db_path) as conn:
        ids = [
            row[0] for row in conn.execute("SELECT id FROM chunks WHERE brain_id = ? ORDER BY id", (BRAIN,))
        ]
    gone = ids[: len(ids) // 5]
    for start in range(0, len(gone), 1000):
        index.delete_chunks(BRAIN, gone[start : start + 1000])


def _mark_unsound(into: Path, index: SqliteChunkIndex, share: float) -> None:
    rows = index.count(BRAIN)
    with sqlite3.connect(into / "chunks.db") as conn:
        epoch = schema.vector_epoch(conn, BRAIN)
        conn.execute(
            "INSERT INTO vector_damage (brain_id, epoch, low, high) VALUES (?, ?, 0, ?)",
            (BRAIN, epoch, int(rows * share)),
        )


def _without_postings(into: Path) -> None:
    with sqlite3.connect(into / "chunks.db") as conn:
        fts_postings.drop(conn, schema.fts_table(conn.execute("SELECT seq FROM brain_state").fetchone()[0]))


def _one_more(index: SqliteChunkIndex) -> None:
    dim = index.dimension
    note = Chunk(
        id="chk_one_more",
        brain_id=BRAIN,
        document_id="doc_one_more",
        path="one/more.md",
        ordinal=0,
        text="one more note, the first past the size: the heron waits by the reeds",
        title="one more",
        created_at=datetime.now(UTC),
    )
    index.upsert([note], unit_vectors(np.random.default_rng(1), 1, dim))


def _close_mid_build(index: SqliteChunkIndex) -> None:
    """The write that hands the worker the postings build, then close a second into it: how long
    close takes, and whether the postings were left for the next start (rolled back) or made."""
    _one_more(index)
    time.sleep(1.0)
    started = time.perf_counter()
    index.close()
    spent = time.perf_counter() - started
    with sqlite3.connect(index.db_path) as conn:
        table = schema.fts_table(conn.execute("SELECT seq FROM brain_state").fetchone()[0])
        made = fts_postings.exists(conn, table)
    print(f"  close took {spent:.2f} s; term postings {'made' if made else 'left for the next start'}")


class _CountedRows:
    """Stands in for fts_postings.TOKENS: counts the rows a postings build (or write) tokenizes."""

    def __init__(self, real: object) -> None:
        self.real, self.rows = real, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def postings(self, rows: list[object], *args: object) -> object:
        self.rows += len(rows)
        return self.real.postings(rows, *args)  # type: ignore[attr-defined]


def _timed_build(index: SqliteChunkIndex, cpu: list[float]) -> threading.Event:
    """The worker's postings build of `index` timed (its thread's CPU added to `cpu`); set once it
    returns."""
    build, done = index._build_postings, threading.Event()

    def timed(brain_id: str) -> None:
        started = time.thread_time()
        try:
            build(brain_id)
        finally:
            cpu.append(time.thread_time() - started)
            done.set()

    index._maintenance.grown = timed
    return done


CLOSES = 3  # how often the "closed ... times" case closes the index a second into the build


def _closed_times(closes: int) -> Callable[[SqliteChunkIndex], object]:
    """The write that hands the worker the postings build, the index closed a second into the
    build `closes` times (opened again each time, as a stdio server is for each session, the
    worker woken as a search wakes it), then left to finish it: the rows tokenized and the CPU
    time of the build's thread, in all. closes=0 is the build never closed."""

    def run(index: SqliteChunkIndex) -> None:
        counted = _CountedRows(fts_postings.TOKENS)
        setattr(fts_postings, "TOKENS", counted)  # noqa: B010 (counting only)
        cpu: list[float] = []
        try:
            for attempt in range(closes + 1):
                if attempt:
                    index = SqliteChunkIndex(index.db_path, index.db_path.parent / "vectors", index.dimension)
                done = _timed_build(index, cpu)
                if attempt:
                    with index._db.snapshot() as conn:
                        index._maintenance.poke(BRAIN, schema.vector_epoch(conn, BRAIN))
                else:
                    _one_more(index)
                if attempt < closes:
                    time.sleep(1.0)
                else:
                    done.wait(600)
                index.close()
                done.wait(60)
            with sqlite3.connect(index.db_path) as conn:
                table = schema.fts_table(conn.execute("SELECT seq FROM brain_state").fetchone()[0])
                made = fts_postings.exists(conn, table)
        finally:
            setattr(fts_postings, "TOKENS", counted.real)  # noqa: B010
        print(
            f"  closed {closes} times: {counted.rows:,} rows tokenized, {sum(cpu):.2f} s of the build's CPU "
            f"({len(cpu)} runs); term postings {'made' if made else 'NOT made'}"
        )

    return run


def measure(
    label: str,
    store: Path,
    into: Path,
    dim: int,
    run: Callable[[SqliteChunkIndex], object],
    prepare: Callable[[SqliteChunkIndex], object] | None = None,
    background: bool = False,
) -> None:
    index = _copy(store, into, dim, background)
    try:
        if prepare is not None:
            prepare(index)
        HELD.clear()
        started = time.perf_counter()
        run(index)
        spent = time.perf_counter() - started
        if not HELD:  # e.g. postings asked of a brain not past the size: nothing to make
            print(f"{label}: no write transaction; whole {spent:.2f} s", flush=True)
            return
        longest = max(HELD)
        print(
            f"{label}: lock held {longest[0]:.2f} s at most ({len(HELD)} transactions, "
            f"{'shows' if longest[1] else 'shows no'} progress; the first {HELD[0][0]:.2f} s); "
            f"whole {spent:.2f} s",
            flush=True,
        )
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--case", action="append", help="only the operations whose name holds this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        store = args.store or Path(name) / "store"
        if not (store / "chunks.db").exists():
            store.mkdir(parents=True, exist_ok=True)
            index = SqliteChunkIndex(
                store / "chunks.db", store / "vectors", args.dim, background_maintenance=False
            )
            spent = build(index, Corpus(np.random.default_rng(7)), args.chunks, args.dim)
            print(f"built {args.chunks:,} chunks in {spent:.1f} s", flush=True)
            index.close()
        setattr(ThreadConnections, "transaction", _timed_transaction)  # noqa: B010 (timing only)
        copy = Path(name) / "copy"
        cases: dict[
            str, tuple[Callable[[SqliteChunkIndex], object], Callable[[SqliteChunkIndex], object] | None]
        ] = {
            "rebuild keywords": (lambda i: i.rebuild_keywords(BRAIN), None),
            "compaction, a fifth deleted": (lambda i: i.compact(BRAIN), _delete_fifth),
            "scrub, a fifth deleted": (lambda i: i.scrub(BRAIN), _delete_fifth),
            "discard unsound, every row": (
                lambda i: i.discard_unsound(BRAIN),
                lambda i: _mark_unsound(copy, i, 1.0),
            ),
            "discard unsound, a tenth of the rows": (
                lambda i: i.discard_unsound(BRAIN),
                lambda i: _mark_unsound(copy, i, 0.1),
            ),
            "drop brain": (lambda i: i.drop_brain(BRAIN), None),
            "term postings made": (lambda i: i._ensure_postings(BRAIN), lambda i: _without_postings(copy)),
            "a write carrying the brain past the size (its term postings made)": (
                _one_more,
                lambda i: _without_postings(copy),
            ),
            "a write carrying the brain past the size, the maintenance worker running": (
                _one_more,
                lambda i: _without_postings(copy),
            ),
            "close a second after a write carried the brain past the size, the maintenance worker running": (
                _close_mid_build,
                lambda i: _without_postings(copy),
            ),
            "a postings build never closed, the maintenance worker running": (
                _closed_times(0),
                lambda i: _without_postings(copy),
            ),
            f"a postings build closed {CLOSES} times, then let finish, the maintenance worker running": (
                _closed_times(CLOSES),
                lambda i: _without_postings(copy),
            ),
        }
        for label, (run, prepare) in cases.items():
            if not args.case or any(word in label for word in args.case):
                measure(label, store, copy, args.dim, run, prepare, background="worker" in label)


if __name__ == "__main__":
    main()
