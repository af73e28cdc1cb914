"""The embedded store's SQL cases of bench/hostile_inputs.py: requests on one brain whose cost once
grew with a big brain's chunks (its own or a neighbour's), and job claims whose cost once grew with
the queue. Each builds its index (short texts, 8-dimensional vectors: what is timed is SQL, not
FTS5 or the vector file) or job file in a temporary directory, then times the request alone. Run
them through `bench/hostile_inputs.py --case NAME`."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
    from cairn.domain.models import Chunk

DIM = 8


def _chunk(brain_id: str, n: int) -> Chunk:
    from cairn.domain.models import OWNER_FACET, Chunk

    return Chunk(
        id=f"{brain_id}-{n}",
        brain_id=brain_id,
        document_id=f"doc-{n // 4}",
        path=f"notes/{n // 4}.md",
        ordinal=n % 4,
        text=f"note {n} about the kettle",
        facets={OWNER_FACET: f"user{n % 20}"},
        tags=[f"topic{n % 50}", "note"],
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
    )


def _index(data: str, rows: int) -> SqliteChunkIndex:
    """Brain `big` of `rows` chunks (each owned by one of 20 users), written 5,000 a commit, and
    brain `small` of one."""
    import numpy as np

    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex

    rng = np.random.default_rng(3)
    index = SqliteChunkIndex(Path(data, "c.db"), Path(data, "v"), DIM, background_maintenance=False)
    for first in range(0, rows, 5_000):
        chunks = [_chunk("big", n) for n in range(first, min(first + 5_000, rows))]
        index.upsert(chunks, rng.standard_normal((len(chunks), DIM)).astype(np.float32))
    index.upsert([_chunk("small", 0)], rng.standard_normal((1, DIM)).astype(np.float32))
    return index


def _median_ms(run: Callable[[int], object], rounds: int) -> str:
    took = []
    for n in range(rounds):
        started = time.perf_counter()
        run(n)
        took.append(time.perf_counter() - started)
    return f"{statistics.median(took) * 1000:.2f} ms median, {max(took) * 1000:.2f} max"


def chunk_id_writes(rows: int = 100_000, rounds: int = 50) -> str:
    """In brain `big`: `rounds` upserts of one chunk it holds (its vector row looked up by id)
    and `rounds` removals of one chunk by id. Wall time per write."""
    import numpy as np

    with tempfile.TemporaryDirectory() as data:
        index = _index(data, rows)
        vector = np.ones((1, DIM), dtype=np.float32)
        rewrite = _median_ms(lambda n: index.upsert([_chunk("big", n)], vector), rounds)
        remove = _median_ms(lambda n: index.delete_chunks("big", [f"big-{rows - 1 - n}"]), rounds)
        index.close()
    return f"{rows:,} chunks: rewrite one {rewrite}; delete one by id {remove}"


def owner_filter_neighbour(rows: int = 100_000, rounds: int = 20) -> str:
    """Brain `small` (one chunk) beside brain `big` (`rows` chunks, each with an owner): `rounds`
    times a write to `small`, then its first search as a principal who sees only their own
    memories (ChunkFilter.owners), which reads which rows other owners hold. Wall time of the
    search."""
    import numpy as np

    from cairn.ports.chunks import ChunkFilter, ChunkQuery

    with tempfile.TemporaryDirectory() as data:
        index = _index(data, rows)
        vector = np.ones(DIM, dtype=np.float32)
        query = ChunkQuery("kettle", vector, ChunkFilter(("small",), owners=(("small", "user3"),)))

        def search(n: int) -> None:
            index.upsert([_chunk("small", 1 + n % 2)], vector.reshape(1, DIM))
            started = time.perf_counter()
            index.search(query)
            took.append(time.perf_counter() - started)

        took: list[float] = []
        _median_ms(search, rounds)
        index.close()
    return (
        f"{rows:,} chunks beside: the first search after a write {statistics.median(took) * 1000:.2f} ms "
        f"median, {max(took) * 1000:.2f} max"
    )


def many_brains(rows: int = 30_000, brains: int = 1_000, rounds: int = 20) -> str:
    """Brain `big` of `rows` chunks (past fts_search.SMALL_TABLE: it has term postings) beside
    `brains` brains of one chunk: the index's opening, `rounds` keyword searches of `big` and
    `rounds` one-chunk rewrites in it. Wall time."""
    import numpy as np

    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
    from cairn.ports.chunks import ChunkFilter, ChunkQuery

    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as data:
        index = _index(data, rows)
        others = [_chunk(f"b{n}", 0) for n in range(brains)]
        index.upsert(others, rng.standard_normal((brains, DIM)).astype(np.float32))
        index.close()
        started = time.perf_counter()
        index = SqliteChunkIndex(Path(data, "c.db"), Path(data, "v"), DIM, background_maintenance=False)
        opened = (time.perf_counter() - started) * 1000
        query = ChunkQuery("kettle note", None, ChunkFilter(("big",)))
        index.search(query)  # the brain's rows cached and its keyword index probed
        search = _median_ms(lambda n: index.search(query), rounds)
        vector = np.ones((1, DIM), dtype=np.float32)
        rewrite = _median_ms(lambda n: index.upsert([_chunk("big", n)], vector), rounds)
        index.close()
    said = f"{rows:,} chunks beside {brains:,} brains: open {opened:.0f} ms"
    return f"{said}; search {search}; rewrite one {rewrite}"


def compaction_neighbour(rows: int = 100_000, rounds: int = 10) -> str:
    """Brain `small` (one chunk) beside brain `big` (`rows` chunks, two tags each): `rounds`
    times a rewrite of `small`'s chunk (a dead vector row), then its compaction, whose last
    transaction renumbers the brain's rows in chunks, tags and facets. Wall time of the compaction."""
    import numpy as np

    with tempfile.TemporaryDirectory() as data:
        index = _index(data, rows)
        rng = np.random.default_rng(5)

        def compact(n: int) -> None:
            index.upsert([_chunk("small", 0)], rng.standard_normal((1, DIM)).astype(np.float32))
            started = time.perf_counter()
            done = index.compact("small")
            assert done is not None and done.rows_after < done.rows_before
            took.append(time.perf_counter() - started)

        took: list[float] = []
        _median_ms(compact, rounds)
        index.close()
    median = statistics.median(took) * 1000
    return f"{rows:,} tagged chunks beside: compact a one-chunk brain {median:.2f} ms median"


