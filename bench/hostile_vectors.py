"""The embedded vector file's cases of bench/hostile_inputs.py, each on a fresh embedded index and
timed alone. Run them through `bench/hostile_inputs.py --case NAME`."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cairn.domain.models import Chunk


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

    dim, rng = 384, np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as data:
        index = SqliteChunkIndex(
            Path(data, "c.db"), Path(data, "v"), dim, background_maintenance=False, ann_min_rows=rows + 1
        )
        for first in range(0, rows, 5_000):
            chunks = plain_chunks(range(first, min(first + 5_000, rows)))
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


def vector_file_check(rows: int = 100_000) -> str:
    """A brain whose vector file holds `rows` rows summed in pieces of 1,024 (as a bulk build leaves
    it; only the first 1,000 rows have chunks, the check reads every row either way), then, in a
    new index as the next process opens it: the check a first search or a start makes
    (`check(reread=False)`, which reads nothing of a file as last verified), a full one (`cairn
    check`'s: every row read again), and the first search's after the file was written into (read
    in full, the damage found). Wall time; the file is in the page cache."""
    import numpy as np

    from cairn.adapters.local import vector_sums
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex

    dim, said = 384, []
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as data:

        def opened() -> SqliteChunkIndex:
            return SqliteChunkIndex(Path(data, "c.db"), Path(data, "v"), dim, background_maintenance=False)

        index = opened()
        chunks = plain_chunks(range(1_000))
        index.upsert(chunks, rng.standard_normal((1_000, dim)).astype(np.float32))
        file, block = index._vectors.file("b1"), rng.standard_normal((16_384, dim)).astype(np.float32)
        while (have := file.stored_rows()) < rows:
            with index._db.transaction() as conn:  # what a bulk build's commits leave
                vector_sums.extend(conn, "b1", 0, file, int(file.append(block[: rows - have])[-1]) + 1)
        index.check("b1")  # as the process that wrote it would: its first search checked it
        index.close()
        for name, reread in (("a first search's check", False), ("a full check", True)):
            index = opened()
            started = time.perf_counter()
            index.check("b1", reread=reread)
            said.append(f"{name} {(time.perf_counter() - started) * 1000:.1f} ms")
            index.close()
        with Path(file.path).open("r+b") as fh:
            fh.seek(500 * 4 * dim)  # a row a chunk points at
            fh.write(b"\x7f" * 8)
        index = opened()
        started = time.perf_counter()
        found = index.check("b1", reread=False)
        took = (time.perf_counter() - started) * 1000
        said.append(f"written into: a first search's check {took:.1f} ms ({found.unsound_chunks} unsound)")
        index.close()
    return f"{rows:,} vector rows: " + ", ".join(said)


def plain_chunks(ids: Iterable[int]) -> list[Chunk]:
    """One chunk "a note" of its own document per id, in brain b1."""
    from cairn.domain.models import Chunk

    when = datetime(2025, 1, 1, tzinfo=UTC)
    return [
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
