"""A brain's keyword index (its FTS5 table and term postings) damaged on a real SQLite file:
`cairn check` reports it in its own words, `--dry-run` leaves it as it is, and a check rebuilds it
from the chunks' text (adapters/local/fts_health.py), after which the brain's searches find what
they found before the damage. Another index open on the same file keeps refusing the brain's
searches as damaged until the rebuild commits, then answers."""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import os
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cairn import faults
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.container import Container
from cairn.domain.errors import DamagedStore
from cairn.domain.models import Brain
from cairn.entrypoints.cli import main
from cairn.entrypoints.cli.check import cmd_check
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.support.index_check import index_problems
from tests.support.processes import cli
from tests.support.shapes import DIM, embedded
from tests.support.store_copies import closed, copied

QUERIES = ("zebra3 river3", "grass", "heron7", "river12 zebra20 meadow", "Note 5")
Hits = list[list[tuple[str, float]]]


def opened(data: Path) -> Container:
    return build_container(Settings(data_dir=data), embedded(data))


def close(container: Container) -> None:
    container.adapters.chunks.close()  # type: ignore[attr-defined]


def hits(container: Container, brain: Brain, *, vector: bool = True) -> Hits:
    """Each query's hits (chunk id, score), both legs when `vector`: the keyword leg's ranks move
    the fused scores, so a keyword index that lost or changed a term shows."""
    found = []
    for text in QUERIES:
        query_vector = container.adapters.embedder.embed([text])[0].tolist() if vector else None
        query = ChunkQuery(text=text, vector=query_vector, filter=ChunkFilter((brain.id,)), top_k=8)
        found.append([(h.chunk.id, h.score) for h in container.adapters.chunks.search(query)])
    return found


