"""The embedded store's change log (adapters/local/sqlite_change_log.py): shared by every object
(process) on one file, in append order; a damaged file replaced, never a failed write twice; an
erasure's brains leave no bytes behind; old entries pruned."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.adapters.local import sqlite_change_log
from cairn.adapters.local.sqlite_change_log import SqliteChangeLog
from cairn.ports.change_log import ChangeLogError


def test_two_logs_on_one_file_read_each_others_entries_in_append_order(tmp_path: Path) -> None:
    path = tmp_path / "changes.sqlite3"
    first, second = SqliteChangeLog(path), SqliteChangeLog(path)
    assert first.mark() == 0
    first.append("p1", "brn_a", ['{"n":1}', '{"n":2}'])
    start = second.mark()
    second.append("p2", "brn_b", ['{"n":3}'])
    first.append("p1", "brn_a", ['{"n":4}'])

    seen = second.since(0, 10)
    assert [(e.origin, e.brain_id, e.payload) for e in seen] == [
        ("p1", "brn_a", '{"n":1}'),
        ("p1", "brn_a", '{"n":2}'),
        ("p2", "brn_b", '{"n":3}'),
        ("p1", "brn_a", '{"n":4}'),
    ]
    assert [e.seq for e in seen] == sorted(e.seq for e in seen) and start == seen[1].seq
    assert [e.payload for e in first.since(start, 1)] == ['{"n":3}']
    assert first.mark() == seen[-1].seq


def test_a_damaged_file_fails_one_call_and_the_next_begins_a_new_log(tmp_path: Path) -> None:
    path = tmp_path / "changes.sqlite3"
    writer, reader = SqliteChangeLog(path), SqliteChangeLog(path)
    writer.append("p1", "brn_a", ['{"before":1}'])
    assert reader.since(0, 10)
    writer.close()
    reader.close()
    path.write_bytes(b"this is not a database, it was overwritten" * 100)

    with pytest.raises(ChangeLogError) as failed:
        writer.append("p1", "brn_a", ['{"n":1}'])
    assert "not a database" in str(failed.value)
    writer.append("p1", "brn_a", ['{"n":2}'])  # a new log
    assert [e.payload for e in reader.since(0, 10)] == ['{"n":2}']


def test_a_log_removed_under_an_open_connection_is_followed_to_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "changes.sqlite3"
    kept, other = SqliteChangeLog(path), SqliteChangeLog(path)
    kept.append("p1", "brn_a", ['{"n":1}'])
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)  # another process found it damaged
    other.append("p2", "brn_a", ['{"n":2}'])

    kept.append("p1", "brn_a", ['{"n":3}'])

    assert [e.payload for e in other.since(0, 10)] == ['{"n":2}', '{"n":3}']


def test_forgetting_brains_leaves_none_of_their_bytes_in_the_files(tmp_path: Path) -> None:
    path = tmp_path / "changes.sqlite3"
    log, reader = SqliteChangeLog(path), SqliteChangeLog(path)
    log.append(
        "p1", "brn_gone", [f'{{"path":"people/erinmark-{n}.md","pad":"{"x" * 2000}"}}' for n in range(50)]
    )
    log.append("p1", "brn_kept", ['{"path":"kept.md"}'])
    assert len(reader.since(0, 100)) == 51  # a reader holds a connection too

    log.forget(["brn_gone"])

    assert [e.brain_id for e in reader.since(0, 100)] == ["brn_kept"]
    for file in tmp_path.iterdir():
        assert b"erinmark" not in file.read_bytes(), file


def test_forgetting_while_a_reader_holds_old_pages_fails_and_succeeds_once_it_lets_go(tmp_path: Path) -> None:
    """An erasure is tried again rather than finished with the brain's bytes still in the WAL."""
    import sqlite3

    path = tmp_path / "changes.sqlite3"
    log = SqliteChangeLog(path, busy_s=0.2)
    log.append("p1", "brn_gone", ['{"path":"people/erinmark.md"}'])
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM changes").fetchone()[0] == 1  # a snapshot held open

    with pytest.raises(ChangeLogError, match="could not be emptied"):
        log.forget(["brn_gone"])
    reader.execute("COMMIT")
    reader.close()
    log.forget(["brn_gone"])

    assert log.since(0, 10) == []
    for file in tmp_path.iterdir():
        assert b"erinmark" not in file.read_bytes(), file


def test_entries_older_than_the_keeping_time_go_as_new_ones_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_change_log, "PRUNE_EVERY", 4)
    now = [1000.0]
    log = SqliteChangeLog(tmp_path / "changes.sqlite3", keep_s=60, clock=lambda: now[0])
    log.append("p1", "brn_a", ['{"old":1}'])
    now[0] += 61
    for n in range(3):
        log.append("p1", "brn_a", [f'{{"new":{n}}}'])

    assert [e.payload for e in log.since(0, 10)] == ['{"new":0}', '{"new":1}', '{"new":2}']
