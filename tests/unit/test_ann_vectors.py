"""The embedded vector leg through its HNSW index (ann_index.py) and compaction
(vector_compaction.py), on brains made small by lowering the thresholds: the graph answers, new
and deleted rows show at once, filters and staged chunks hold, compaction reclaims rows without
changing results, and concurrent writers lose nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import ann_index, page_cache, vector_compaction
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_store import file_name
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter, ChunkQuery

DIM = 32
BRAIN = "b1"
T0 = datetime(2025, 3, 1, tzinfo=UTC)


def clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors in 30 clusters, so neighbours exist (as with sentence embeddings)."""
    centres = rng.standard_normal((30, DIM))
    v = centres[rng.integers(0, 30, n)] + 0.45 * rng.standard_normal((n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def chunk(i: int, **fields: object) -> Chunk:
    values: dict[str, object] = {
        "id": f"c{i}",
        "brain_id": BRAIN,
        "document_id": f"d{i}",
        "path": f"{'odd' if i % 2 else 'even'}/n{i}.md",
        "ordinal": 0,
        "text": f"note number {i}",
        "tags": ["odd"] if i % 2 else ["even"],
        "created_at": T0,
    }
    values.update(fields)
    return Chunk.model_validate(values)


def make(tmp_path: Path, **options: object) -> SqliteChunkIndex:
    settings: dict[str, object] = {"ann_min_rows": 200, "exact_max_rows": 20, "background_maintenance": False}
    settings.update(options)
    return SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, **settings)  # type: ignore[arg-type]


def vector_ids(index: SqliteChunkIndex, vector: np.ndarray, k: int = 10, **filters: object) -> list[str]:
    query = ChunkQuery(
        text="",
        vector=vector.tolist(),
        bm25_weight=0.0,
        top_k=k,
        filter=ChunkFilter(brain_ids=(BRAIN,), **filters),  # type: ignore[arg-type]
    )
    return [hit.chunk.id for hit in index.search(query)]


def scored(index: SqliteChunkIndex, vector: np.ndarray, k: int = 10) -> list[tuple[str, float]]:
    query = ChunkQuery(
        text="", vector=vector.tolist(), bm25_weight=0.0, top_k=k, filter=ChunkFilter(brain_ids=(BRAIN,))
    )
    return [(hit.chunk.id, round(hit.vector_similarity or 0.0, 6)) for hit in index.search(query)]


@pytest.fixture
def graph_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = ann_index._graph_search

    def counted(*args: object) -> object:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ann_index, "_graph_search", counted)
    return calls


def loaded(tmp_path: Path, n: int = 600, **options: object) -> tuple[SqliteChunkIndex, np.ndarray]:
    index = make(tmp_path, **options)
    vectors = clustered(np.random.default_rng(5), n)
    index.upsert([chunk(i) for i in range(n)], vectors)
    return index, vectors


def exact_top(vectors: np.ndarray, live: list[int], query: np.ndarray, k: int = 10) -> list[str]:
    sims = vectors[live] @ (query / np.linalg.norm(query))
    order = np.lexsort((np.array(live), -sims))[:k]
    return [f"c{live[i]}" for i in order]


def test_the_graph_answers_once_built_and_agrees_with_exact_search(
    tmp_path: Path, graph_calls: list[int]
) -> None:
    index, vectors = loaded(tmp_path)
    rng = np.random.default_rng(9)
    queries = vectors[rng.integers(0, 600, 30)] + 0.3 * rng.standard_normal((30, DIM)).astype(np.float32)
    before = [vector_ids(index, q) for q in queries]
    assert graph_calls == []  # no index yet: exact
    report = index.compact(BRAIN)
    assert report is not None and report.indexed_rows == 600 and report.reclaimed == 0
    assert (tmp_path / "vectors" / "b1.faiss").exists()
    after = [vector_ids(index, q) for q in queries]
    assert len(graph_calls) == 30
    truth = [exact_top(vectors, list(range(600)), q) for q in queries]
    assert before == truth
    recall = np.mean([len(set(a) & set(t)) / 10 for a, t in zip(after, truth, strict=True)])
    assert recall >= 0.98
    index.close()


