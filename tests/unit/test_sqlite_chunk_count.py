"""The embedded chunk index counts a brain's chunks again only when the brain changed: a second
count costs the same at 300 chunks as at 3,000 (Mnemosyne's graph leg asks it on every search),
and every change, by this index or another on the same files, is seen by the next count."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from tests.contract.test_chunk_index_contract import DIM, chunk
from tests.support.sqlite_steps import steps


def _index(path: Path) -> SqliteChunkIndex:
    return SqliteChunkIndex(path / "chunks.db", path / "vectors", DIM, background_maintenance=False)


def _fill(index: SqliteChunkIndex, size: int, *, brain: str = "b1", start: int = 0) -> None:
    rng = np.random.default_rng(3)
    for first in range(start, start + size, 500):
        batch = [
            chunk(f"c{n}" if brain == "b1" else f"{brain}-{n}", f"note {n} about the kettle", brain_id=brain)
            for n in range(first, min(start + size, first + 500))
        ]
        index.upsert(batch, rng.standard_normal((len(batch), DIM)).astype(np.float32))


def _true_count(index: SqliteChunkIndex, brain: str) -> int:
    conn = index._db.get()
    return int(conn.execute("SELECT count(*) FROM chunks WHERE brain_id = ?", (brain,)).fetchone()[0])


def test_a_second_count_does_not_read_the_brain(tmp_path: Path) -> None:
    small, big = _index(tmp_path / "small"), _index(tmp_path / "big")
    try:
        _fill(small, 300)
        _fill(big, 3_000)
        assert (small.count("b1"), big.count("b1")) == (300, 3_000)
        few, counted_few = steps(small._db.get(), lambda: small.count("b1"))
        many, counted_many = steps(big._db.get(), lambda: big.count("b1"))
        assert (counted_few, counted_many) == (300, 3_000)
        assert many <= few * 1.5 + 20, (few, many)
    finally:
        small.close()
        big.close()


def test_every_change_is_seen_by_the_next_count(tmp_path: Path) -> None:
    index, other = _index(tmp_path), _index(tmp_path)  # `other`: another process on the same files
    try:
        _fill(index, 40)
        _fill(index, 5, brain="b2")
        assert index.count("b1") == 40
        changes = [
            lambda: _fill(index, 10, start=40),
            lambda: index.delete_chunks("b1", ["c0", "c1", "absent"]),
            lambda: index.upsert(
                [chunk("s1", "staged", document_id="up", active=False)], np.ones((1, DIM), dtype=np.float32)
            ),
            lambda: index.activate("b1", "up", ["s1"]),
            lambda: _fill(other, 7, start=100),
            lambda: other.delete_chunks("b1", ["c100"]),
            lambda: index.drop_brain("b1"),
            lambda: _fill(other, 3, start=500),
        ]
        for change in changes:
            change()
            assert index.count("b1") == _true_count(index, "b1")
            assert index.count("b2") == 5
        assert index.count("b1") == 3
        assert index.count("never") == 0
    finally:
        index.close()
        other.close()