def sql(data: Path, *statements: str) -> None:
    conn = sqlite3.connect(data / "chunks.sqlite3")
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def scribble(data: Path, table: str, column: str = "block", keys: tuple[str, ...] = ("id",)) -> None:
    """Random bytes written over each blob of a table (seeded: the same damage each run), each row
    found by its key's columns (its primary key: one row's update reads no other row)."""
    rng = random.Random(7)
    conn = sqlite3.connect(data / "chunks.sqlite3")
    try:
        where = " AND ".join(f"{key} = ?" for key in keys)
        for *row_key, blob in conn.execute(f"SELECT {', '.join(keys)}, {column} FROM {table}").fetchall():
            damaged = bytearray(blob)
            for _ in range(max(1, len(damaged) // 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (bytes(damaged), *row_key))
        conn.commit()
    finally:
        conn.close()


T = schema.fts_table(1)
DAMAGE: dict[str, Callable[[Path], None]] = {
    "data table dropped": lambda d: sql(d, f"DROP TABLE {T}_data"),
    "data rows deleted": lambda d: sql(d, f"DELETE FROM {T}_data WHERE id > 1"),
    "data blobs scribbled": lambda d: scribble(d, f"{T}_data"),
    "idx emptied": lambda d: sql(d, f"DELETE FROM {T}_idx"),
    "config version changed": lambda d: sql(d, f"UPDATE {T}_config SET v = 5 WHERE k = 'version'"),
    "postings scribbled": lambda d: scribble(d, f"{T}_postings", "data", ("term", "start")),
    "postings' stopwords dropped": lambda d: sql(d, f"DROP TABLE {T}_skipped"),
}


@pytest.fixture(scope="module")
def made_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Brain, Hits]:
    data, brain, before = made(tmp_path_factory.mktemp("made"))
    return closed(data), brain, before


@pytest.fixture
def store(made_once: tuple[Path, Brain, Hits], tmp_path: Path) -> tuple[Path, Brain, Hits]:
    """`made`, copied for the test from the module's one."""
    data, brain, before = made_once
    return copied(data, tmp_path / "data"), brain, copy.deepcopy(before)


def made(tmp_path: Path) -> tuple[Path, Brain, Hits]:
    """A brain of 40 notes whose keyword table has term postings (as a brain past 20,000 rows
    has them) and one segment over many pages (as FTS5's merges leave a big brain), closed; and
    its searches' hits."""
    data = tmp_path / "data"
    container = opened(data)
    brain = container.brains.create("Keywords", slug="kw")
    for n in range(40):
        words = " ".join(f"tern{n}x{k}" for k in range(60))  # enough terms for many index pages
        text = f"# Note {n}\n\nzebra{n} eats grass near river{n}; heron{n % 9} waits in the meadow. {words}\n"
        container.documents.write(brain, f"notes/n{n}.md", text.encode())
    index = container.adapters.chunks
    assert isinstance(index, SqliteChunkIndex)
    with index._db.transaction() as conn:
        fts_postings.ensure(conn, T)
        conn.execute(f"INSERT INTO {T} ({T}) VALUES ('optimize')")  # one segment of many pages
    before = hits(container, brain)
    assert all(before) and container.repair.check(brain, repair=False).sound
    close(container)
    return data, brain, before


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_check_reports_a_damaged_keyword_index_and_rebuilds_it(
    store: tuple[Path, Brain, Hits], damage: str
) -> None:
    data, brain, before = store
    DAMAGE[damage](data)
    container = opened(data)
    # The damage is reported, by a dry run too, which changes nothing
    for _ in range(2):
        found = container.repair.check(brain, repair=False)
        assert found.keywords and not found.sound and not found.keywords_rebuilt
    assert "the keyword index of brain kw cannot be read" in _report(container, dry_run=True)
    # When the check repairs it
    done = container.repair.check(brain)
    assert done.keywords_rebuilt and not done.failed
    # Then it reads as sound, through and through, and searches find what they found before
    assert container.repair.compare(brain, deep=True).sound
    assert index_problems(container) == []
    assert hits(container, brain) == before
    close(container)
    reopened = opened(data)
    assert hits(reopened, brain) == before
    close(reopened)


def test_chunks_whose_text_was_lost_with_the_table_are_indexed_again(store: tuple[Path, Brain, Hits]) -> None:
    """`_content` holds the only copy of the chunks' text the index has: lost, the documents are
    indexed again from their records (their sibling excerpts as the records still hold them, so
    ranks may move: what is found is checked, not its order)."""
    data, brain, _ = store
    sql(data, f"DROP TABLE {T}_content")
    container = opened(data)
    assert "_content" in container.repair.compare(brain).keywords
    done = container.repair.check(brain)
    assert done.keywords_rebuilt and done.repaired == 40 and not done.failed
    assert container.repair.compare(brain, deep=True).sound
    assert index_problems(container) == []
    close(container)


def test_a_dry_run_leaves_the_damage_and_the_searches_refused(store: tuple[Path, Brain, Hits]) -> None:
    data, brain, _ = store
    DAMAGE["data table dropped"](data)
    container = opened(data)
    code = cmd_check(container, argparse.Namespace(brain=[], dry_run=True, deep=True))
    assert code == 1
    reopened = opened(data)
    with pytest.raises(DamagedStore):
        hits(reopened, brain, vector=False)
    assert reopened.repair.compare(brain).keywords.startswith("vtable constructor failed")
    close(reopened)


def test_the_deep_check_finds_damage_the_cheap_probe_does_not_read(store: tuple[Path, Brain, Hits]) -> None:
    """A term's postings segment whose rows were swapped for others of the same length is read by
    no search of the probe's words; FTS5's integrity check and the postings' row counts find it."""
    data, brain, before = store
    conn = sqlite3.connect(data / "chunks.sqlite3")
    (term, start, data_blob) = conn.execute(
        f"SELECT term, start, data FROM {T}_postings WHERE term = 'grass'"
    ).fetchone()
    records = np.frombuffer(data_blob, dtype=fts_postings.POSTING).copy()
    records = records[:-1]  # one row's posting lost: df one short
    conn.execute(
        f"UPDATE {T}_postings SET data = ?, n = ? WHERE term = ? AND start = ?",
        (records.tobytes(), len(records), term, start),
    )
    conn.commit()
    conn.close()
    container = opened(data)
    assert container.repair.compare(brain).keywords == ""
    assert "grass" in container.repair.compare(brain, deep=True).keywords
    assert container.repair.check(brain, deep=True).keywords_rebuilt
    assert hits(container, brain) == before
    close(container)


def test_another_index_on_the_file_refuses_until_the_rebuild_commits(store: tuple[Path, Brain, Hits]) -> None:
    data, brain, before = store
    DAMAGE["data blobs scribbled"](data)
    container = opened(data)
    other = SqliteChunkIndex(data / "chunks.sqlite3", data / "vectors", DIM, background_maintenance=False)
    query = ChunkQuery(text="grass", vector=None, filter=ChunkFilter((brain.id,)), top_k=8)
    with pytest.raises(DamagedStore):
        other.search(query)
    refused: list[bool] = []

    def meanwhile() -> None:  # the rebuild's transaction is open, not committed
        try:
            other.search(query)
            refused.append(False)
        except DamagedStore:
            refused.append(True)

    with faults.armed("index.keywords_rebuilt", action=meanwhile):
        assert container.repair.check(brain).keywords_rebuilt
    assert refused == [True]
    assert [(h.chunk.id, h.score) for h in other.search(query)] == [
        hit for hit in hits(container, brain, vector=False)[QUERIES.index("grass")]
    ]
    assert hits(container, brain) == before
    other.close()
    close(container)


def _report(container: Container, *, dry_run: bool) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cmd_check(container, argparse.Namespace(brain=[], dry_run=dry_run, deep=False))
    return out.getvalue()


def test_the_cairn_check_command_reports_and_rebuilds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(12):
        (docs / f"n{n}.md").write_text(f"# Note {n}\n\nzebra{n} eats grass near river{n}.\n")
    data = tmp_path / "data"
    for name in [name for name in os.environ if name.startswith("CAIRN_")]:  # as `cli` runs it
        monkeypatch.delenv(name)
    # the set-up's ingest in this process, its store closed as the process's would be at its exit
    assert main(["ingest", str(docs), "--brain", "kw", "--create", "--data-dir", str(data)]) == 0
    closed(data)
    container = build_container(Settings(data_dir=data))
    brain = container.brains.resolve("kw")
    before = hits(container, brain, vector=False)
    close(container)
    DAMAGE["data rows deleted"](data)

    dry = cli("check", "--dry-run", "--data-dir", str(data))
    assert dry.returncode == 1 and "the keyword index of brain kw cannot be read" in dry.stdout, dry.stdout
    checked = cli("check", "--data-dir", str(data))

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "the keyword index of brain kw cannot be read" in checked.stdout
    assert "made its keyword index again" in checked.stdout
    after = build_container(Settings(data_dir=data))
    assert hits(after, brain, vector=False) == before
    assert after.repair.compare(brain, deep=True).sound
    close(after)
