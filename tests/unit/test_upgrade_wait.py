"""A process opening the embedded chunk index while another one upgrades it waits for the upgrade
as long as it progresses, past SQLite's busy timeout, and then opens; a writer lock held with no
sign of progress still ends the wait, in a clear error (adapters/local/upgrade_wait.py).

The busy timeout is shortened here (30 s in a release) and the rebuild made longer than it."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings, fts_search, sqlite_threads, upgrade_wait
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.errors import Unavailable
from tests.contract.test_chunk_index_contract import DIM, axis, chunk, search
from tests.support.aged_index import with_old_tokenizer

PATIENCE_S = 0.1  # the shortened busy timeout
CHUNKS = 4_000  # a rebuild of several times PATIENCE_S here (0.5 s)
WORDS = " ".join(f"crane{i % 97} berth{i % 89} cargo{i % 83}" for i in range(100))


@pytest.fixture(autouse=True)
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_threads, "BUSY_TIMEOUT_S", PATIENCE_S)
    monkeypatch.setattr(upgrade_wait, "BEAT_S", 0.02)
    monkeypatch.setattr(upgrade_wait, "POLL_S", 0.02)


def aged_index(folder: Path) -> Path:
    """An index of one brain of CHUNKS chunks whose FTS5 table an earlier tokenizer made."""
    db = built_index(folder)
    assert with_old_tokenizer(db) == CHUNKS
    return db


def built_index(folder: Path) -> Path:
    """An index of one brain of CHUNKS chunks."""
    db = folder / "chunks.db"
    index = SqliteChunkIndex(db, folder / "vectors", DIM)
    for start in range(0, CHUNKS, 1_000):
        notes = [
            chunk(f"c{i}", f"the harbour crane {i} lifts cargo, thanks🤗 crew {WORDS}")
            for i in range(start, start + 1_000)
        ]
        index.upsert(notes, np.stack([axis(i % DIM) for i in range(len(notes))]))
    index.close()
    return db


def writer_lock_held(db: Path) -> bool:
    probe = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        probe.close()


def test_a_second_opener_waits_for_a_rebuild_longer_than_the_busy_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = aged_index(tmp_path)
    first: dict[str, object] = {}
    beat = upgrade_wait.OpeningWait._beat

    def slow_beat(self: upgrade_wait.OpeningWait, *, first: bool) -> bool:
        time.sleep(0.05)  # a rebuild several times longer than the busy timeout on any machine
        return beat(self, first=first)

    monkeypatch.setattr(upgrade_wait.OpeningWait, "_beat", slow_beat)

    def upgrade() -> None:
        started = time.monotonic()
        SqliteChunkIndex(db, tmp_path / "vectors", DIM).close()
        first["took_s"] = time.monotonic() - started

    upgrading = threading.Thread(target=upgrade)
    upgrading.start()
    # The second opener starts once the rebuild shows its progress (its first beat of the mark),
    # not once the lock is seen held: a loaded machine could let the opener's shortened patience
    # run out in the rebuild's first moments, before its first beat, which a release's 30 s
    # patience against a 1 s first beat never does (adapters/local/upgrade_wait.py).
    mark = upgrade_wait.OpeningWait(db).mark
    deadline = time.monotonic() + 30
    while not mark.exists():
        assert upgrading.is_alive() and time.monotonic() < deadline, "the rebuild never showed progress"
        time.sleep(0.005)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=upgrade_wait.__name__):
        index = SqliteChunkIndex(db, tmp_path / "vectors", DIM)
    waited_s = time.monotonic() - started
    upgrading.join()
    try:
        assert waited_s > PATIENCE_S * 2, (waited_s, first)  # it did wait past the busy timeout
        assert search(index, "thanks", brain_ids=("b1",))  # found by the word: rebuilt, and open
        (definition,) = (
            sqlite3.connect(db)
            .execute("SELECT sql FROM sqlite_master WHERE name = ?", (schema.fts_table(1),))
            .fetchone()
        )
        assert f"tokenize='{schema.TOKENIZER}'" in definition
    finally:
        index.close()
    said = [r.getMessage() for r in caplog.records if r.name == upgrade_wait.__name__]
    assert len(said) == 1 and "is upgrading or rebuilding the keyword index" in said[0], said
    assert not db.with_name("chunks.db.upgrading").exists()


def test_a_serving_writer_waits_for_another_process_rebuilding_a_brains_keywords(tmp_path: Path) -> None:
    """`cairn check` rebuilding a damaged brain's keyword index holds the writer lock past the busy
    timeout: a serving process's write waits for it while it shows progress, then lands."""
    db = built_index(tmp_path)
    serving = SqliteChunkIndex(db, tmp_path / "vectors", DIM)
    checking = SqliteChunkIndex(db, tmp_path / "vectors", DIM)
    rebuilding = threading.Thread(target=checking.rebuild_keywords, args=("b1",))
    try:
        rebuilding.start()
        deadline = time.monotonic() + 30
        while not writer_lock_held(db):
            assert rebuilding.is_alive() and time.monotonic() < deadline, "the rebuild never took the lock"
            time.sleep(0.005)
        started = time.monotonic()
        serving.upsert([chunk("heron", "a grey heron fishing")], np.stack([axis(1)]))
        waited_s = time.monotonic() - started
        rebuilding.join()
        assert waited_s > PATIENCE_S * 2  # past the busy timeout, while the rebuild went on
        assert search(serving, "heron", brain_ids=("b1",)) == ["heron"]
        assert search(serving, "thanks", brain_ids=("b1",))  # the rebuilt table, read
        assert not db.with_name("chunks.db.upgrading").exists()
    finally:
        rebuilding.join()
        serving.close()
        checking.close()