def test_writes_and_deletes_show_at_once_through_the_graph(tmp_path: Path, graph_calls: list[int]) -> None:
    index, vectors = loaded(tmp_path)
    index.compact(BRAIN)
    fresh = clustered(np.random.default_rng(77), 40)
    index.upsert([chunk(1000 + i) for i in range(40)], fresh)
    for i in (0, 17, 39):
        assert vector_ids(index, fresh[i], k=1) == [f"c{1000 + i}"]
    index.delete_chunks(BRAIN, ["c1017"])
    assert "c1017" not in vector_ids(index, fresh[17], k=50)
    # re-upserting a chunk with another vector: the old row never answers for it again
    index.upsert([chunk(3)], fresh[0:1] * -1)
    assert "c3" not in vector_ids(index, vectors[3], k=20)
    assert vector_ids(index, -fresh[0], k=1) == ["c3"]
    assert graph_calls
    index.close()


def test_filters_and_staged_chunks_hold_inside_the_graph(tmp_path: Path, graph_calls: list[int]) -> None:
    index, vectors = loaded(tmp_path)
    index.compact(BRAIN)
    staged = clustered(np.random.default_rng(3), 30)
    index.upsert([chunk(2000 + i, active=False) for i in range(30)], staged)
    for q in staged[:10]:
        assert not any(
            cid.startswith("c2") and len(cid) == 5 for cid in vector_ids(index, q, k=50, active_only=True)
        )
    odd = [i for i in range(600) if i % 2]
    for q in vectors[:20]:
        got = vector_ids(index, q, path_prefixes=["odd/"])
        assert got and all(int(cid[1:]) % 2 for cid in got)
        assert len(set(got) & set(exact_top(vectors, odd, q))) >= 9
        tagged = vector_ids(index, q, tags=["even"])
        assert tagged and all(int(cid[1:]) % 2 == 0 for cid in tagged)
    assert graph_calls
    # a very selective filter is scored exactly: a single document
    calls = len(graph_calls)
    assert vector_ids(index, vectors[5], document_ids=["d7"]) == ["c7"]
    assert len(graph_calls) == calls
    index.close()


def test_compaction_reclaims_dead_rows_and_changes_no_result(tmp_path: Path) -> None:
    for n, options in enumerate(({"ann_min_rows": 10**9}, {"exact_max_rows": 10**6})):  # both exact
        directory = tmp_path / str(n)
        index, vectors = loaded(directory, **options)
        index.upsert([chunk(i) for i in range(0, 200)], -vectors[:200])  # 200 dead rows (vectors changed)
        index.delete_chunks(BRAIN, [f"c{i}" for i in range(200, 300)])  # 100 more
        vector_file = directory / "vectors" / file_name(BRAIN)
        assert vector_file.stat().st_size == 800 * DIM * 4
        queries = clustered(np.random.default_rng(21), 25)
        before = [scored(index, q) for q in queries]
        report = index.compact(BRAIN)
        assert report is not None and (report.rows_before, report.rows_after, report.live_rows) == (
            800,
            500,
            500,
        )
        assert not vector_file.exists()
        assert (directory / "vectors" / file_name(BRAIN, 1)).stat().st_size == 500 * DIM * 4
        assert [scored(index, q) for q in queries] == before
        reopened = make(directory, **options)
        assert [scored(reopened, q) for q in queries] == before
        got = reopened.get_vectors(BRAIN, ["c5", "c450"])
        assert np.allclose(got["c5"], -vectors[5]) and np.allclose(got["c450"], vectors[450])
        again = reopened.compact(BRAIN)
        assert again is not None and again.reclaimed == 0 and again.epoch == 1
        reopened.close()
        index.close()


def test_writes_during_a_compaction_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index, vectors = loaded(tmp_path)
    index.delete_chunks(BRAIN, [f"c{i}" for i in range(100)])
    late = clustered(np.random.default_rng(8), 5)
    real_build = vector_compaction.build

    def build_with_writes(*args: object, **kwargs: object) -> bool:
        index.upsert([chunk(3000 + i) for i in range(5)], late)  # new rows
        index.upsert([chunk(150)], late[:1] * -1)  # a live row replaced
        index.delete_chunks(BRAIN, ["c151"])  # a live row deleted
        return real_build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_compaction, "build", build_with_writes)
    report = index.compact(BRAIN)
    assert report is not None and report.epoch == 1
    got = index.get_vectors(BRAIN, ["c3000", "c3004", "c150", "c400"])
    assert np.allclose(got["c3000"], late[0]) and np.allclose(got["c3004"], late[4])
    assert np.allclose(got["c150"], -late[0]) and np.allclose(got["c400"], vectors[400])
    assert index.get_vectors(BRAIN, ["c151"]) == {}
    assert vector_ids(index, late[2], k=1) == ["c3002"]
    assert "c151" not in vector_ids(index, vectors[151], k=30)
    assert index.count(BRAIN) == 504
    index.close()


