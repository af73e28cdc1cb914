"""The embedded backend: SQLite, files and ONNX in one data directory.

Its databases are looked at before they are trusted (adapters/local/sqlite_files.py): the chunk
index is derived data, so a damaged one is moved aside and rebuilt from the documents; the
records and the job queue are not, so a damaged one is refused with what to do about it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from cairn.bootstrap.models import distillers_for, generator_for, local_embedder, reranker_for
from cairn.config import Settings
from cairn.container import Adapters
from cairn.domain.errors import DamagedStore, InvalidInput
from cairn.ports.clock import SystemClock

if TYPE_CHECKING:
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex

log = logging.getLogger(__name__)
T = TypeVar("T")

RECORDS, CHUNKS, JOBS, VECTORS = "records.sqlite3", "chunks.sqlite3", "jobs.sqlite3", "vectors"
CHANGES = "changes.sqlite3"
AUDIT_SPILL = "audit-kept.jsonl"
STORE_SECRET = "store-secret.key"
RECORDS_ADVICE = (
    "restore it (with its -wal file) from a backup, or `cairn import` archives of its brains "
    "(`cairn export`) into a new data directory"
)
# Refused rather than set aside: a queued job was acknowledged (202) and its brain's job log and
# pending ingests name it, so dropping the queue is the operator's decision, not the server's.
JOBS_ADVICE = (
    "restore it (with its -wal file) from a backup, or move it and its -wal and -shm files aside to "
    "start with an empty job queue (the jobs queued and not finished are then lost)"
)


def local_adapters(settings: Settings) -> Adapters:
    from cairn.adapters.local.audit_spill import FileAuditSpill
    from cairn.adapters.local.durable_dirs import make_directories
    from cairn.adapters.local.file_blobs import FileBlobStore
    from cairn.adapters.local.sqlite_change_log import SqliteChangeLog
    from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
    from cairn.adapters.local.sqlite_records import SqliteRecordStore
    from cairn.adapters.local.store_secret import FileStoreSecret

    data = settings.data_dir
    _refuse_files_for_directories(data, settings.resolved_ingest_root)
    make_directories(data)
    # HTTP memory_ingest_file reads only below it and names it when refusing: it should exist.
    settings.resolved_ingest_root.mkdir(parents=True, exist_ok=True)
    embedder = local_embedder(settings)
    clock = SystemClock()
    extractor, reflector = distillers_for(settings)
    refuse_lost_records(data)
    records = _opened(data / RECORDS, SqliteRecordStore, RECORDS_ADVICE)
    jobs = _opened(
        data / JOBS,
        lambda path: SqliteJobRunner(
            path,
            clock,
            lease_s=settings.job_lease_s,
            max_attempts=settings.job_max_attempts,
            max_handed_over_s=settings.job_max_handed_over_s,
            workers=settings.job_workers,
        ),
        JOBS_ADVICE,
    )
    return Adapters(
        records=records,
        blobs=FileBlobStore(data / "blobs"),
        chunks=_chunk_index(data, embedder.dimension),
        embedder=embedder,
        clock=clock,
        generator=generator_for(settings, embedder),
        jobs=jobs,
        extractor=extractor,
        reflector=reflector,
        store_secret=FileStoreSecret(data / STORE_SECRET),
        reranker=reranker_for(settings),
        changes=SqliteChangeLog(data / CHANGES),
        audit_spill=FileAuditSpill(data / AUDIT_SPILL),
    )


def check_local_files(settings: Settings, *, pages: bool = True, set_aside: bool = True) -> None:
    """What `cairn check` / `cairn compact` do before opening the store: read every page of its
    databases (`PRAGMA quick_check`). A damaged chunk index is moved aside (to be rebuilt);
    damaged records or jobs raise DamagedStore. `cairn serve` (`pages` False) only refuses what
    is not a file: reading every page of a million-chunk store takes longer than its start may
    (docs/PERFORMANCE.md), so it finds a damaged page when it reads one (a 503 `damaged_store`,
    or at open, where a damaged chunk index is set aside all the same). Other commands only look
    at what opening shows (local_adapters). Not `set_aside` (`cairn check --dry-run`), a damaged
    chunk index is refused like the others, and nothing is moved."""
    from cairn.adapters.local import sqlite_files

    if settings.backend != "local":
        return
    data = settings.data_dir
    refuse_lost_records(data)
    for name, advice in ((RECORDS, RECORDS_ADVICE), (JOBS, JOBS_ADVICE)):
        _refuse_odd_files(data / name, advice)
        found = sqlite_files.damage(data / name) if pages else None
        if found is not None:
            raise _refusal(data / name, found, advice)
    found = sqlite_files.damage(data / CHUNKS) if pages else None
    if found is not None and not set_aside:
        raise _refusal(data / CHUNKS, found, INDEX_ADVICE)
    if found is not None:
        _set_index_aside(data, found)


INDEX_ADVICE = "`cairn check` without --dry-run moves it aside and rebuilds it from the documents"


def _refuse_odd_files(path: Path, advice: str) -> None:
    """A directory (or other non-file) where the database or its log should be: refused. SQLite
    would open the database read-only past an -shm it cannot open, and fail every write."""
    from cairn.adapters.local import sqlite_files

    odd = sqlite_files.not_a_file(path)
    if odd is not None and odd.name.endswith("-shm"):  # SQLite's shared-memory index, made again
        advice = f"remove {odd.name}: SQLite makes it again from the database and its -wal file"
    if odd is not None:
        raise _refusal(path, sqlite_files.described(odd), advice)


DIRECTORY_ADVICE = {
    "blobs": "it holds the documents' content: restore the directory from a backup",
    VECTORS: "move the file aside: the search index's vector files are made again from the documents",
}


def _refuse_files_for_directories(data: Path, ingest_root: Path) -> None:
    """Something other than a directory where the store keeps one: refused in one line naming it
    (making the directory would fail with a traceback)."""
    wanted = {data: "the data directory", data / "blobs": "", data / VECTORS: "", ingest_root: ""}
    for path, what in wanted.items():
        if (path.exists() or path.is_symlink()) and not path.is_dir():
            advice = DIRECTORY_ADVICE.get(path.name if path.parent == data else "", "move the file aside")
            raise DamagedStore(f"{what or path.name} ({path.resolve()}) is not a directory: {advice}")
    for path, what in ((data, "the data directory"), (ingest_root, "the ingest root")):
        blocking = next((p for p in path.parents if p.exists() or p.is_symlink()), None)
        if blocking is not None and not blocking.is_dir():
            raise InvalidInput(
                f"{what} {path} cannot be made: {blocking} is a file, not a directory; "
                "choose another data directory (--data-dir or CAIRN_DATA_DIR)"
            )


def refuse_lost_records(data: Path) -> None:
    """The records database missing or empty (a file system can leave a file of 0 bytes after a
    crash) where the store holds documents' content or chunks: refused, never opened as a new,
    empty store over the old data (which would answer every brain as gone and accept new ones)."""
    path = data / RECORDS
    if path.exists() and path.stat().st_size > 0:
        return
    holds = _holds_chunks(data / CHUNKS) or next(
        (p for p in (data / "blobs").rglob("*") if p.is_file()), None
    )
    if holds:
        state = "empty (0 bytes)" if path.exists() else "missing"
        raise _refusal(path, f"{state}, while {data.resolve()} holds stored content", RECORDS_ADVICE)


def _holds_chunks(path: Path) -> bool:
    """Whether the chunk database holds any brain's chunks (False when it cannot be read: a
    damaged chunk index is set aside and rebuilt anyway)."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
        try:
            return conn.execute("SELECT 1 FROM brain_state LIMIT 1").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def _opened(path: Path, open_: Callable[[Path], T], advice: str) -> T:
    from cairn.adapters.local import sqlite_files

    _refuse_odd_files(path, advice)
    try:
        return open_(path)
    except sqlite3.DatabaseError as exc:
        if not sqlite_files.is_damage(exc):
            raise
        raise _refusal(path, str(exc), advice) from None


