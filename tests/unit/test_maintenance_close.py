"""Closing the embedded chunk index while its maintenance worker is in long work: the work stops
at its next step (close does not wait for the rest, which at a million chunks is minutes), the
store is left sound (a postings build keeps the steps it committed, unused until it is whole; a
compaction nothing), and the next write or start does the rest."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings, fts_search, vector_compaction
from cairn.adapters.local.sqlite_chunks import DEFAULT_BM25_WEIGHTS, SqliteChunkIndex
from cairn.adapters.local.vector_store import VectorFile
from tests.contract.test_chunk_index_contract import DIM, chunk, search
from tests.unit.test_fts_postings_index import WORDS, _reference, _text

ROWS = 200


def _table(index: SqliteChunkIndex) -> str:
    state = schema.brain_state(index._db.get(), "b1")
    assert state is not None
    return schema.fts_table(state[0])


class _CountedSteps:
    """Stands in for fts_postings.TOKENS: counts the build's steps (one tokenizing of a slice of
    rows each), and at step `at` has another thread close the index, going on once it has asked."""

    def __init__(self, real: object, index: SqliteChunkIndex, at: int) -> None:
        self.real, self.index, self.at = real, index, at
        self.steps = 0
        self.closer: threading.Thread | None = None

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def postings(self, *args: object, **kwargs: object) -> object:
        self.steps += 1
        if self.steps == self.at:
            self.closer = threading.Thread(target=self.index.close)
            self.closer.start()
            assert self.index._maintenance._stop.wait(10)
        return self.real.postings(*args, **kwargs)  # type: ignore[attr-defined]


def test_close_stops_the_workers_postings_build_at_its_next_step_and_the_next_write_makes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    monkeypatch.setattr(fts_postings, "STEP", 8, raising=False)  # 25 steps over ROWS rows
    rng = np.random.default_rng(11)
    chunks = [chunk(f"c{n}", _text(rng, 30), document_id=f"d{n}") for n in range(ROWS + 1)]
    chunks[ROWS - 1] = chunk("late", "a kingfisher on the last row", document_id="late")
    vectors = rng.standard_normal((ROWS + 1, DIM)).astype(np.float32)
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, ann_min_rows=60)
    index.upsert(chunks[:40], vectors[:40])
    counted = _CountedSteps(fts_postings.TOKENS, index, at=3)
    monkeypatch.setattr(fts_postings, "TOKENS", counted)
    index.upsert(chunks[40:ROWS], vectors[40:ROWS])  # past both sizes: the worker's build
    worker = index._maintenance._worker
    assert worker is not None
    worker.join(30)
    assert counted.closer is not None, f"the build ran {counted.steps} step(s), never a third"
    counted.closer.join(30)
    assert not counted.closer.is_alive()
    assert counted.steps == 3  # no step after close was asked for
    monkeypatch.setattr(fts_postings, "TOKENS", counted.real)

    again = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, ann_min_rows=60)
    conn = again._db.get()
    assert not fts_postings.exists(conn, _table(again))  # part made: not used until whole
    assert search(again, "kingfisher") == ["late"]  # ranked by FTS5 meanwhile
    again.upsert(chunks[ROWS:], vectors[ROWS:])
    deadline = time.monotonic() + 30
    while not fts_postings.exists(conn, _table(again)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fts_postings.exists(conn, _table(again)), "the next write's worker never made the postings"

    def refuse(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        raise AssertionError("ranked every match instead of the term postings")

    for terms in (["kingfisher"], [WORDS[0], WORDS[7]], [WORDS[3]]):
        expected = _reference(again, "b1", terms, 20)
        monkeypatch.setattr(fts_search, "ranked_matches", refuse)
        got = fts_search.bm25_ranked(
            conn, _table(again), terms, DEFAULT_BM25_WEIGHTS, None, 20, table_rows=ROWS + 1
        )
        monkeypatch.undo()
        monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
        assert got == expected, terms
    assert search(again, "kingfisher") == ["late"]
    again.close()


def test_close_stops_a_compactions_copy_between_batches_and_the_next_compaction_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_compaction, "_COPY_ROWS", 16)
    rng = np.random.default_rng(12)
    chunks = [chunk(f"c{n}", f"heron {n} by the reeds", document_id=f"d{n}") for n in range(ROWS)]
    vectors = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False)
    index.upsert(chunks, vectors)
    index.delete_chunks("b1", [f"c{n}" for n in range(0, ROWS, 4)])  # a quarter dead: a rewrite
    real = VectorFile.append
    batches: list[int] = []

    def append(self: VectorFile, *args: object, **kwargs: object) -> object:
        batches.append(1)
        if len(batches) == 2:
            index._maintenance._stop.set()  # what close does first
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorFile, "append", append)
    assert index.compact("b1") is None
    monkeypatch.setattr(VectorFile, "append", real)
    assert len(batches) == 2  # no batch after close was asked for
    assert schema.vector_epoch(index._db.get(), "b1") == 0
    index.close()

    again = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False)
    assert search(again, "heron 5 reeds", vectors[5])[0] == "c5"
    done = again.compact("b1")
    assert done is not None and done.epoch == 1 and done.rows_after == ROWS - ROWS // 4
    assert sorted(p.name for p in (tmp_path / "vectors").glob("*.f32")) == ["b1~1.f32"]
    assert search(again, "heron 5 reeds", vectors[5])[0] == "c5"
    assert again.get_vectors("b1", ["c7"])["c7"] == pytest.approx(vectors[7] / np.linalg.norm(vectors[7]))
    again.close()


def test_no_background_thread_outlives_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunk index's maintenance worker and the job engine's workers and lease renewers are
    gone once their close returns, after each had work under way."""
    from cairn.adapters.local.job_engine import JobEngine
    from cairn.domain.models import Job
    from cairn.ports.jobs import JobContext
    from tests.fakes.clock import FakeClock
    from tests.fakes.jobs import MemoryJobStore

    before = set(threading.enumerate())
    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    rng = np.random.default_rng(13)
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, ann_min_rows=60)
    index.upsert(
        [chunk(f"c{n}", _text(rng, 30), document_id=f"d{n}") for n in range(80)],
        rng.standard_normal((80, DIM)).astype(np.float32),
    )
    engine = JobEngine(MemoryJobStore(), FakeClock(), poll_s=0.01, lease_s=0.3, close_wait_s=5)
    started = threading.Event()

    def handle(job: Job, ctx: JobContext) -> dict[str, object]:
        started.set()
        for _ in range(20):
            ctx.progress(0.5)
            time.sleep(0.01)
        return {}

    engine.register("work", handle)
    engine.start("work", {})
    engine.start_worker()
    assert started.wait(10)
    index.close()
    engine.close()
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == []
