"""A process's first search of a brain reads the brain's vector file only when something wrote the
file since it was last verified (adapters/local/vector_checkpoint.py): counted as rows read back
to be summed. A file written into, cut short, replaced or deleted between processes is still read
in full at the first search, refused (IndexDamaged) and never answered from."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_health import IndexDamaged
from cairn.adapters.local.vector_store import VectorFile
from tests.contract.test_chunk_files import DIM, ROWS, VECTOR_DAMAGE, chunks, damage_garbage, top, vectors


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "chunks.sqlite3", tmp_path / "vectors"


def opened(files: tuple[Path, Path]) -> SqliteChunkIndex:
    return SqliteChunkIndex(files[0], files[1], DIM, background_maintenance=False)


@pytest.fixture
def summed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Rows of vector files read back to be summed, in this process."""
    read: list[int] = []
    crcs = VectorFile.crcs

    def counted(self: VectorFile, pieces: Sequence[tuple[int, int]], **options: Any) -> list[int]:
        read.append(sum(rows for _, rows in pieces))
        return crcs(self, pieces, **options)

    monkeypatch.setattr(VectorFile, "crcs", counted)
    yield read


@pytest.fixture
def written(files: tuple[Path, Path]) -> np.ndarray:
    """ROWS chunks written ten a commit by one process, which then stops."""
    index = opened(files)
    matrix = vectors(ROWS)
    for first in range(0, ROWS, 10):
        index.upsert(chunks(ROWS)[first : first + 10], matrix[first : first + 10])
    index.close()
    return matrix


def test_a_file_as_its_writer_left_it_is_not_read_at_the_first_search(
    files: tuple[Path, Path], written: np.ndarray, summed: list[int]
) -> None:
    index = opened(files)
    summed.clear()
    assert top(index, written[7], 1) == ["c7"]
    assert sum(summed) == 0  # ROWS before: every row read back and summed
    assert index.check("b1", reread=False).unsound_chunks == 0  # a start's check: none read either
    assert sum(summed) == 0
    assert index.check("b1").vector_rows == ROWS  # `cairn check` reads every row
    assert sum(summed) == ROWS


def test_appends_of_a_process_keep_the_file_known_to_the_next(
    files: tuple[Path, Path], written: np.ndarray, summed: list[int]
) -> None:
    index = opened(files)
    more = vectors(5, seed=3)
    index.upsert(chunks(ROWS + 5)[ROWS:], more)
    index.close()
    summed.clear()
    after = opened(files)
    assert top(after, more[2], 1) == [f"c{ROWS + 2}"]
    assert sum(summed) == 0


@pytest.mark.parametrize("case", sorted(VECTOR_DAMAGE))
def test_a_file_damaged_between_processes_is_read_in_full_and_refused(
    files: tuple[Path, Path], written: np.ndarray, case: str
) -> None:
    damage, _lost = VECTOR_DAMAGE[case]
    damage(files[1] / "b1.f32")
    with pytest.raises(IndexDamaged):
        top(opened(files), written[3])


def test_a_write_into_a_file_not_known_to_be_sound_leaves_it_unknown(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    """An append by a process that did not find the file as last verified (garbage written into it
    since) must not make the file look verified to the next process."""
    damage_garbage(23)(files[1] / "b1.f32")
    index = opened(files)
    index.upsert(chunks(ROWS + 1)[ROWS:], vectors(1, seed=5))  # no search yet: nothing checked
    index.close()
    with pytest.raises(IndexDamaged):
        top(opened(files), written[3])