def test_a_lock_held_without_progress_ends_the_wait_in_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "chunks.db"
    SqliteChunkIndex(db, tmp_path / "vectors", DIM).close()
    mark = db.with_name("chunks.db.upgrading")  # as a process killed while upgrading left it
    mark.write_text("4242\n", encoding="utf-8")
    an_hour_ago = time.time() - 3600
    os.utime(mark, (an_hour_ago, an_hour_ago))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # held, and nothing beats the mark
    try:
        started = time.monotonic()
        with pytest.raises(Unavailable, match="without showing progress"):
            SqliteChunkIndex(db, tmp_path / "vectors", DIM)
        assert time.monotonic() - started < PATIENCE_S + 5
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _delete_a_fifth(index: SqliteChunkIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    index.delete_chunks("b1", [f"c{i}" for i in range(0, CHUNKS, 5)])  # dead rows: compaction rewrites


def _all_unsound(index: SqliteChunkIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    with sqlite3.connect(index._db.db_path) as conn:
        conn.execute(
            "INSERT INTO vector_damage (brain_id, epoch, low, high) VALUES ('b1', 0, 0, ?)", (CHUNKS,)
        )


def _past_small(index: SqliteChunkIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts_search, "SMALL_TABLE", CHUNKS // 4)  # a big brain lacking its term postings


def _one_more(index: SqliteChunkIndex) -> None:
    index.upsert([chunk("one-more", "one more crane at the berth")], np.stack([axis(0)]))
    table = schema.fts_table(1)
    assert fts_postings.exists(index._db.get(), table)
    assert search(index, "one more crane", brain_ids=("b1",))[0] == "one-more"  # through the postings


Prepare = Callable[[SqliteChunkIndex, pytest.MonkeyPatch], None]
# operation -> (what makes it do its work, the operation, its transactions that show progress)
LONG: dict[str, tuple[Prepare, Callable[[SqliteChunkIndex], object], int]] = {
    "drop a brain": (lambda index, _: None, lambda index: index.drop_brain("b1"), 1),
    "term postings made (at a compaction)": (_past_small, lambda index: index.compact("b1"), 1),
    "term postings made (by the write that carries the brain past the size)": (_past_small, _one_more, 1),
    "discard unsound chunks": (_all_unsound, lambda index: index.discard_unsound("b1"), 1),
    "compaction's final transaction": (_delete_a_fifth, lambda index: index.compact("b1"), 1),
    "scrub (its compaction, its purge)": (_delete_a_fifth, lambda index: index.scrub("b1"), 2),
}


@pytest.mark.parametrize("operation", sorted(LONG))
def test_a_transaction_that_holds_the_lock_for_seconds_on_a_big_brain_shows_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """Each holds the writer lock for seconds at 100,000 chunks (bench/writer_lock_100k.py), or at
    a million (compaction's final transaction, dropping a brain): it beats the mark, so that
    another process's writer waits for it instead of answering unavailable after its busy
    timeout. Here every transaction long enough to call the progress handler would beat (BEAT_S
    0); only those marked long do."""
    prepare, run, transactions = LONG[operation]
    db = built_index(tmp_path)
    index = SqliteChunkIndex(db, tmp_path / "vectors", DIM, background_maintenance=False)
    prepare(index, monkeypatch)
    monkeypatch.setattr(upgrade_wait, "BEAT_S", 0.0)
    beat = upgrade_wait.OpeningWait._beat
    firsts: list[bool] = []

    def counted(self: upgrade_wait.OpeningWait, *, first: bool) -> bool:
        firsts.append(first)
        return beat(self, first=first)

    monkeypatch.setattr(upgrade_wait.OpeningWait, "_beat", counted)
    try:
        run(index)
    finally:
        index.close()
    assert firsts.count(True) == transactions, firsts
    assert not db.with_name("chunks.db.upgrading").exists()
