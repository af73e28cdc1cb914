"""What checking a brain's keyword index costs, and rebuilding it (adapters/local/fts_health.py).

Builds one brain of synthetic chunks as bench/chunk_index_100k.py does (or reuses `--store`),
then times the cheap probe every check runs, the deep check (`cairn check --deep`: FTS5's
`integrity-check` and the term postings against FTS5's row counts) and, on a copy whose `_data`
table was dropped, the rebuild that `cairn check` runs; and a process's first keyword search of
the brain, which runs the cheap probe first (adapters/local/fts_damage.py), against its next;
and the same for a process's first write (its read of the document's fingerprints before its
commit), in a process that has not checked the brain and in one whose start has (`cairn serve`
and `cairn mcp` compare every brain first, IndexRepair.at_start).

    .venv/bin/python bench/keyword_check_100k.py                  # 100k chunks
    .venv/bin/python bench/keyword_check_100k.py --store DIR      # reuse (or keep) the built store
    .venv/bin/python bench/keyword_check_100k.py --store DIR --first-only  # first search, first write
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_health
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from chunk_index_100k import BRAIN, Corpus, build


def timed(label: str, run: object) -> None:
    assert callable(run)
    spent = []
    for _ in range(3):
        started = time.perf_counter()
        found = run()
        spent.append(time.perf_counter() - started)
    print(f"{label}: {min(spent) * 1000:.1f} ms (best of 3; found {found!r})")


def first_searches(db: Path, store: Path, dim: int) -> None:
    """A process's first keyword search of the brain (which probes its keyword index first,
    fts_damage.py) against its next ones, each in a newly opened index."""
    words = Corpus(np.random.default_rng(7)).words
    text = f"{words[150]} {words[400]}"  # content words past the stopwords
    query = ChunkQuery(text=text, vector=None, filter=ChunkFilter((BRAIN,)), top_k=10)
    first, next_ = [], []
    for _ in range(3):
        index = SqliteChunkIndex(db, store / "vectors", dim, background_maintenance=False)
        started = time.perf_counter()
        index.search(query)
        first.append(time.perf_counter() - started)
        started = time.perf_counter()
        index.search(query)
        next_.append(time.perf_counter() - started)
        index.close()
    print(f"first keyword search of a process: {min(first) * 1000:.1f} ms, next: {min(next_) * 1000:.1f} ms")


def first_writes(db: Path, store: Path, dim: int) -> None:
    """A process's first write to the brain reads the document's fingerprints before its commit,
    which checks the keyword index as a first search does (fts_damage.py): timed against the
    next write's read, in a newly opened index, and in one that checked the brain first."""
    for label, start_check in (("no start check", False), ("after a start's check", True)):
        first, next_ = [], []
        for _ in range(3):
            index = SqliteChunkIndex(db, store / "vectors", dim, background_maintenance=False)
            if start_check:
                index.check(BRAIN, reread=False)
            started = time.perf_counter()
            index.fingerprints(BRAIN, "doc-new")
            first.append(time.perf_counter() - started)
            started = time.perf_counter()
            index.fingerprints(BRAIN, "doc-new")
            next_.append(time.perf_counter() - started)
            index.close()
        print(
            f"first write of a process ({label}): fingerprints read {min(first) * 1000:.1f} ms, "
            f"next: {min(next_) * 1000:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--first-only", action="store_true", help="only a process's first search and write")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        store = args.store or Path(name) / "store"
        db = store / "chunks.db"
        if not db.exists():
            store.mkdir(parents=True, exist_ok=True)
            index = SqliteChunkIndex(db, store / "vectors", args.dim, background_maintenance=False)
            spent = build(index, Corpus(np.random.default_rng(7)), args.chunks, args.dim)
            print(f"built {args.chunks:,} chunks in {spent:.1f} s")
            index.close()
        if args.first_only:
            first_searches(db, store, args.dim)
            first_writes(db, store, args.dim)
            return
        conn = sqlite3.connect(db)
        conn.execute("SELECT count(*) FROM chunks").fetchone()  # warm, as a serving process is
        timed("cheap probe (every check)", lambda: fts_health.problem(conn, BRAIN))
        timed(
            "cheap probe, a first read or write's (no scan of _content)",
            lambda: fts_health.problem(conn, BRAIN, whole_content=False),
        )
        timed("deep check (--deep)", lambda: fts_health.problem(conn, BRAIN, deep=True))
        table = schema.fts_table(conn.execute("SELECT seq FROM brain_state").fetchone()[0])
        timed(
            "FTS5 integrity-check alone",
            lambda: conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')").fetchall(),
        )
        conn.close()
        first_searches(db, store, args.dim)
        first_writes(db, store, args.dim)
        damaged = Path(name) / "damaged"
        shutil.copytree(store, damaged)
        with sqlite3.connect(damaged / "chunks.db") as dropped:
            dropped.execute(f"DROP TABLE {table}_data")
        index = SqliteChunkIndex(
            damaged / "chunks.db", damaged / "vectors", args.dim, background_maintenance=False
        )
        print(f"damaged: {index.check(BRAIN).keywords}")
        started = time.perf_counter()
        lost = index.rebuild_keywords(BRAIN)
        print(f"rebuild: {time.perf_counter() - started:.1f} s ({len(lost)} documents lost)")
        print(f"afterwards: {index.check(BRAIN, deep=True).keywords or 'sound'}")
        index.close()


if __name__ == "__main__":
    main()
