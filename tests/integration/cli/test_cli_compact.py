"""`cairn compact` in-process on the real embedded store: dead vector rows are reclaimed and
every search answers as before."""

from __future__ import annotations

import argparse
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cairn import faults
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_store import file_name
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.container import Container
from cairn.entrypoints.cli import archive, main
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.support.archive_scenario import SLUG, fill, snapshot

QUERIES = ["meeting notes", "the release plan", "what changed", "a memory about the launch"]


def answers(data: Path) -> list[list[tuple[str, float]]]:
    c = build_container(Settings(data_dir=data))
    brain = c.brains.get(SLUG)
    out = []
    for text in QUERIES:
        query = ChunkQuery(
            text=text, vector=c.adapters.embedder.embed([text])[0], filter=ChunkFilter(brain_ids=(brain.id,))
        )
        out.append([(hit.chunk.id, round(hit.score, 9)) for hit in c.adapters.chunks.search(query)])
    return out


def test_compact_reclaims_dead_rows_and_changes_no_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    c = build_container(Settings(data_dir=data))
    filled = fill(c)
    brain = filled.brain
    before_state = snapshot(c, brain)
    chunks = c.adapters.chunks
    live = chunks.count(brain.id)
    # the scenario rewrites and deletes documents, so its vector file already holds dead rows
    rows = (data / "vectors" / file_name(brain.id)).stat().st_size // (4 * c.adapters.embedder.dimension)
    assert rows > live
    before = answers(data)

    assert main(["compact", SLUG, "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(
        f"{SLUG}: {live:,} live vectors, {rows - live:,} dead rows reclaimed ({rows:,} → {live:,})"
    )
    assert re.search(r", 0 in the index, \d+\.\d s \(writes paused \d+\.\d\d s\)$", out), out
    assert not (data / "vectors" / file_name(brain.id)).exists()
    assert (
        data / "vectors" / file_name(brain.id, 1)
    ).stat().st_size == live * 4 * c.adapters.embedder.dimension
    assert answers(data) == before
    again = build_container(Settings(data_dir=data))
    assert snapshot(again, again.brains.get(SLUG)) == before_state

    assert main(["compact", "--data-dir", str(data)]) == 0  # every brain; nothing left to reclaim
    assert f"{SLUG}: {live:,} live vectors, 0 dead rows reclaimed" in capsys.readouterr().out


def test_compact_refuses_an_unknown_brain_and_a_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    fill(build_container(Settings(data_dir=data)))
    assert main(["compact", "no-such-brain", "--data-dir", str(data)]) == 2
    assert "no brain matches" in capsys.readouterr().err
    assert main(["compact", "--data-dir", str(tmp_path / "empty")]) == 2
    assert "no Cairn store" in capsys.readouterr().err
    assert not (tmp_path / "empty").exists()


def test_compact_says_a_brains_damaged_vector_file_refused_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A live row whose bytes no longer match their sum stops the compaction before anything is
    copied under a fresh sum (vector_compaction.py): the command says why and how to repair it,
    and exits 1, the first time and once the damage is recorded."""
    data = tmp_path / "data"
    c = build_container(Settings(data_dir=data))
    brain = fill(c).brain
    with sqlite3.connect(data / "chunks.sqlite3") as conn:
        (row,) = conn.execute("SELECT max(vec_row) FROM chunks WHERE brain_id = ?", (brain.id,)).fetchone()
    with (data / "vectors" / file_name(brain.id)).open("r+b") as fh:
        fh.seek(row * 4 * c.adapters.embedder.dimension + 8)
        fh.write(b"\x7f" * 24)
    for _ in range(2):
        assert main(["compact", SLUG, "--data-dir", str(data)]) == 1
        out = capsys.readouterr().out
        assert f"{SLUG}: not compacted: the brain's vector file is damaged" in out
        assert "cairn check" in out and "stopped before it finished" not in out
    assert (data / "vectors" / file_name(brain.id)).exists()  # the old epoch kept
    assert not (data / "vectors" / file_name(brain.id, 1)).exists()


def test_compact_stopped_by_the_index_shutting_down_says_so_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index shuts down while it builds a brain's ANN index (a stop of the process): the brain
    is not compacted, which the command says, exiting 1 as for a refused one."""
    data = tmp_path / "data"
    c = build_container(Settings(data_dir=data))
    fill(c)
    monkeypatch.setitem(SqliteChunkIndex.__init__.__kwdefaults__, "ann_min_rows", 1)  # an index to build
    opened: list[SqliteChunkIndex] = []
    open_store = archive.open_store

    def kept(args: argparse.Namespace, **kwargs: Any) -> Container:
        container = open_store(args, **kwargs)
        assert isinstance(container.adapters.chunks, SqliteChunkIndex)
        opened.append(container.adapters.chunks)
        return container

    monkeypatch.setattr(archive, "open_store", kept)
    with faults.armed("compaction.copied", action=lambda: opened[0]._maintenance.close()):
        assert main(["compact", SLUG, "--data-dir", str(data)]) == 1
    out = capsys.readouterr().out
    assert f"{SLUG}: not compacted: the search index shut down before it finished" in out, out
    assert (data / "vectors" / file_name(c.brains.get(SLUG).id)).exists()  # the old epoch kept
