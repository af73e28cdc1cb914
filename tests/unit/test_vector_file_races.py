"""A vector file deleted while a VectorFile is being made for it (its brain dropped, or its epoch
compacted away, by another thread or process) reads as a file that was never made, as every other
reader of a vanished file does (FileNotFoundError caught where the rows are read): before, the
FileNotFoundError of the open escaped from a search's first check of the brain."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

from cairn.adapters.local import brain_erasure
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_store import VectorStore
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter, ChunkQuery

DIM = 4
NOW = datetime(2026, 12, 6, tzinfo=UTC)


def vanishing_on_open(monkeypatch: pytest.MonkeyPatch, dropping: Path | None = None) -> list[str]:
    """Delete a vector file just after a VectorFile saw it exist, as a dropping thread would (and,
    given the chunk database, drop the brain's rows, as another process's drop_brain does)."""
    vanished: list[str] = []
    real_open = Path.open

    def open_after_it_vanished(self: Path, *args: Any, **kwargs: Any) -> IO[Any]:
        if self.suffix == ".f32" and args and args[0] == "r+b":
            if dropping is not None:
                with sqlite3.connect(dropping, isolation_level=None) as conn:
                    conn.execute("BEGIN IMMEDIATE")
                    brain_erasure.drop_rows(conn, "b", 0)
                    conn.execute("COMMIT")
            self.unlink(missing_ok=True)
            vanished.append(self.name)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_after_it_vanished)
    return vanished


def test_a_file_deleted_as_it_is_opened_reads_as_never_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = VectorStore(tmp_path, DIM)
    store.file("b", 0).append(np.eye(DIM, dtype=np.float32))
    store.forget_brain("b")
    vanished = vanishing_on_open(monkeypatch)
    file = store.file("b", 0)
    assert vanished == ["b.f32"]
    assert (file.rows, file.stored_rows()) == (0, 0)
    with pytest.raises(FileNotFoundError):  # what readers of a vanished file catch
        file.similarities(np.array([0], dtype=np.int64), np.eye(DIM, dtype=np.float32)[0])


def test_a_search_racing_its_brains_drop_answers_with_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
    try:
        chunk = Chunk(
            id="c", brain_id="b", document_id="d", path="notes/d.md", ordinal=0, text="grebe", created_at=NOW
        )
        index.upsert([chunk], np.eye(DIM, dtype=np.float32)[:1])
        index.close()  # a fresh process: the brain's file is opened by the search's first check
        index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
        vanished = vanishing_on_open(monkeypatch, dropping=tmp_path / "chunks.db")
        query = ChunkQuery(text="grebe", vector=np.eye(DIM)[0].tolist(), filter=ChunkFilter(("b",)), top_k=5)
        assert index.search(query) == [] and vanished == ["b.f32"]
    finally:
        index.close()
