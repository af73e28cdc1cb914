"""A one-off `cairn` command closes the stores it opened as it ends, as `cairn serve` and `cairn mcp`
do: the chunk index's maintenance worker stops at its next step instead of being left to the
exit (a daemon thread killed where it stands, inside a transaction), and each SQLite file's
write-ahead log is checkpointed into it. Run in-process, where a store left open keeps its -wal
file and the worker its thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cairn.adapters.local import fts_search
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.entrypoints.cli import main


def _left_open(data: Path) -> list[str]:
    workers = [t.name for t in threading.enumerate() if t.name == "cairn-vector-maintenance"]
    return sorted(p.name for p in data.iterdir() if p.name.endswith("-wal")) + workers


def test_every_one_off_command_closes_the_stores_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a brain past both sizes after the ingest: the maintenance worker builds its term postings
    # and its vector index in the background while the command runs
    monkeypatch.setattr(fts_search, "SMALL_TABLE", 10)
    assert SqliteChunkIndex.__init__.__kwdefaults__ is not None
    monkeypatch.setitem(SqliteChunkIndex.__init__.__kwdefaults__, "ann_min_rows", 10)
    data = tmp_path / "data"
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(30):
        (docs / f"berth{n}.md").write_text(f"# Berth {n}\n\nThe crane rota {n} lifts cargo on day {n % 7}.")
    archive = tmp_path / "notes.jsonl"
    commands = [  # each with its exit code: one that fails closes them too
        (["brains", "create", "Notes"], 0),
        (["ingest", str(docs), "--brain", "notes"], 0),
        (["search", "crane rota", "--brain", "notes"], 0),
        (["export", "notes", "-o", str(archive)], 0),
        (["import", str(archive), "--brain", "copy"], 0),
        (["keys", "create", "--name", "ci", "--tenant", "local", "--scope", "documents:read"], 0),
        (["erase", "any", "alice", "--yes"], 2),  # nothing of hers stored
        (["check"], 0),
        (["compact"], 0),
        (["brains", "delete", "copy", "--yes"], 0),
    ]
    for command, expected in commands:
        code = main([*command, "--data-dir", str(data)])
        out, err = capsys.readouterr()
        assert code == expected, (command, out[-2000:], err[-2000:])
        assert _left_open(data) == [], command
