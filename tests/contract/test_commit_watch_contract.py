"""CommitWatch contract (ports/records.py): a record store's commit mark moves after a commit by
another writer (another store object on the same file, another process), however it interleaves
with the object's own, and stays put while nothing is committed and through the object's own
commits (its callers know what they wrote). The embedded store and the fake have one; DynamoDB has
none, so the AWS shape keeps nothing in process (bootstrap/shared.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.ports.records import CommitWatch, Delete, Item, Put, RecordStore
from tests.contract.aws_storage import dynamodb_records
from tests.contract.conftest import RECORD_STORES

PK = "brain#1"
WATCHED = ("memory", "sqlite")


@pytest.fixture(params=WATCHED)
def watched(request: pytest.FixtureRequest) -> Iterator[RecordStore]:
    with RECORD_STORES[request.param](request) as store:
        assert isinstance(store, CommitWatch)
        yield store


def mark(store: RecordStore) -> int:
    assert isinstance(store, CommitWatch)
    return store.commit_mark()


def test_the_mark_stays_while_nothing_is_committed(watched: RecordStore) -> None:
    watched.put(Item(PK, "a", {"n": 1}))
    before = mark(watched)
    # Reads of every kind commit nothing
    watched.get(PK, "a")
    watched.get_many([(PK, "a"), (PK, "missing")])
    watched.query(PK)
    watched.scan(["brain#"])
    assert mark(watched) == before == mark(watched)


@pytest.mark.parametrize("write", ["put", "delete", "transact", "another thread"])
def test_the_objects_own_commits_leave_the_mark(watched: RecordStore, write: str) -> None:
    watched.put(Item(PK, "a", {"n": 1}))
    before = mark(watched)
    if write == "put":
        watched.put(Item(PK, "a", {"n": 2}))
    elif write == "delete":
        assert watched.delete(PK, "a")
    elif write == "transact":
        watched.transact([Put(Item(PK, "b", {})), Delete(PK, "a")])
    else:
        writer = threading.Thread(target=lambda: watched.put(Item(PK, "t", {})))
        writer.start()
        writer.join()
    assert mark(watched) == before


def test_sqlite_mark_moves_when_another_writer_committed_between_own_commits(tmp_path: Path) -> None:
    mine, other = SqliteRecordStore(tmp_path / "r.db"), SqliteRecordStore(tmp_path / "r.db")
    try:
        before = mark(mine)
        other.put(Item(PK, "x", {}))
        mine.put(Item(PK, "a", {}))  # its own commit comes after the other's, before any mark read
        assert mark(mine) != before
    finally:
        mine.close()
        other.close()


def test_sqlite_mark_moves_after_a_commit_through_another_store_on_the_file(tmp_path: Path) -> None:
    # Given two store objects on one file (as two processes on one data directory hold)
    mine, other = SqliteRecordStore(tmp_path / "r.db"), SqliteRecordStore(tmp_path / "r.db")
    try:
        mine.put(Item(PK, "a", {"n": 1}))
        before = mark(mine)
        other.get(PK, "a")
        assert mark(mine) == before  # the other's reads are not commits
        # When the other commits, each kind of write
        other.put(Item(PK, "a", {"n": 2}))
        after_put = mark(mine)
        other.delete(PK, "a")
        after_delete = mark(mine)
        # Then the mark moved each time, and stays put afterwards
        assert len({before, after_put, after_delete}) == 3
        assert mark(mine) == after_delete
    finally:
        mine.close()
        other.close()


def test_sqlite_mark_moves_after_a_commit_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = SqliteRecordStore(path)
    try:
        store.put(Item(PK, "a", {"n": 1}))
        before = mark(store)
        script = textwrap.dedent(
            f"""
            from pathlib import Path
            from cairn.adapters.local.sqlite_records import SqliteRecordStore
            from cairn.ports.records import Item
            store = SqliteRecordStore(Path({str(path)!r}))
            store.put(Item({PK!r}, "a", {{"n": 2}}))
            store.close()
            """
        )
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
        assert mark(store) != before
        assert store.get(PK, "a") == Item(PK, "a", {"n": 2}, 2)
    finally:
        store.close()


def test_sqlite_mark_holds_no_snapshot_that_keeps_a_scrub_from_finishing(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "r.db")
    try:
        store.put(Item(PK, "a", {"text": "x" * 5000}))
        mark(store)
        store.delete(PK, "a")
        mark(store)
        store.scrub()  # raises when a reader keeps the log from being emptied
    finally:
        store.close()


def test_dynamodb_has_no_commit_mark(request: pytest.FixtureRequest) -> None:
    with dynamodb_records(request) as store:
        assert not isinstance(store, CommitWatch)
