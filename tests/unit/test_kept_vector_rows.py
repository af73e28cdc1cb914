"""A chunk written again with the vector it already holds (a memory superseded: only its flags
move) keeps its vector row instead of appending another (adapters/local/kept_vector_rows.py):
counted as rows of the brain's vector file. A changed vector, a row the file lost, and a brain
with recorded damage still append, and every search answers from the row the chunk points at."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.models import Chunk, MemoryType
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.memory.memory_model import MemoryInput
from tests.support.shapes import embedded, process

DIM = 16
T0 = datetime(2025, 3, 1, tzinfo=UTC)


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def value(n: int, *, current: bool, tags: tuple[str, ...] = ()) -> Chunk:
    return Chunk(
        id=f"v{n}",
        brain_id="b1",
        document_id=f"d{n}",
        path=f"memories/fact/v{n}.md",
        ordinal=0,
        text=f"The kettle descales every {n} days.",
        created_at=T0,
        current=current,
        tags=list(tags),
    )


def rows(index: SqliteChunkIndex) -> int:
    return index.check("b1").vector_rows


def nearest(index: SqliteChunkIndex, vector: np.ndarray, **options: bool) -> list[tuple[str, float]]:
    found = index.search(
        ChunkQuery(text="", vector=vector.tolist(), filter=ChunkFilter(brain_ids=("b1",), **options), top_k=5)
    )
    return [(h.chunk.id, h.vector_similarity or 0.0) for h in found]


@pytest.fixture
def index(tmp_path: Path) -> SqliteChunkIndex:
    return SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False)


def test_a_chain_of_values_leaves_one_row_a_value(index: SqliteChunkIndex) -> None:
    """As a version chain writes them: each new value, and the value before it again, no longer
    current, with the vector lent back by the index."""
    values = 40
    for n in range(values):
        index.upsert([value(n, current=True)], unit(n)[None, :])
        if n:
            lent = index.get_vectors("b1", [f"v{n - 1}"])[f"v{n - 1}"]
            index.upsert([value(n - 1, current=False)], np.asarray(lent)[None, :])
    assert rows(index) == values  # 2 * values - 1 when each write appended
    assert nearest(index, unit(values - 1), current_only=True)[0][0] == f"v{values - 1}"
    for n in (0, 17, values - 2):
        hits = dict(nearest(index, unit(n)))
        assert hits[f"v{n}"] == pytest.approx(1.0, abs=1e-6)
        assert f"v{n}" not in dict(nearest(index, unit(n), current_only=True))


def test_flags_moved_back_and_forth_never_grow_the_file(index: SqliteChunkIndex) -> None:
    index.upsert([value(0, current=True), value(1, current=True)], np.stack([unit(0), unit(1)]))
    for turn in range(10):
        index.upsert([value(0, current=turn % 2 == 1, tags=(f"t{turn}",))], unit(0)[None, :])
    assert rows(index) == 2
    assert [cid for cid, _ in nearest(index, unit(0), current_only=True)] == ["v0", "v1"]
    assert nearest(index, unit(0), tags=("t9",)) == [("v0", pytest.approx(1.0, abs=1e-6))]
    assert nearest(index, unit(0), tags=("t8",)) == []


def test_a_changed_vector_is_appended_and_answers(index: SqliteChunkIndex) -> None:
    index.upsert([value(0, current=True)], unit(0)[None, :])
    index.upsert([value(0, current=True)], unit(5)[None, :])
    assert rows(index) == 2
    assert nearest(index, unit(5))[0] == ("v0", pytest.approx(1.0, abs=1e-6))
    assert nearest(index, unit(0))[0][1] < 0.99


def test_a_row_the_file_lost_is_written_again(index: SqliteChunkIndex, tmp_path: Path) -> None:
    index.upsert([value(0, current=True)], unit(0)[None, :])
    index.upsert([value(1, current=True)], unit(1)[None, :])  # a commit, and a piece of the sums, each
    path = next((tmp_path / "vectors").glob("*.f32"))
    with path.open("r+b") as fh:  # the last row cut off under the running index
        fh.truncate(path.stat().st_size - 4 * DIM)
    index.upsert([value(1, current=False)], unit(1)[None, :])
    assert index.check("b1").unsound_chunks == 0  # v1 left the lost row: nothing points into it
    assert index.discard_unsound("b1") == {}
    assert nearest(index, unit(1))[0] == ("v1", pytest.approx(1.0, abs=1e-6))
    assert nearest(index, unit(0))[0] == ("v0", pytest.approx(1.0, abs=1e-6))


def test_a_brain_with_recorded_damage_keeps_no_row(index: SqliteChunkIndex, tmp_path: Path) -> None:
    index.upsert([value(0, current=True)], unit(0)[None, :])
    index.upsert([value(1, current=True)], unit(1)[None, :])
    index.close()
    path = next((tmp_path / "vectors").glob("*.f32"))
    with path.open("r+b") as fh:  # v1's row scribbled over
        fh.seek(4 * DIM + 8)
        fh.write(b"\x7f" * 8)
    reopened = SqliteChunkIndex(
        tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False
    )
    assert reopened.check("b1").unsound_chunks == 1
    reopened.upsert([value(0, current=False)], unit(0)[None, :])
    assert rows(reopened) == 3  # its rows are being rebuilt: appended, as before


def test_a_key_written_many_times_leaves_a_row_a_value(tmp_path: Path) -> None:
    """Through the memory service on the embedded store: superseding a value writes its chunk
    again (no longer current) and that write appends nothing."""
    c = process(embedded(tmp_path / "data"), tmp_path)
    brain = c.brains.create("Default", slug="default")
    values = 12
    for n in range(values):
        c.memories.store(brain, MemoryInput(MemoryType.fact, f"The kettle descales every {n} days.", key="k"))
    index = c.adapters.chunks
    assert isinstance(index, SqliteChunkIndex)
    assert index.count(brain.id) == values
    assert index.check(brain.id).vector_rows == values  # 2 * values - 1 before