def test_another_process_writes_are_found_and_the_index_reopens_mapped(
    tmp_path: Path, graph_calls: list[int]
) -> None:
    index, vectors = loaded(tmp_path)
    index.compact(BRAIN)
    other = make(tmp_path)  # a second process on the same files
    fresh = clustered(np.random.default_rng(31), 25)
    other.upsert([chunk(4000 + i) for i in range(25)], fresh)
    assert vector_ids(index, fresh[3], k=1) == ["c4003"]  # past the indexed rows: scored exactly
    other.close()
    index.close()
    reopened = make(tmp_path)
    assert vector_ids(reopened, fresh[7], k=1) == ["c4007"]
    assert vector_ids(reopened, vectors[11], k=1) == ["c11"]
    assert graph_calls
    reopened.close()


def test_the_background_worker_builds_catches_up_and_compacts(tmp_path: Path) -> None:
    index, vectors = loaded(tmp_path, background_maintenance=True)
    path = tmp_path / "vectors" / "b1.faiss"
    for _ in range(200):
        if path.exists():
            break
        threading.Event().wait(0.05)
    assert path.exists()
    index.delete_chunks(BRAIN, [f"c{i}" for i in range(300)])  # half dead: compaction is due
    for _ in range(200):
        if (tmp_path / "vectors" / file_name(BRAIN, 1)).exists() and not (
            tmp_path / "vectors" / file_name(BRAIN)
        ).exists():
            break
        threading.Event().wait(0.05)
    assert not (tmp_path / "vectors" / file_name(BRAIN)).exists()
    assert vector_ids(index, vectors[450], k=1) == ["c450"]
    index.close()