def _refusal(path: Path, found: str, advice: str) -> DamagedStore:
    return DamagedStore(f"{path.name} in {path.parent.resolve()} is damaged ({found}): {advice}")


def _chunk_index(data: Path, dimension: int) -> SqliteChunkIndex:
    from cairn.adapters.local import sqlite_files
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex

    def index() -> SqliteChunkIndex:
        return SqliteChunkIndex(data / CHUNKS, data / VECTORS, dimension)

    odd = sqlite_files.not_a_file(data / CHUNKS)
    found = None if odd is None else sqlite_files.described(odd)
    if found is None:
        try:
            return index()
        except sqlite3.DatabaseError as exc:
            if not sqlite_files.is_damage(exc):
                raise
            found = str(exc)
    _set_index_aside(data, found)
    return index()


def _set_index_aside(data: Path, found: str) -> None:
    """The chunk index is derived from the records and blobs: moved aside, with the vector files
    its rows point into, it starts empty and every brain's documents are indexed again (in the
    background by `cairn serve`, or by `cairn check`), as when it is deleted."""
    from cairn.adapters.local import sqlite_files

    moved = sqlite_files.move_aside([*sqlite_files.files_of(data / CHUNKS), data / VECTORS])
    log.warning(
        "the search index %s in %s is damaged (%s): moved aside (%s) and rebuilt from the documents "
        "(`cairn serve` does it in the background, `cairn check` at once); delete those once it is",
        CHUNKS,
        data.resolve(),
        found,
        ", ".join(path.name for path in moved),
    )
