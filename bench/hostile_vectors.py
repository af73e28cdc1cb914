"""The embedded vector file's cases of bench/hostile_inputs.py, each on a fresh embedded index and
timed alone. Run them through `bench/hostile_inputs.py --case NAME`."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def vector_compaction(rows: int = 100_000, rounds: int = 5) -> str:
    """A brain of `rows` chunks written 5,000 a commit, then `rounds` times: 10 % more rows
    appended unreferenced (what updates leave behind) and the brain compacted, which copies every
    live row into the next epoch's file (each one's piece checked against its sum first) and
    renumbers them. The index threshold is set above `rows`, so no HNSW index is built: what is
    timed is the copy and the switch alone, and the copy of the live rows into the new file on its
    own (its wall time is mostly the new file's fsync: its CPU time is given too). Wall time
    (median, min); the file is in the page cache."""
    import numpy as np

    from cairn.adapters.local import chunk_schema, vector_sums
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
    from cairn.domain.models import Chunk

    dim, rng, when = 384, np.random.default_rng(3), datetime(2025, 1, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as data:
        index = SqliteChunkIndex(
            Path(data, "c.db"), Path(data, "v"), dim, background_maintenance=False, ann_min_rows=rows + 1
        )
        for first in range(0, rows, 5_000):
            ids = range(first, min(first + 5_000, rows))
            chunks = [
                Chunk(
                    id=f"c{i}",
                    brain_id="b1",
                    document_id=f"d{i}",
                    path=f"n/{i}.md",
                    ordinal=0,
                    text="a note",
                    created_at=when,
                )
                for i in ids
            ]
            index.upsert(chunks, rng.standard_normal((len(chunks), dim)).astype(np.float32))
        dead = rng.standard_normal((rows // 10, dim)).astype(np.float32)
        took: list[float] = []
        copying: list[float] = []
        copying_cpu: list[float] = []
        copy = index._maintenance._copy

        def timed(*args: Any) -> None:
            started, cpu = time.perf_counter(), time.process_time()
            copy(*args)
            copying.append(time.perf_counter() - started)
            copying_cpu.append(time.process_time() - cpu)

        index._maintenance._copy = timed  # type: ignore[method-assign]
        for _ in range(rounds):
            with index._db.transaction() as conn:  # unreferenced rows, summed as a write's are
                epoch = chunk_schema.vector_epoch(conn, "b1")
                file = index._vectors.file("b1", epoch)
                vector_sums.extend(conn, "b1", epoch, file, int(file.append(dead)[-1]) + 1)
            started = time.perf_counter()
            done = index.compact("b1")
            took.append(time.perf_counter() - started)
            assert done is not None and done.live_rows == rows
        index.close()
    return (
        f"{rows:,} live rows, {rows // 10:,} dead ({rounds} rounds): compaction "
        f"{statistics.median(took) * 1000:.0f} ms median, {min(took) * 1000:.0f} ms min; the copy "
        f"{statistics.median(copying) * 1000:.0f} ms median, {min(copying) * 1000:.0f} ms min, "
        f"{statistics.median(copying_cpu) * 1000:.0f} ms CPU median"
    )


def ann_file_check(rows: int = 100_000, rounds: int = 5, keep: Path | None = None) -> str:
    """A brain's HNSW index file over `rows` unit vectors (built as compaction builds it, on two
    threads), then `rounds` times what a new process's first use of it checks (`verified`: the
    whole file read against its sum unless it is as last verified), the same followed by the
    index's opening (memory-mapped) and one search of it, and what `cairn check` and
    `cairn serve`'s warm-up read (the whole file's CRC-32), each with the file evicted from the
    page cache first (cold) and with it cached (warm). Wall time, median and max. With `keep`, the
    index is built in that directory once and reused by later runs."""
    import numpy as np

    from ann_choice import drop_from_page_cache
    from cairn.adapters.local import ann_index

    dim, rng = 384, np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as data:
        path = Path(keep or data, f"b1-{rows}.faiss")
        built = 0.0
        if not path.exists():
            matrix = rng.standard_normal((rows, dim)).astype(np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
            started = time.perf_counter()
            assert ann_index.build(matrix, path, threads=2)
            built = time.perf_counter() - started
            del matrix
        assert ann_index.verified(path)  # as the process that built it would: its first use
        said = [f"{rows:,} rows, index {path.stat().st_size / 1e6:.1f} MB (built in {built:.0f} s)"]
        query = rng.standard_normal(dim).astype(np.float32)
        query /= np.linalg.norm(query)
        allowed = np.ones(rows, dtype=np.bool_)

        def first_search() -> object:
            assert ann_index.verified(path)
            return ann_index.BrainAnn(path, dim).search(query, allowed, 100, 10_000)

        checks: dict[str, Callable[[], object]] = {
            "first use": lambda: ann_index.verified(path),
            "first use, the index opened and searched once": first_search,
            "full read": lambda: ann_index.file_crc(path),
        }
        for name, check in checks.items():
            for cache in ("cold", "warm"):
                took = []
                for _ in range(rounds):
                    if cache == "cold":
                        drop_from_page_cache(path)
                    else:
                        check()
                    started = time.perf_counter()
                    check()
                    took.append(time.perf_counter() - started)
                median, most = statistics.median(took) * 1000, max(took) * 1000
                said.append(f"{name} {cache} {median:.1f} ms median, {most:.1f} max")
    return "; ".join(said)