def test_concurrent_searches_and_writes_neither_crash_nor_lose_rows(tmp_path: Path) -> None:
    index, vectors = loaded(tmp_path)
    index.compact(BRAIN)
    fresh = clustered(np.random.default_rng(41), 200)
    errors: list[BaseException] = []

    def search() -> None:
        try:
            for q in vectors[:150]:
                vector_ids(index, q)
        except BaseException as error:
            errors.append(error)

    def write(offset: int) -> None:
        try:
            for i in range(offset, offset + 100, 10):
                index.upsert([chunk(5000 + j) for j in range(i, i + 10)], fresh[i : i + 10])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=search), threading.Thread(target=write, args=(0,))]
    threads += [threading.Thread(target=write, args=(100,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert index.count(BRAIN) == 800
    for i in (0, 99, 150, 199):
        assert vector_ids(index, fresh[i], k=1) == [f"c{5000 + i}"]
    index.close()


def test_a_stopped_compaction_leaves_nothing_that_matters(tmp_path: Path) -> None:
    index, vectors = loaded(tmp_path)
    index.delete_chunks(BRAIN, [f"c{i}" for i in range(100)])
    leftover = tmp_path / "vectors" / file_name(BRAIN, 1)
    leftover.write_bytes(b"\0" * DIM * 4 * 3)  # a copy that never committed
    report = index.compact(BRAIN)
    assert report is not None and report.rows_after == 500
    assert vector_ids(index, vectors[300], k=1) == ["c300"]
    index.close()


def test_compaction_without_dead_rows_extends_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, vectors = loaded(tmp_path)
    index.compact(BRAIN)
    fresh = clustered(np.random.default_rng(13), 300)
    index.upsert([chunk(6000 + i) for i in range(300)], fresh)
    extended: list[bool] = []
    real_build = vector_compaction.build

    def spy(*args: object, **kwargs: object) -> bool:
        extended.append(bool(kwargs.get("extend")))
        return real_build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_compaction, "build", spy)
    report = index.compact(BRAIN)
    assert extended == [True]
    assert report is not None and (report.epoch, report.reclaimed, report.indexed_rows) == (0, 0, 900)
    ann = index._maintenance.ann(BRAIN, 0)
    assert ann is not None and (ann.base_rows, ann.delta_rows) == (900, 0)
    assert vector_ids(index, fresh[123], k=1) == ["c6123"]
    assert vector_ids(index, vectors[45], k=1) == ["c45"]
    index.close()


def test_warm_reads_the_files_and_opens_the_indexes_and_rows_of_big_brains_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, _ = loaded(tmp_path)
    index.upsert([chunk(99999, brain_id="small")], clustered(np.random.default_rng(1), 1))
    index.compact(BRAIN)
    index.close()
    read: list[list[Path]] = []
    real = page_cache.read_through

    def recording(paths: list[Path], budget: int) -> int:
        read.append(list(paths))
        return real(paths, budget)

    monkeypatch.setattr(page_cache, "read_through", recording)
    fresh = make(tmp_path)
    fresh.warm()
    vectors = tmp_path / "vectors"
    assert read == [[vectors / f"{BRAIN}.faiss", vectors / file_name(BRAIN)]]  # the database through SQLite
    assert set(fresh._cache) == {BRAIN}
    assert set(fresh._maintenance._anns) == {(BRAIN, 0)}
    fresh.close()


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads the kernel's lock table (Linux)")
def test_warm_keeps_the_database_locks_so_another_process_leaves_its_wal_alone(tmp_path: Path) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
    too: another process closing its last connection then believed itself the last user and
    deleted the -wal and -shm files under the running server (acknowledged writes lost)."""
    index, _ = loaded(tmp_path)
    index.compact(BRAIN)
    index.close()
    fresh = make(tmp_path)
    fresh.upsert([chunk(99999)], clustered(np.random.default_rng(1), 1))  # the WAL holds a write
    fresh.warm()
    inode = (tmp_path / "chunks.db").stat().st_ino
    locks = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
    assert any(lock[4] == str(os.getpid()) and lock[5].endswith(f":{inode}") for lock in locks)
    other = "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('SELECT 1').fetchall()"
    subprocess.run([sys.executable, "-c", other, str(tmp_path / "chunks.db")], check=True, timeout=30)
    assert (tmp_path / "chunks.db-wal").exists()
    assert fresh.get_chunks(BRAIN, "d99999")
    fresh.close()


def test_a_repeated_filter_is_answered_from_the_snapshot_and_never_goes_stale(tmp_path: Path) -> None:
    index, vectors = loaded(tmp_path)
    first = vector_ids(index, vectors[8], k=3, path_prefixes=("even/",))
    assert first[0] == "c8" and vector_ids(index, vectors[8], k=3, path_prefixes=("even/",)) == first
    index.upsert([chunk(7000, path="even/new.md")], vectors[8:9])  # same vector, same prefix
    assert set(vector_ids(index, vectors[8], k=2, path_prefixes=("even/",))) == {"c8", "c7000"}
    index.delete_chunks(BRAIN, ["c8"])
    assert vector_ids(index, vectors[8], k=1, path_prefixes=("even/",)) == ["c7000"]
    index.close()


def test_compaction_counts_rows_another_process_appended(tmp_path: Path) -> None:
    index, vectors = loaded(tmp_path)
    index.delete_chunks(BRAIN, [f"c{i}" for i in range(50)])
    other = make(tmp_path)  # another process appends rows this one has not mapped
    fresh = clustered(np.random.default_rng(23), 30)
    other.upsert([chunk(8000 + i) for i in range(30)], fresh)
    report = index.compact(BRAIN)
    assert report is not None and (report.rows_before, report.rows_after, report.live_rows) == (630, 580, 580)
    got = index.get_vectors(BRAIN, ["c8000", "c8029", "c599"])
    assert np.allclose(got["c8000"], fresh[0]) and np.allclose(got["c8029"], fresh[29])
    assert np.allclose(got["c599"], vectors[599])
    other.close()
    index.close()


def test_rows_written_while_a_brain_compacts_are_not_counted_against_what_it_reclaimed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written between the copy and the switch are carried into the new file: the rows
    reclaimed are the old file's rows at the switch less the new file's, never negative."""
    index, _ = loaded(tmp_path)
    index.delete_chunks(BRAIN, [f"c{i}" for i in range(50)])
    other = make(tmp_path)
    real = vector_compaction.VectorMaintenance._copy

    def copy_then_write(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        other.upsert([chunk(9000 + i) for i in range(200)], clustered(np.random.default_rng(5), 200))

    monkeypatch.setattr(vector_compaction.VectorMaintenance, "_copy", staticmethod(copy_then_write))
    report = index.compact(BRAIN)

    assert report is not None and report.live_rows == 550
    assert (report.rows_before, report.rows_after, report.reclaimed) == (800, 750, 50)
    assert len(index.get_vectors(BRAIN, [f"c{9000 + i}" for i in range(200)])) == 200
    other.close()
    index.close()
