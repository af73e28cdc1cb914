"""Embedded ChunkIndex: SQLite FTS5 BM25 + vector search, fused by weighted RRF (chunk_search.py).

Chunks live in SQLite (WAL, one connection per thread): filter fields in `chunks` (tags and
facets also one row each in `chunk_tags` / `chunk_facets`), title and text in the brain's own
FTS5 table; vectors in one append-only float32 file per brain (vector_store.py), indexed by an
HNSW graph once the brain is big enough (ann_index.py, vector_compaction.py). An unfiltered
search takes its rows from a per-brain cache revalidated by `brain_state.generation`
(cached_rows.py), so it runs no SQL for them beyond that lookup.

Erasure: `drop_brain` removes a brain's rows, tables and files (a search whose snapshot predates
it skips that brain's vector leg); `scrub` wipes what deletes left behind (brain_erasure.py).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

from cairn import faults
from cairn.adapters.local import (
    brain_erasure,
    fts_damage,
    fts_health,
    fts_postings,
    fts_postings_build,
    fts_retokenize,
    fts_search,
    fts_tag_words,
    page_cache,
    vector_checkpoint,
    vector_health,
    vector_store,
    vector_sums,
)
from cairn.adapters.local import chunk_reads as reads
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local.cached_counts import CachedCounts
from cairn.adapters.local.cached_rows import CachedRows
from cairn.adapters.local.chunk_search import ChunkSearch
from cairn.adapters.local.chunk_writes import Delta, WriteBatch
from cairn.adapters.local.kept_vector_rows import kept_rows
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.adapters.local.upgrade_wait import OpeningWait
from cairn.adapters.local.vector_compaction import ANN_MIN_ROWS, VectorMaintenance
from cairn.adapters.local.vector_store import Rows, VectorStore, unit_rows
from cairn.domain.errors import CairnError, DamagedStore, InvalidInput, Unavailable
from cairn.domain.models import Chunk
from cairn.ports.chunks import (
    CheckStopped,
    ChunkHit,
    ChunkQuery,
    Compaction,
    Discarded,
    FileCheck,
    Stop,
)
from cairn.ports.embedder import Vectors

# bm25() column weights (title, text, context). On LoCoMo, whose titles only repeat the speaker and
# date, title weight 0 / 1 / 2 / 3 all gave the BM25 leg recall@10 0.647; a document's title usually
# names its subject, so it gets a mild boost. Context (a sibling's excerpt, services/documents/siblings.py)
# is weighted 0.5: on LoCoMo dev, weights 0.2 / 0.3 / 0.5 / 1.0 / 1.5 gave hybrid recall@10
# .746 / .756 / .764 / .742 / .718.
DEFAULT_BM25_WEIGHTS = (2.0, 1.0, 0.5)
# At most this many allowed rows: score them exactly rather than through the graph (2.6 ms p50 /
# 10.8 ms p95 at 1 % of a million rows, where the filtered graph finds 0.86 of the top 10).
EXACT_MAX_ROWS = 10_000
_DOCUMENT = "brain_id = ? AND document_id = ?"
# The brain's chunks of these ids (the ids' JSON, then the brain id, then what `{}` adds), each
# id sought: given `brain_id = ? AND id IN (...)`, SQLite read every chunk of the brain (with
# `active = 0`, every staged one, other uploads in flight included).
_BY_IDS = (
    "rowid IN (SELECT c.rowid FROM json_each(?) j CROSS JOIN chunks c ON c.id = j.value "
    "WHERE c.brain_id = ?{})"
)
log = logging.getLogger(__name__)
T = TypeVar("T")


class SqliteChunkIndex:
    def __init__(
        self,
        db_path: Path,
        vectors_dir: Path,
        dimension: int,
        *,
        bm25_weights: tuple[float, float, float] = DEFAULT_BM25_WEIGHTS,
        ann_min_rows: int = ANN_MIN_ROWS,
        exact_max_rows: int = EXACT_MAX_ROWS,
        background_maintenance: bool = True,
    ) -> None:
        if dimension <= 0:
            raise ValueError("dimension must be positive")
        self.db_path = db_path
        self.dimension = dimension
        self.bm25_weights = bm25_weights
        self._vectors = VectorStore(vectors_dir, dimension)
        waits = OpeningWait(db_path)
        self._db = ThreadConnections(db_path, secure_delete=True, waits=waits, store="the chunk index")
        self._write_lock = threading.Lock()
        self._cache = CachedRows()
        self._counts = CachedCounts()
        self._db.get().executescript(
            schema.SCHEMA
            + vector_sums.SCHEMA
            + vector_health.SCHEMA
            + vector_checkpoint.SCHEMA
            + fts_tag_words.SCHEMA
        )
        # Another process upgrading the file is waited for as long as it progresses (upgrade_wait.py).
        with self._db.opening(waits):
            with self._db.transaction() as conn:  # the writer lock: one process migrates
                schema.migrate(conn)
                fts_tag_words.backfill(conn)
            fts_retokenize.upgrade(self._db)  # a transaction per brain: each can take seconds
        self._maintenance = VectorMaintenance(
            self._db,
            self._vectors,
            self._write_lock,
            self._swapped,
            grown=self._build_postings,
            damaged=lambda brain_id: self._health.check(brain_id),
            ann_min_rows=ann_min_rows,
            background=background_maintenance,
        )
        self._health = vector_health.FileHealth(self._db, self._vectors, self._write_lock, self._maintenance)
        self._keywords = fts_damage.KeywordHealth(self._health.tell, self._db)
        self._searcher = ChunkSearch(
            self._db,
            self._vectors,
            self._cache,
            self._health,
            self._keywords,
            self._maintenance,
            dimension=dimension,
            bm25_weights=bm25_weights,
            exact_max_rows=exact_max_rows,
            forget=self._forget,
        )

    @property
    def exact_max_rows(self) -> int:
        """At most this many allowed rows of a brain: scored exactly rather than through its graph."""
        return self._searcher.exact_max_rows

    @exact_max_rows.setter
    def exact_max_rows(self, value: int) -> None:
        self._searcher.exact_max_rows = value

    # -- writes -------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        if not chunks:
            return
        matrix = unit_rows(vectors)
        if matrix.shape != (len(chunks), self.dimension) or not np.isfinite(matrix).all():
            raise InvalidInput(f"expected {len(chunks)} finite vectors of dimension {self.dimension}")
        by_brain: dict[str, list[int]] = {}
        for index, chunk in enumerate(chunks):
            by_brain.setdefault(chunk.brain_id, []).append(index)
        with self._write_lock:
            vec_rows = np.empty(len(chunks), dtype=np.int64)
            appended: dict[str, tuple[int, list[int]]] = {}  # brain -> (epoch, indexes appended)
            with self._keywords.writing(self._db, by_brain), self._db.transaction() as conn:
                batch = WriteBatch(conn)
                for brain_id, indexes in by_brain.items():
                    batch.ensure_brain(brain_id)
                    # Inside the transaction, so compaction cannot renumber the file meanwhile;
                    # a crash before the commit leaves only unreferenced rows behind.
                    epoch = schema.vector_epoch(conn, brain_id)
                    file = self._vectors.file(brain_id, epoch)
                    ids = [chunks[i].id for i in indexes]
                    kept = vec_rows[indexes] = kept_rows(conn, brain_id, epoch, file, ids, matrix[indexes])
                    fresh = [i for i, row in zip(indexes, kept.tolist(), strict=True) if row < 0]
                    if not fresh:
                        continue
                    floor = self._health.floor(conn, brain_id, epoch)
                    verified = self._health.verified(conn, brain_id, epoch)
                    rows = vec_rows[fresh] = file.append(matrix[fresh], floor=floor)
                    vector_sums.extend(conn, brain_id, epoch, file, int(rows[-1]) + 1)
                    self._health.appended(conn, brain_id, epoch, verified)
                    appended[brain_id] = (epoch, fresh)
                faults.reached("chunks.vectors_appended")
                for chunk, vec_row in zip(chunks, vec_rows.tolist(), strict=True):
                    batch.remove("id = ?", (chunk.id,))
                    batch.insert(chunk, vec_row)
                deltas = batch.finish()
            self._apply(deltas)
            for brain_id, (epoch, fresh) in appended.items():
                self._maintenance.added(brain_id, epoch, int(vec_rows[fresh[0]]), matrix[fresh])
        self._grown(deltas)

    def set_context(self, brain_id: str, document_id: str, context: str) -> None:
        with self._write_lock, self._keywords.writing(self._db, [brain_id]), self._db.transaction() as conn:
            state = schema.brain_state(conn, brain_id)
            if state is None:
                return
            table = schema.fts_table(state[0])
            rows = conn.execute(
                f"SELECT f.rowid, f.title, f.text, f.context FROM chunks c CROSS JOIN {table} f "
                "ON f.rowid = c.rowid WHERE c.brain_id = ? AND c.document_id = ? AND c.ordinal = 0",
                (brain_id, document_id),
            ).fetchall()
            postings = fts_postings_build.writer(conn, table, state[1])  # no generation moves here
            for rowid, title, text, old in rows:
                conn.execute(f"UPDATE {table} SET context = ? WHERE rowid = ?", (context, rowid))
                if postings is not None:
                    postings.replace(rowid, (title, text, old), (title, text, context))
            if postings is not None:
                postings.apply(conn)

    def delete_document(self, brain_id: str, document_id: str) -> int:
        return self._write(brain_id, lambda batch: batch.remove(_DOCUMENT, (brain_id, document_id)))

    def activate(self, brain_id: str, document_id: str, chunk_ids: Sequence[str]) -> None:
        ids = json.dumps(list(chunk_ids))
        params = (brain_id, document_id, ids)

        def work(batch: WriteBatch) -> None:
            batch.activate(_BY_IDS.format(" AND c.document_id = ?"), (ids, brain_id, document_id))
            batch.remove(f"{_DOCUMENT} AND id NOT IN (SELECT value FROM json_each(?))", params)

        self._write(brain_id, work)

    def delete_chunks(self, brain_id: str, chunk_ids: Sequence[str]) -> int:
        ids = json.dumps(list(chunk_ids))
        return self._write(brain_id, lambda batch: batch.remove(_BY_IDS.format(""), (ids, brain_id)))

    def drop_brain(self, brain_id: str) -> int:
        """Under the brain's compaction lock and the write lock: its files are listed inside the
        transaction (no writer can add one then) and deleted after the commit, which is safe as a
        brain created meanwhile starts at later epochs (chunk_schema.py), never at theirs."""
        with self._maintenance.exclusive(brain_id):
            with self._db.transaction(long=True) as conn:  # other processes' writers wait for it
                files = self._vectors.files_of(brain_id)
                removed = brain_erasure.drop_rows(conn, brain_id, max(files.values(), default=-1))
                vector_sums.forget(conn, brain_id)
                vector_health.forget(conn, brain_id)
            for path in files:
                path.unlink(missing_ok=True)
            self._forget(brain_id)
        return removed

    def scrub(self, brain_id: str) -> None:
        """Compact the brain's vectors however few rows are dead (live rows only in the new file
        and ANN index, the old epoch's files deleted), purge its full-text index and the free
        pages (brain_erasure.py), then truncate the WAL, which holds pages as they were. Raises
        DamagedStore if the brain's vector file is damaged (compaction copies no damaged row), and
        CairnError if the index closed meanwhile or readers kept the WAL busy (retry later)."""
        if self._maintenance.compact(brain_id) is None:
            if self.vectors_damaged(brain_id):
                raise DamagedStore(
                    "the brain's vector file is damaged, so its vectors could not be compacted: run "
                    "`cairn check` to rebuild what it lost, then try again"
                )
            raise CairnError("the chunk index closed before the brain's vectors were compacted")
        with self._write_lock, self._db.transaction(zero_freed=True, long=True) as conn:
            brain_erasure.purge_text(conn, brain_id)
            brain_erasure.wipe_free_pages(conn)
        busy, _, _ = self._db.get().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise CairnError("the chunk index is busy: its write-ahead log could not be emptied")

    def _forget(self, brain_id: str) -> None:
        """Let go of everything kept in memory of a dropped brain."""
        self._cache.forget(brain_id)
        self._keywords.forget(brain_id)
        self._health.forget(brain_id)
        self._maintenance.forget(brain_id)
        self._vectors.forget_brain(brain_id)

    def _write(self, brain_id: str, work: Callable[[WriteBatch], T]) -> T:
        """Run `work` on the brain's rows in one write transaction, then bring the cached rows up
        to date."""
        with self._write_lock:
            with self._keywords.writing(self._db, [brain_id]), self._db.transaction() as conn:
                batch = WriteBatch(conn)
                result = work(batch)
                deltas = batch.finish()
            self._apply(deltas)
        self._grown(deltas)
        return result

    def _apply(self, deltas: dict[str, Delta]) -> None:
        """After a commit: derive each touched brain's next cached rows from its change."""
        for brain_id, delta in deltas.items():
            self._maintenance.poke(brain_id, delta.epoch)
            self._cache.applied(brain_id, delta)

    def _swapped(self, brain_id: str, before: int, epoch: int, sources: Rows) -> None:
        """Compaction renumbered the brain's rows: move the cached rows along with them."""
        self._cache.swapped(brain_id, before, sources)

    def _grown(self, deltas: dict[str, Delta]) -> None:
        """After a write's commit: make the term postings of each brain it carried past
        fts_search.SMALL_TABLE rows. The maintenance worker makes them when it keeps the brain
        (it is as big), so the write's caller does not wait the seconds they take at that size;
        without a worker, the caller makes them. In a transaction of their own, which shows its
        progress to the other processes' writers, so the write is stored and searchable (its
        keyword leg ranked by FTS5, as exact) before."""
        for brain_id, delta in deltas.items():
            if delta.unposted and not self._maintenance.poke(brain_id, delta.epoch):
                self._build_postings(brain_id)

    def _build_postings(self, brain_id: str) -> None:
        try:
            with self._keywords.writing(self._db, [brain_id]):
                self._ensure_postings(brain_id)
        except Unavailable as exc:  # the write is done and found: only its ranking's speed waits
            log.warning("term postings of a brain left for its next write: %s", exc.message)
        except fts_damage.KeywordsDamaged as exc:
            # recorded, and said where searches meet it; not the write's failure
            log.warning("term postings of a brain left until its keyword index is rebuilt: %s", exc.message)
        except fts_postings.BuildStopped:  # its next write or search after a start goes on with them
            log.info("term postings of a brain left part made: the chunk index is closing")

    def _ensure_postings(self, brain_id: str) -> None:
        """Give a brain past fts_search.SMALL_TABLE rows its term postings: one a write carried past
        that size (`_grown`), or one made before term postings existed (the maintenance worker)."""
        with self._db.snapshot() as conn:
            state = schema.brain_state(conn, brain_id)
            if state is None:
                return
            table = schema.fts_table(state[0])
            if (
                fts_postings.exists(conn, table)
                or fts_postings.averages(conn, table)[0] <= fts_search.SMALL_TABLE
            ):
                return
        fts_postings_build.build(self._db, self._write_lock, brain_id, stop=self._maintenance.stopping)

    # -- the files' health (vector_health.py) -------------------------------------------------

    def check(
        self, brain_id: str, *, deep: bool = False, reread: bool = True, stop: Stop | None = None
    ) -> FileCheck:
        """Re-read the brain's vector file against its sums and its chunks; record what is unsound
        (its vector search answers IndexDamaged until `discard_unsound`), check its ANN index
        (a damaged one is set aside: exact search until compaction builds it again), and whether
        its keyword index can be read (fts_health.py; with `deep`, FTS5's integrity check too).
        `reread` False: a vector file as last verified is not read again (vector_checkpoint.py).
        CheckStopped when `stop` says so while the vector file is read (nothing recorded)."""
        files = self._health.check(brain_id, reread=reread, stop=stop)
        with self._db.snapshot() as conn:
            keywords = fts_health.problem(conn, brain_id, deep=deep)
        self._keywords.checked(brain_id, keywords)  # a start's check: the first write need not probe
        return replace(files, keywords=keywords)

    def rebuild_keywords(self, brain_id: str) -> dict[str, Discarded]:
        """Make the brain's FTS5 table and term postings again, in one write transaction."""
        with self._write_lock:
            with self._db.transaction(long=True) as conn:  # other processes' writers wait for it
                lost = fts_health.rebuild(conn, brain_id)[1]
            self._cache.forget(brain_id)
        return lost

    def on_damage(self, listener: Callable[[str], None]) -> None:
        self._health.listeners.append(listener)

    def discard_unsound(self, brain_id: str) -> dict[str, Discarded]:
        """Remove the chunks whose vectors were found unsound; document id -> what was removed
        (the caller indexes those documents again)."""
        with self._write_lock:
            with self._db.transaction(long=True) as conn:
                batch = WriteBatch(conn)
                removed = self._health.discard(conn, brain_id, batch)
                deltas = batch.finish()
            self._apply(deltas)
        self._grown(deltas)
        return removed

    def compact(self, brain_id: str, *, threads: int | None = None) -> Compaction | None:
        """Reclaim the brain's dead vector rows and rebuild its ANN index now."""
        return self._maintenance.compact(brain_id, threads=threads)

    def vectors_damaged(self, brain_id: str) -> bool:
        with self._db.snapshot() as conn:
            return vector_health.damaged(conn, brain_id, schema.vector_epoch(conn, brain_id))

    def warm(self, stop: Stop | None = None) -> None:
        """Read the files of every brain that has an index through the page cache (page_cache.py),
        then check each brain's vector file in full (what a start-up's check passed over when the
        file was as last verified: a disk changes bytes with no write), open the index and load
        the rows of each, so the first searches of a big brain after a start do not pay for them
        (run in a background thread). Ends early, recording nothing of the brain under way, when
        `stop` says the process is stopping."""
        brain_ids = self.brain_ids()
        with self._db.snapshot() as conn:
            keys = [(brain_id, schema.vector_epoch(conn, brain_id)) for brain_id in brain_ids]
        indexes = [(key, path) for key in keys if (path := self._maintenance.index_path(*key)).exists()]
        if indexes:
            files = [path for _, path in indexes] + [self._vectors.file(*key).path for key, _ in indexes]
            left = page_cache.memory_budget() - page_cache.read_through(files, page_cache.memory_budget())
            page_cache.read_database(self._db.get(), left)  # never through a descriptor of its own
        for brain_id in brain_ids:
            try:  # every row read again, in the background: a disk's own errors
                self._health.check(brain_id, stop=stop)
            except CheckStopped:
                return
            with self._db.snapshot() as conn:
                state = schema.brain_state(conn, brain_id)
                epoch = schema.vector_epoch(conn, brain_id)
                if state is None or self._maintenance.ann(brain_id, epoch) is None:
                    continue
                self._cache.of(conn, brain_id, state[1])

    def brain_ids(self) -> list[str]:
        return [row[0] for row in self._db.get().execute("SELECT brain_id FROM brain_state ORDER BY seq")]

    # -- reads --------------------------------------------------------------------------

    def get_chunks(self, brain_id: str, document_id: str) -> list[Chunk]:
        with self._db.snapshot() as conn:
            state = schema.brain_state(conn, brain_id)
            if state is None:
                return []
            seq = state[0]
            with self._keywords.reading(conn, [brain_id]):
                rows = conn.execute(
                    f"{schema.select(schema.fts_table(seq))} WHERE c.brain_id = ? AND c.document_id = ? "
                    "ORDER BY c.ordinal, c.id",
                    (brain_id, document_id),
                ).fetchall()
        return [schema.from_row(row) for row in rows]

    def get_chunk(self, brain_id: str, chunk_id: str) -> Chunk | None:
        return self.get_many(brain_id, [chunk_id]).get(chunk_id)

    def get_many(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """One query however many ids: they are bound as one JSON array, not one variable each."""
        if not chunk_ids:
            return {}
        with self._db.snapshot() as conn:
            state = schema.brain_state(conn, brain_id)
            if state is None:
                return {}
            with self._keywords.reading(conn, [brain_id]):
                return reads.load(conn, {brain_id: state}, list(dict.fromkeys(chunk_ids)))

    def fingerprints(self, brain_id: str, document_id: str) -> dict[str, str]:
        """Read by every write before its commit: a brain whose keyword index is found damaged
        refuses the write then, before its record is stored (fts_damage.py)."""
        with self._db.snapshot() as conn:
            self._keywords.ensure_sound(conn, [brain_id])
            rows = conn.execute(
                "SELECT id, fingerprint FROM chunks WHERE brain_id = ? AND document_id = ?",
                (brain_id, document_id),
            )
            return dict(rows.fetchall())

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        return self._searcher.search(query)

    def get_vectors(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Vectors]:
        if not chunk_ids:
            return {}
        with self._db.snapshot() as conn:
            epoch, rows = reads.sound_vector_rows(conn, brain_id, chunk_ids)
        if not rows:
            return {}
        try:
            matrix = self._vectors.file(brain_id, epoch).read(np.array([r[1] for r in rows], dtype=np.int64))
        except FileNotFoundError:  # gone since the snapshot: dropped, or compacted elsewhere
            return {}
        except vector_store.VectorFileShrunk:
            self._health.check(brain_id)
            raise vector_health.IndexDamaged() from None
        return {row[0]: matrix[i] for i, row in enumerate(rows)}

    def last_written(self, brain_id: str) -> datetime | None:
        conn = self._db.get()
        row = conn.execute("SELECT written_ms FROM brain_state WHERE brain_id = ?", (brain_id,)).fetchone()
        return datetime.fromtimestamp(row[0] / 1000, UTC) if row is not None and row[0] else None

    def held(self, brain_id: str) -> dict[str, int]:
        rows = self._db.get().execute(
            "SELECT document_id, count(*) FROM chunks WHERE brain_id = ? AND active = 1 GROUP BY document_id",
            (brain_id,),
        )
        return {document_id: int(n) for document_id, n in rows.fetchall()}

    def count(self, brain_id: str) -> int:
        with self._db.snapshot() as conn:
            return self._counts.of(conn, brain_id)

    def close(self) -> None:
        self._keywords.close()
        self._maintenance.close()
        self._db.close()
