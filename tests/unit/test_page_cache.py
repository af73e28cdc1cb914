"""Reading a store's files through the page cache at start-up (adapters/local/page_cache.py)."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from cairn.adapters.local import page_cache


def written(path: Path, size: int) -> Path:
    path.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    return path


def test_reads_whole_files_in_order_and_skips_one_past_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: Path, flags: int) -> int:
        opened.append(Path(path).name)
        return real_open(path, flags)

    monkeypatch.setattr(os, "open", recording_open)
    big = written(tmp_path / "big", 3 * page_cache.BLOCK + 17)  # several blocks and a partial one
    huge = written(tmp_path / "huge", 2 * page_cache.BLOCK)
    small = written(tmp_path / "small", 100)
    budget = big.stat().st_size + small.stat().st_size + 1
    assert page_cache.read_through([big, huge, small], budget) == big.stat().st_size + 100
    assert opened == ["big", "huge", "small"]  # huge was opened, found too big and left unread


def test_missing_and_unreadable_paths_are_skipped(tmp_path: Path) -> None:
    there = written(tmp_path / "there", 5000)
    paths = [tmp_path / "gone", tmp_path, there]  # deleted by a compaction; a directory
    assert page_cache.read_through(paths, 1 << 30) == 5000


def test_a_device_or_fifo_is_not_read(tmp_path: Path) -> None:
    # /dev/zero reports size 0 and never ends; a FIFO would block: neither is a store's file
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    paths = [Path("/dev/zero"), fifo, written(tmp_path / "real", 300)]
    done: list[int] = []
    worker = threading.Thread(
        target=lambda: done.append(page_cache.read_through(paths, 1 << 30)), daemon=True
    )
    worker.start()
    worker.join(timeout=10)
    assert done == [300]


def test_a_zero_budget_reads_nothing(tmp_path: Path) -> None:
    assert page_cache.read_through([written(tmp_path / "f", 10)], 0) == 0


def test_the_budget_is_half_of_physical_memory() -> None:
    budget = page_cache.memory_budget()
    assert 1 << 20 < budget < 1 << 50  # this machine says (Linux); in bytes, not pages


def test_reads_a_database_through_its_connection_oddly_named_tables_and_fts_included(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    conn.execute('CREATE TABLE "odd ""name""" ("a ""b""" BLOB, c TEXT)')
    conn.execute('INSERT INTO "odd ""name""" VALUES (?, ?)', (b"x" * 100_000, None))
    conn.execute("CREATE VIRTUAL TABLE notes USING fts5(body)")
    conn.execute("INSERT INTO notes VALUES ('a note')")
    read: list[str] = []
    conn.set_trace_callback(lambda statement: read.append(statement.rpartition(" FROM ")[2]))
    page_cache.read_database(conn, 4096)
    assert not [table for table in read if "name" in table or "notes" in table]  # over the budget
    page_cache.read_database(conn, 1 << 30)
    assert {'"odd ""name"""', '"notes_data"', '"notes_content"'} <= set(read)
    conn.close()


@pytest.mark.skipif(not hasattr(os, "RWF_NOWAIT"), reason="asks the page cache without reading (Linux)")
def test_resident_says_whether_a_file_can_be_read_without_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = written(tmp_path / "index", 3 * page_cache.BLOCK)
    assert page_cache.read_through([path], 1 << 30) and page_cache.resident(path)
    assert not page_cache.resident(tmp_path / "missing") and not page_cache.resident(tmp_path)
    assert not page_cache.resident(written(tmp_path / "empty", 0))
    asked: list[int] = []

    def on_disk(fd: int, buffers: list[bytearray], offset: int, flags: int) -> int:
        asked.append(offset)
        if offset >= path.stat().st_size // 2:
            raise BlockingIOError
        return 1

    monkeypatch.setattr(os, "preadv", on_disk)
    assert not page_cache.resident(path)  # its second half is not in the cache
    assert asked[0] == 0 and len(asked) > 1


def test_a_file_about_to_be_mapped_is_read_in_only_when_not_in_the_page_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[list[Path]] = []
    monkeypatch.setattr(page_cache, "read_through", lambda paths, budget: read.append(list(paths)) or 0)
    path = written(tmp_path / "index", 100)
    monkeypatch.setattr(page_cache, "resident", lambda path, probes=64: False)
    page_cache.read_in(path)
    assert read == [[path]]
    monkeypatch.setattr(page_cache, "resident", lambda path, probes=64: True)
    page_cache.read_in(path)
    assert read == [[path]]
