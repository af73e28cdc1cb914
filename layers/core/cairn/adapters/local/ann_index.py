"""Approximate nearest neighbours over one brain's vector rows (faiss HNSW, docs/ANN.md).

An index's ids are the brain's vector rows. It has two parts:

- the **base**, `IndexHNSWSQ` with an 8-bit trained quantizer over rows `[0, base_rows)`, written
  by compaction (vector_compaction.py) and opened memory-mapped and read-only, so many searches
  may use it at once (its file is read through the page cache first when it is not there);
- the **delta**, an in-memory `IndexHNSWFlat` over the rows appended since, `[base_rows,
  indexed_rows)`, grown by every write (`add`). faiss crashes when a search runs while rows are
  added, so the delta is searched and grown under one lock.

Rows past `indexed_rows` (written by another process, or not yet caught up) and parts whose
allowed rows are few are scored exactly by the caller; deleted or filtered-out rows never pass
the allowed bitmap, so nothing is removed from the index until compaction rebuilds it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import weakref
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cairn.adapters.local import page_cache
from cairn.adapters.local.durable_dirs import fsync_directory
from cairn.adapters.local.vector_checkpoint import Identity, identity
from cairn.adapters.local.vector_store import Floats, Rows
from cairn.ports.chunks import CheckStopped, Stop

Mask = npt.NDArray[np.bool_]
M = 16
EF_CONSTRUCTION = 128
TRAIN_ROWS = 100_000
_local = threading.local()
log = logging.getLogger(__name__)


def _faiss() -> Any:
    """faiss, imported on first use (it is not installed where vectors live in OpenSearch), with
    one OpenMP thread for this thread's searches: a single query gains nothing from more."""
    import faiss

    if not getattr(_local, "single", False):
        faiss.omp_set_num_threads(1)
        _local.single = True
    return faiss


def ef_search(rows: int, pool: int, share: float) -> int:
    """efSearch for recall@10 >= 0.98 with the candidates re-scored exactly (bench/search_1m.py):
    at least 400, which real questions need against real text (the LoCoMo questions in a 13,392-
    chunk brain of real documents: ef 100 gave 0.958, 200 0.978, 400 0.9995), and 96 × 8 per
    tenfold rows above 100,000 (clustered vectors: ef 96 gave 1.000 at 100,000 rows; at a million
    384 gave 0.979, 512 0.985, 768 0.992); doubled when under a tenth of the rows may be
    returned; never below the pool asked for."""
    scale = max(0.0, math.log10(max(rows, 1) / 100_000))
    ef = max(400.0, 96 * 8**scale)
    if share < 0.1:
        ef *= 2
    return int(max(ef, pool))


class AnnShrunk(Exception):
    """The index file was cut short while mapped: not read (that would kill the process)."""


class BrainAnn:
    """The index of one brain's vector file in one epoch."""

    def __init__(self, path: Path, dimension: int) -> None:
        faiss = _faiss()
        self.path = path
        self.dimension = dimension
        if path.exists():
            # Mapped cold, a first search faults in the pages it touches one read at a time (1.2 s
            # at 100,000 rows, 74 ms with the file read through first: bench ann-file-check).
            page_cache.read_in(path)
        self._base: Any = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC) if path.exists() else None
        self.base_rows = int(self._base.ntotal) if self._base is not None else 0
        # The mapped file as opened: cut short in place later, reading it would kill the process.
        self._fd = os.open(path, os.O_RDONLY) if self._base is not None else None
        self._size = os.fstat(self._fd).st_size if self._fd is not None else 0
        if self._fd is not None:
            weakref.finalize(self, os.close, self._fd)
        self._delta: Any = faiss.IndexHNSWFlat(dimension, M, faiss.METRIC_INNER_PRODUCT)
        self._delta.hnsw.efConstruction = EF_CONSTRUCTION
        self._lock = threading.Lock()

    @property
    def indexed_rows(self) -> int:
        return self.base_rows + int(self._delta.ntotal)

    @property
    def delta_rows(self) -> int:
        return int(self._delta.ntotal)

    def add(self, first_row: int, vectors: Floats) -> None:
        """Index rows `first_row, first_row + 1, …`; rows already indexed are skipped, and rows
        after a gap are left to be scored exactly until the gap is caught up."""
        with self._lock:
            skip = self.indexed_rows - first_row
            if skip < 0 or skip >= len(vectors):
                return
            self._delta.add(np.ascontiguousarray(vectors[skip:], dtype=np.float32))

    def search(self, query: Floats, allowed: Mask, pool: int, exact_max: int) -> tuple[Rows, Rows]:
        """(candidate rows found by the graph, allowed rows to score exactly) among the indexed
        rows: a part with at most `exact_max` allowed rows is left to exact scoring. AnnShrunk when
        the index file was cut short since it was opened."""
        if self._fd is not None and os.fstat(self._fd).st_size < self._size:
            raise AnnShrunk(f"{self.path.name} is shorter than when it was opened")
        base = _part(self._base, 0, self.base_rows, query, allowed, pool, exact_max)
        with self._lock:
            delta = _part(self._delta, self.base_rows, self.delta_rows, query, allowed, pool, exact_max)
        return np.concatenate([base[0], delta[0]]), np.concatenate([base[1], delta[1]])


