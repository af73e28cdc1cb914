"""Append-only float32 vector files, one per brain and epoch, read through a memory map.

A row is written once and never changed: re-upserting a chunk with another vector appends a new
row and the old one is simply no longer referenced (the chunk table holds each chunk's `vec_row`;
a chunk written again with the vector its row holds keeps that row: kept_vector_rows.py). Readers use
the current mapping without locks; appends and remaps are serialised per file. Compaction
(vector_compaction.py) copies the live rows into the next epoch's file and renumbers them.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import mmap
import os
import re
import threading
import weakref
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cairn.adapters.local.durable_dirs import fsync_directory, make_directories
from cairn.adapters.local.sqlite_files import move_aside
from cairn.domain.errors import InvalidInput
from cairn.ports.chunks import CheckStopped, Stop

log = logging.getLogger(__name__)
Rows = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float32]

# Above this share of a file's rows, one pass over the whole matrix beats gathering rows
# (gathering copies every selected row first).
_FULL_SCAN_SHARE = 0.25
# At most this many rows are read with pread rather than through the mapping: the index's
# candidates are scattered rows, and each fault on the mapping maps the kernel's fault-around
# (up to 64 KB of neighbouring cached pages) into the process, so RSS grew by ~24 KB a row read
# (785 MB after 300 searches at a million rows); pread copies only the row.
_PREAD_ROWS = 512
_CRC_BLOCK = 4 * 1024 * 1024
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,100}")


class VectorFileShrunk(Exception):
    """The file holds fewer rows than a read needs: cut short while in use (rows it had are lost).
    Raised before the mapping is touched, where reading past the file's end would kill the
    process (SIGBUS); the chunk index then checks the brain's file, which records the loss."""

    brain_id = ""  # the brain whose file it is, named by whoever knows it