def staged_activation(rows: int = 100_000, rounds: int = 20) -> str:
    """Brain `big` holding `rows` staged (inactive) chunks of an upload in flight: `rounds` times a
    one-chunk document staged there, then activated (DocumentService's commit of a staged ingest).
    Wall time of the activation."""
    import numpy as np

    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex

    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as data:
        index = SqliteChunkIndex(Path(data, "c.db"), Path(data, "v"), DIM, background_maintenance=False)
        for first in range(0, rows, 5_000):
            staged = [
                _chunk("big", n).model_copy(update={"active": False}) for n in range(first, first + 5_000)
            ]
            index.upsert(staged, rng.standard_normal((len(staged), DIM)).astype(np.float32))

        def activate(n: int) -> None:
            mine = _chunk("big", rows + n).model_copy(update={"active": False, "document_id": f"mine{n}"})
            index.upsert([mine], rng.standard_normal((1, DIM)).astype(np.float32))
            started = time.perf_counter()
            index.activate("big", mine.document_id, [mine.id])
            took.append(time.perf_counter() - started)

        took: list[float] = []
        _median_ms(activate, rounds)
        index.close()
    return (
        f"{rows:,} staged chunks beside: activate a document {statistics.median(took) * 1000:.2f} ms median"
    )


def brain_count(rows: int = 100_000, rounds: int = 50) -> str:
    """Brain `big` of `rows` chunks: `rounds` counts of its chunks (Mnemosyne's graph leg asks one
    per library on every search), unchanged and then each after a one-chunk write."""
    import numpy as np

    with tempfile.TemporaryDirectory() as data:
        index = _index(data, rows)
        index.count("big")
        unchanged = _median_ms(lambda n: index.count("big"), rounds)
        took: list[float] = []

        def written(n: int) -> None:
            index.upsert([_chunk("big", rows + n)], np.ones((1, DIM), dtype=np.float32))
            started = time.perf_counter()
            index.count("big")
            took.append(time.perf_counter() - started)

        _median_ms(written, rounds)
        index.close()
    return (
        f"{rows:,} chunks: count unchanged {unchanged}; after a write "
        f"{statistics.median(took) * 1000:.2f} ms median"
    )


# The queues of job-backlog: the principal of each queued job, oldest first.
JOB_SHAPES: dict[str, Callable[[int], list[str]]] = {
    "10 principals": lambda queued: [f"user{n % 10}" for n in range(queued)],
    "one job a principal": lambda queued: [f"user{n}" for n in range(queued)],
    "mixed": lambda queued: (
        [f"big{n % 5}" for n in range(queued // 2)] + [f"user{n}" for n in range(queued - queued // 2)]
    ),
}


def job_backlog(queued: int = 10_000, finished: int = 100_000, rounds: int = 200) -> str:
    """A job file of `finished` completed jobs and `queued` waiting ones, in three shapes
    (JOB_SHAPES): 10 principals; one job a principal; 5 principals holding the older half and one
    job a principal the newer. In each, `rounds` claims (one job each, the queue drained from its
    oldest) and `rounds` claims of a named job, the newest. Wall time per claim (mostly the commit's
    wait on the disk), the drain's CPU time and the SQLite steps of one more claim."""
    return "\n  ".join(
        f"{shape}: {_job_claims(principals(queued), finished, rounds)}"
        for shape, principals in JOB_SHAPES.items()
    )


def _job_claims(principals: list[str], finished: int, rounds: int) -> str:
    from cairn.adapters.local.job_rows import JobRow
    from cairn.adapters.local.sqlite_jobs import _COLUMNS, SqliteJobStore, _encode
    from cairn.domain.models import JobStatus

    now = datetime(2025, 1, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as data:
        store = SqliteJobStore(Path(data, "jobs.sqlite3"))
        rows = [JobRow.new("work", {}, now, principal=f"user{n % 10}") for n in range(finished)]
        for row in rows:
            row.status = JobStatus.completed
        rows += [JobRow.new("work", {}, now, principal=principal) for principal in principals]
        with store._db.transaction() as conn:  # one commit: the rows as insert() writes them
            conn.executemany(
                f"INSERT INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 18)})", map(_encode, rows)
            )
        lease = now.timestamp() + 60
        cpu = time.thread_time()
        drain = _median_ms(lambda n: store.claim(now, lease), rounds)
        cpu = (time.thread_time() - cpu) / rounds * 1000  # without the commit's wait on the disk
        named = _median_ms(lambda n: store.claim(now, lease, job_id=rows[-1 - n].id), rounds)
        steps = [0]  # SQLite virtual-machine steps of one more claim: the SQL's work without the commit
        store._db.get().set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 1)
        store.claim(now, lease)
        store.close()
    said = f"{len(principals):,} queued beside {finished:,} finished: claim {drain}"
    said += f" ({cpu:.2f} ms CPU mean, {steps[0]:,} SQLite steps)"
    return f"{said}; claim a named job {named}"