def _part(
    index: Any, first: int, count: int, query: Floats, allowed: Mask, pool: int, exact_max: int
) -> tuple[Rows, Rows]:
    """(graph candidates, rows to score exactly) among the rows `[first, first + count)`."""
    empty = np.zeros(0, dtype=np.int64)
    if index is None or count == 0:
        return empty, empty
    part = allowed[first : first + count]
    if part.size < count:  # rows past the caller's snapshot are not allowed
        part = np.concatenate([part, np.zeros(count - part.size, dtype=np.bool_)])
    allowed_count = int(np.count_nonzero(part))
    if allowed_count == 0:
        return empty, empty
    if allowed_count <= exact_max:
        return empty, np.flatnonzero(part) + first
    ef = ef_search(count, pool, allowed_count / count)
    return _graph_search(index, query, part, pool, ef) + first, empty


def _graph_search(index: Any, query: Floats, allowed: Mask, pool: int, ef: int) -> Rows:
    faiss = _faiss()
    bits = np.packbits(allowed, bitorder="little")  # kept referenced until the search returns
    selector = faiss.IDSelectorBitmap(bits.size, faiss.swig_ptr(bits))  # size in bytes
    params = faiss.SearchParametersHNSW(efSearch=ef, sel=selector)
    _distances, ids = index.search(query.reshape(1, -1), pool, params=params)
    rows: Rows = ids[0][ids[0] >= 0].astype(np.int64)
    return rows