def unit_rows(vectors: npt.ArrayLike) -> Floats:
    """float32 copy with every non-zero row scaled to length 1."""
    matrix = np.array(vectors, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


def query_unit(vector: npt.ArrayLike | None, dimension: int) -> Floats:
    """A query vector as one unit row; InvalidInput unless `dimension` finite floats."""
    array = np.asarray(vector, dtype=np.float32)
    if array.shape != (dimension,) or not np.isfinite(array).all():
        raise InvalidInput(f"query vector must be {dimension} finite floats")
    return unit_rows(array)[0]


def _dot(matrix: Floats, query: Floats) -> Floats:
    """matrix @ query without BLAS: OpenBLAS spreads even a 1,500-row product over threads, and
    on a busy 2-core machine its p95 was 8 ms against 0.3 ms here (at 100k rows, equal)."""
    return np.einsum("ij,j->i", matrix, query)


def stem(brain_id: str, epoch: int = 0) -> str:
    """The file name, without suffix, of a brain's vectors (`.f32`) and index (`.faiss`) in an
    epoch; `~` cannot occur in a brain id's name, so epochs never collide with another brain."""
    name = (
        brain_id if _SAFE_NAME.fullmatch(brain_id) else f"h-{hashlib.sha256(brain_id.encode()).hexdigest()}"
    )
    return name if epoch == 0 else f"{name}~{epoch}"


def file_name(brain_id: str, epoch: int = 0) -> str:
    return f"{stem(brain_id, epoch)}.f32"


class VectorFile:
    """The vectors of one brain: `rows × dimension` float32, little-endian, row-major."""

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        self._row_bytes = 4 * dimension
        self._lock = threading.Lock()
        self._matrix: Floats = np.zeros((0, dimension), dtype=np.float32)
        self._fd: int | None = None
        if path.exists() and not path.is_file():  # a directory in its place: as if it were deleted
            moved = move_aside([path])
            log.warning("%s is not a file: moved aside (%s), its vectors rebuilt", path.name, moved[0].name)
        if path.exists():
            try:
                with path.open("r+b") as fh:
                    fcntl.flock(fh, fcntl.LOCK_EX)
                    # A crash mid-append can leave a partial row; drop it so rows stay aligned.
                    size = fh.seek(0, os.SEEK_END)
                    if size % self._row_bytes:
                        fh.truncate(size - size % self._row_bytes)
                self._remap()
            except FileNotFoundError:  # deleted since (its brain dropped, its epoch compacted away)
                self._matrix = np.zeros((0, dimension), dtype=np.float32)

    @property
    def rows(self) -> int:
        return int(self._matrix.shape[0])

    def stored_rows(self) -> int:
        """Rows in the file now, whoever appended them (`rows` is what this process has mapped);
        0 when there is no file (never made, or its brain dropped meanwhile)."""
        try:
            return self.path.stat().st_size // self._row_bytes
        except FileNotFoundError:
            return 0

    def append(self, vectors: Floats, *, floor: int = 0) -> Rows:
        """Write rows at the end of the file, durably (fsynced before the chunk rows that point
        at them commit); returns their row numbers. A file holding fewer than `floor` rows (it
        lost some) is first padded with zero rows up to it, so no new row takes a lost number."""
        data = np.ascontiguousarray(vectors, dtype="<f4").tobytes()
        with self._lock:
            created = not self.path.exists()
            with self.path.open("ab") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)  # another process may append to the same brain
                first = fh.seek(0, os.SEEK_END) // self._row_bytes
                if first * self._row_bytes != fh.tell():  # a crash left a partial row: drop it
                    fh.truncate(first * self._row_bytes)
                if first < floor:
                    fh.write(bytes((floor - first) * self._row_bytes))
                    first = floor
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if created:
                fsync_directory(self.path.parent)
            self._remap()
        return np.arange(first, first + len(data) // self._row_bytes, dtype=np.int64)

    def pad_to(self, rows: int) -> None:
        """Grow the file with zero rows to `rows` rows (a file that lost rows its chunks point at:
        rows appended later must not take the lost rows' numbers)."""
        with self._lock, self.path.open("ab") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            have = fh.seek(0, os.SEEK_END) // self._row_bytes
            fh.truncate(have * self._row_bytes)
            if have < rows:
                fh.write(bytes((rows - have) * self._row_bytes))
                fh.flush()
                os.fsync(fh.fileno())
            self._remap()

    def crc(self, first_row: int, rows: int) -> int:
        """CRC-32 of rows `[first_row, first_row + rows)` as the file holds them (fewer bytes when
        the file is shorter: the sum then differs)."""
        return self.crcs([(first_row, rows)])[0]

    def crcs(self, pieces: Sequence[tuple[int, int]], *, stop: Stop | None = None) -> list[int]:
        """`crc` of each (first row, rows), the file opened once; 0 for every piece when there is
        no file. CheckStopped as soon as `stop` says so (before each piece and block)."""
        size = self._row_bytes
        sums: list[int] = []
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return [0] * len(pieces)
        with fh:
            for first_row, rows in pieces:
                fh.seek(first_row * size)
                crc, left = 0, rows * size
                while left > 0:
                    if stop is not None and stop():
                        raise CheckStopped()
                    block = fh.read(min(_CRC_BLOCK, left))
                    if not block:
                        break
                    crc = zlib.crc32(block, crc)
                    left -= len(block)
                sums.append(crc)
        return sums

    def span(self, first_row: int, rows: int) -> bytes:
        """The bytes of rows `[first_row, first_row + rows)` as the file holds them now (fewer
        when it ends before)."""
        size, fd = self._row_bytes, self._descriptor()
        parts: list[bytes] = []
        offset, left = first_row * size, rows * size
        while left > 0:
            part = os.pread(fd, left, offset)
            if not part:
                break
            parts.append(part)
            offset, left = offset + len(part), left - len(part)
        return b"".join(parts)

    def similarities(self, rows: Rows, query: Floats) -> Floats:
        """Dot product of each given row with `query` (cosine when both are unit length)."""
        if rows.size == 0:
            return np.zeros(0, dtype=np.float32)
        if rows.size <= _PREAD_ROWS:
            return _dot(self._pread(rows), query)
        matrix = self._current(rows)
        if rows.size >= _FULL_SCAN_SHARE * matrix.shape[0]:
            return _dot(matrix, query)[rows]
        return _dot(matrix[rows], query)

    def head(self, rows: int) -> Floats:
        """The first `rows` rows as a read-only view of the mapping (nothing is copied)."""
        return self._current(np.array([rows - 1], dtype=np.int64))[:rows] if rows else self._matrix[:0]

    def read(self, rows: Rows) -> Floats:
        """A copy of the given rows."""
        if rows.size <= _PREAD_ROWS:
            return self._pread(rows)
        matrix = self._current(rows)
        return np.array(matrix[rows], dtype=np.float32)

    def _pread(self, rows: Rows) -> Floats:
        out = np.empty((rows.size, self.dimension), dtype="<f4")
        size = self._row_bytes
        fd = self._descriptor()
        for i, row in enumerate(rows.tolist()):
            data = os.pread(fd, size, row * size)
            if len(data) != size:
                raise VectorFileShrunk(f"vector row {row} is past the end of {self.path.name}")
            out[i] = np.frombuffer(data, dtype="<f4")
        return out.astype(np.float32, copy=False)

    def _descriptor(self) -> int:
        """One read-only descriptor for the file's life (it keeps a compacted-away file readable,
        as the mapping does), closed when this object is collected."""
        if self._fd is None:
            with self._lock:
                if self._fd is None:
                    fd = os.open(self.path, os.O_RDONLY)
                    weakref.finalize(self, os.close, fd)
                    self._fd = fd
        return self._fd

    def _current(self, rows: Rows) -> Floats:
        """The mapped matrix, remapped first if another process appended rows past it, and only
        while the file still holds every mapped row (VectorFileShrunk when it no longer does)."""
        matrix = self._matrix
        if rows.size and int(rows.max()) >= matrix.shape[0]:
            with self._lock:
                self._remap()
            matrix = self._matrix
        if matrix.shape[0] and os.fstat(self._descriptor()).st_size < matrix.shape[0] * self._row_bytes:
            raise VectorFileShrunk(f"{self.path.name} is shorter than the rows mapped from it")
        return matrix

    def _remap(self) -> None:
        rows = self.path.stat().st_size // self._row_bytes
        if rows == 0:
            self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
            return
        mapped = np.memmap(self.path, dtype="<f4", mode="r", shape=(rows, self.dimension))
        # Searches read a few scattered rows (the index's candidates): without this each one
        # faults in the kernel's read-ahead around it, and RSS grows toward the file's size.
        mapped._mmap.madvise(mmap.MADV_RANDOM)  # type: ignore[attr-defined]
        self._matrix = np.asarray(mapped)


class VectorStore:
    """Lazily opened VectorFile per brain under one directory."""

    def __init__(self, directory: Path, dimension: int) -> None:
        self.directory = directory
        self.dimension = dimension
        make_directories(directory)
        self._files: dict[tuple[str, int], VectorFile] = {}
        self._lock = threading.Lock()

    def file(self, brain_id: str, epoch: int = 0) -> VectorFile:
        key = (brain_id, epoch)
        found = self._files.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._files.get(key)
            if found is None:
                found = VectorFile(self.directory / file_name(brain_id, epoch), self.dimension)
                self._files[key] = found
            return found

    def forget(self, brain_id: str, epoch: int) -> None:
        """Drop the open file of one epoch (its file is being deleted)."""
        with self._lock:
            self._files.pop((brain_id, epoch), None)

    def forget_brain(self, brain_id: str) -> None:
        """Drop the open files of every epoch of a brain (it is being dropped)."""
        with self._lock:
            for key in [k for k in self._files if k[0] == brain_id]:
                del self._files[key]

    def files_of(self, brain_id: str) -> dict[Path, int]:
        """Every file of the brain in the directory, whatever its epoch (vectors, ANN indexes and
        indexes or sums left half-written), with that epoch."""
        name = re.compile(
            rf"{re.escape(stem(brain_id))}(?:~(\d+))?\.(?:f32|faiss(?:\.sum)?(?:\.(?:\d+\.)*partial)?)"
        )
        found: dict[Path, int] = {}
        for path in self.directory.glob(f"{stem(brain_id)}*"):  # a stem holds no glob syntax
            match = name.fullmatch(path.name)
            if match is not None:
                found[path] = int(match.group(1) or 0)
        return found

    def retire(self, brain_id: str, epoch: int) -> None:
        """Forget and delete the files of a brain's epochs before `epoch` (readers still holding
        a mapping keep it: the pages stay until they drop it)."""
        with self._lock:
            for key in [k for k in self._files if k[0] == brain_id and k[1] < epoch]:
                del self._files[key]
        for old in range(epoch):
            self.directory.joinpath(file_name(brain_id, old)).unlink(missing_ok=True)
