"""A full disk and a damaged database, as the embedded store's own errors: SQLite's and the OS's
errors read by `storage_failure`, and raised so by the store's write paths (records, the chunk
index's and the job queue's transactions, blob puts), which leave nothing half-done behind."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from cairn.adapters.local import file_blobs
from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.domain.errors import DamagedStore, StorageFull, Unavailable, storage_failure
from cairn.ports.records import Item

BIG = {"text": "x" * 200_000}


def _full(path: Path) -> sqlite3.Error:
    """SQLite's own "database or disk is full": a database allowed no more pages than it has."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.execute(f"PRAGMA max_page_count={conn.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(sqlite3.Error) as caught:
        conn.execute("INSERT INTO t VALUES (?)", ("y" * 100_000,))
    return caught.value


def test_sqlite_and_os_errors_are_read_as_what_they_mean(tmp_path: Path) -> None:
    assert isinstance(storage_failure(_full(tmp_path / "full.db")), StorageFull)
    assert isinstance(storage_failure(OSError(errno.ENOSPC, "No space left on device")), StorageFull)
    assert isinstance(storage_failure(OSError(errno.EDQUOT, "Disk quota exceeded")), StorageFull)

    sqlite3.connect(tmp_path / "ro.db").execute("CREATE TABLE t (x)")
    read_only = sqlite3.connect(f"file:{tmp_path / 'ro.db'}?mode=ro", uri=True)
    with pytest.raises(sqlite3.Error) as caught:
        read_only.execute("INSERT INTO t VALUES (1)")
    found = storage_failure(caught.value)
    assert isinstance(found, Unavailable) and "read-only" in found.message

    (tmp_path / "junk.db").write_bytes(b"not a database at all " * 400)
    with pytest.raises(sqlite3.Error) as caught:
        sqlite3.connect(tmp_path / "junk.db").execute("SELECT * FROM sqlite_master")
    assert isinstance(storage_failure(caught.value), DamagedStore)

    wrapped = RuntimeError("while writing")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert isinstance(storage_failure(wrapped), StorageFull)
    for bug in (OSError(errno.EACCES, "Permission denied"), RuntimeError("boom"), ValueError("x")):
        assert storage_failure(bug) is None


def test_a_record_write_on_a_full_disk_is_storage_full_and_rolled_back(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "records.sqlite3")
    store.put(Item("p", "kept", {"a": 1}))
    conn = store._conn()
    conn.execute(f"PRAGMA max_page_count={conn.execute('PRAGMA page_count').fetchone()[0]}")

    with pytest.raises(StorageFull):
        store.put(Item("p", "big", BIG))

    assert not conn.in_transaction and store.get("p", "big") is None
    conn.execute("PRAGMA max_page_count=1073741823")  # room again: the store goes on as before
    assert store.put(Item("p", "big", BIG)).version == 1


def test_a_transaction_failing_on_a_full_disk_is_storage_full_and_rolled_back(tmp_path: Path) -> None:
    db = ThreadConnections(tmp_path / "chunks.sqlite3")
    db.get().execute("CREATE TABLE t (x)")

    with pytest.raises(StorageFull), db.transaction() as conn:
        conn.execute("INSERT INTO t VALUES (1)")
        raise OSError(errno.ENOSPC, "No space left on device")  # a vector file's append, inside

    assert not db.get().in_transaction and db.get().execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_a_blob_put_on_a_full_disk_is_storage_full_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blobs = FileBlobStore(tmp_path / "blobs")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(file_blobs.os, "fsync", full)
    with pytest.raises(StorageFull):
        blobs.put("b/aa/blob", b"bytes")
    monkeypatch.setattr(file_blobs.os, "fsync", os.fsync)

    assert [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == []  # no blob, no temp file