def build(
    vectors: Floats, path: Path, *, threads: int, stop: threading.Event | None = None, extend: bool = False
) -> bool:
    """Write a base index over `vectors` (row i = id i) to `path` atomically; False if `stop`
    was set before it finished (nothing is written then). With `extend`, the index already at
    `path` (over a prefix of the same rows) is read whole and only the rows past it are added,
    keeping its trained quantizer: cheaper than a rebuild when nothing was deleted."""
    faiss = _faiss()
    rows, dimension = vectors.shape
    if extend:
        index = faiss.read_index(str(path))
    else:
        index = faiss.IndexHNSWSQ(dimension, faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EF_CONSTRUCTION
    faiss.omp_set_num_threads(threads)
    try:
        if not extend:
            sample = vectors
            if rows > TRAIN_ROWS:
                picked = np.sort(np.random.default_rng(rows).choice(rows, TRAIN_ROWS, replace=False))
                sample = vectors[picked]
            index.train(np.ascontiguousarray(sample, dtype=np.float32))
        for first in range(int(index.ntotal), rows, 20_000):
            if stop is not None and stop.is_set():
                return False
            index.add(np.ascontiguousarray(vectors[first : first + 20_000], dtype=np.float32))
    finally:
        faiss.omp_set_num_threads(1)
    partial = path.with_name(path.name + ".partial")
    faiss.write_index(index, str(partial))
    with partial.open("rb") as written:
        os.fsync(written.fileno())
    size, crc = _write_sum(path, partial, rows)
    partial.replace(path)
    fsync_directory(path.parent)
    # Its bytes are those just summed: no process need read them again (see `verified`).
    now = identity(path)
    if now is not None and now[1] == size:
        _rewrite_sum(sum_path(path), identity(sum_path(path)), _sum(rows, size, crc, now))
    return True


# -- the index file's sum -------------------------------------------------------------------------


def sum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sum")


def _sum(rows: int, size: int, crc: int, checked: Identity | None = None) -> dict[str, Any]:
    return {"rows": rows, "bytes": size, "crc": crc} | ({"checked": list(checked)} if checked else {})


class _Entry:
    """One index's sum as recorded: rows, bytes, CRC-32, and the identity it was last found with."""

    def __init__(self, recorded: dict[str, Any]) -> None:
        self.rows, self.size, self.crc = int(recorded["rows"]), int(recorded["bytes"]), int(recorded["crc"])
        self.checked = recorded.get("checked")

    def as_recorded(self) -> dict[str, Any]:
        return _sum(self.rows, self.size, self.crc) | ({"checked": self.checked} if self.checked else {})


def _replaced_entry(summed: Path) -> _Entry | None:
    """The sum now beside the index about to be replaced, None when there is none to read."""
    try:
        return _Entry(json.loads(summed.read_text()))
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return None


def _write_sum(path: Path, built: Path, rows: int) -> tuple[int, int]:
    """Record (rows, bytes, CRC-32) of the index about to replace `path` beside it, and return
    (bytes, CRC-32). Written and renamed into place before the index is, carrying the sum of the
    index it replaces (`before`): until the index's own rename, and after a crash between the two,
    the old index is still what a sum beside it says, never a wrong index taken as sound."""
    size, crc = file_crc(built)
    summed = sum_path(path)
    replaced = _replaced_entry(summed) if built != path else None
    content = _sum(rows, size, crc) | ({"before": replaced.as_recorded()} if replaced else {})
    partial = summed.with_name(summed.name + ".partial")
    partial.write_text(json.dumps(content))
    with partial.open("rb") as written:
        os.fsync(written.fileno())
    partial.replace(summed)
    return size, crc


def verified(path: Path, *, adopt: bool = True, reread: bool = False, stop: Stop | None = None) -> bool:
    """Whether the index at `path` is whole and is what its sum says. An index built before sums
    were kept (no sum beside it) is read in full once: if faiss reads it, its sum is recorded.

    The file is read only when it is not as last verified: a full read that found it sound
    records its identity (inode, size, mtime, ctime, as vector_checkpoint.py does for a vector
    file) in its sum, and a later first use that finds that identity reads none of it; anything
    that wrote, cut, replaced or copied the file since moved one of them. `reread` reads it
    whatever its identity (`cairn check`, `cairn serve`'s warm-up: what finds a disk's own
    changes), and one found unsound loses its recorded identity. CheckStopped when `stop` says so
    while it is read.

    A compaction replaces the sum, then the index: an index that is what the sum it replaced said
    (`before`) is sound, and a pair found not to match after either was replaced while it was
    judged is judged once more, so a first use during those renames never takes a sound index for
    damaged (and has it rebuilt)."""
    sound, settled = _judged(path, adopt, reread, stop)
    if not sound and not settled:
        sound, _ = _judged(path, adopt, reread, stop)
    return sound


def _judged(path: Path, adopt: bool, reread: bool, stop: Stop | None) -> tuple[bool, bool]:
    """(sound, settled): `settled` False when the sum or the index was replaced while judged."""
    summed = sum_path(path)
    sum_as_read = identity(summed)
    try:
        recorded = json.loads(summed.read_text())
        entry = _Entry(recorded)
        before = _Entry(recorded["before"]) if "before" in recorded else None
    except FileNotFoundError:
        return adopt and _adopted(path), True
    except (OSError, ValueError, KeyError, TypeError, OverflowError):  # 1e999 parses as infinity
        return False, True
    found = identity(path)
    if found is None or entry.rows < 0:
        return False, identity(summed) == sum_as_read and identity(path) == found
    if not reread:
        for known in (entry, before):
            if known is not None and found[1] == known.size and known.checked == list(found):
                return True, True
    read: tuple[int, int] | None = None
    try:
        if found[1] == entry.size:
            read = file_crc(path, stop)
        sound = read == (entry.size, entry.crc)
        if not sound and before is not None and found[1] == before.size:
            read = read or file_crc(path, stop)
            if read == (before.size, before.crc) and identity(path) == found:
                return True, True  # the index the summed one replaces (or was to, before a crash)
    except OSError:
        return False, True
    if not sound and (identity(summed) != sum_as_read or identity(path) != found):
        return False, False
    now = found if sound and identity(path) == found else None  # written while read: not known
    if (now is None and entry.checked is not None) or (now is not None and entry.checked != list(now)):
        _rewrite_sum(summed, sum_as_read, _sum(entry.rows, entry.size, entry.crc, now))
    return sound, True


def _rewrite_sum(summed: Path, as_read: Identity | None, content: dict[str, Any]) -> None:
    """Replace the sum file with `content` unless it was replaced since it was read (a compaction
    wrote the next index's); a sum that cannot be written is left as it was (the index is read in
    full again at the next first use). The window between that look and the rename is short: a
    compaction's new sum replaced inside it is lost, and its index, no longer matching the sum
    left, is taken as damaged and built again; a damaged index is never taken as sound."""
    partial = summed.with_name(f"{summed.name}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        partial.write_text(json.dumps(content))
        with partial.open("rb") as written:
            os.fsync(written.fileno())
        if identity(summed) == as_read:
            partial.replace(summed)
    except OSError:
        log.warning("could not record that a vector index was checked", exc_info=True)
    finally:
        partial.unlink(missing_ok=True)


def _adopted(path: Path) -> bool:
    try:
        index = _faiss().read_index(str(path))
    except (RuntimeError, OSError):
        return False
    _write_sum(path, path, int(index.ntotal))
    return True


def file_crc(path: Path, stop: Stop | None = None) -> tuple[int, int]:
    """(size in bytes, CRC-32) of a whole file; CheckStopped when `stop` says so meanwhile."""
    crc = size = 0
    with path.open("rb") as fh:
        while block := fh.read(4 * 1024 * 1024):
            if stop is not None and stop():
                raise CheckStopped("the process is stopping")
            crc = zlib.crc32(block, crc)
            size += len(block)
    return size, crc
