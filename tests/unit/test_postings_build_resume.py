"""A brain's term postings are built in steps that each commit (adapters/local/fts_postings_build.py):
a build the index's close stopped goes on from where it stopped at its next run, instead of
starting over (a stdio server is closed at the end of every session, and a big brain's build takes
minutes), and what writes change meanwhile, below or above where the build stands, ends in the
postings a build from the first row makes. A change made without keeping the build in step (a
process of an earlier release) starts it over."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_health, fts_postings, fts_search
from cairn.adapters.local.fts_tokens import POSTING
from cairn.adapters.local.sqlite_chunks import DEFAULT_BM25_WEIGHTS, SqliteChunkIndex
from tests.contract.test_chunk_index_contract import DIM, chunk, search
from tests.unit.test_fts_postings_index import WORDS, _reference, _text

ROWS = 200
STEP = 8  # rows a step: 25 steps over ROWS rows


class _Counted:
    """Stands in for fts_postings.TOKENS: counts the rows tokenized, and calls `then` (once) as
    the `at`-th tokenizing (a step of a build) begins."""

    def __init__(self, real: object) -> None:
        self.real, self.rows, self.calls = real, 0, 0
        self.at, self.then = 0, lambda: None

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def postings(self, rows: list[object], *args: object) -> object:
        self.rows += len(rows)
        self.calls += 1
        if self.calls == self.at:
            self.then()
        return self.real.postings(rows, *args)  # type: ignore[attr-defined]


@pytest.fixture
def tokens(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counted]:
    monkeypatch.setattr(fts_postings, "STEP", STEP)
    counted = _Counted(fts_postings.TOKENS)
    monkeypatch.setattr(fts_postings, "TOKENS", counted)
    yield counted


def _open(tmp_path: Path) -> SqliteChunkIndex:
    return SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, background_maintenance=False)


def _filled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator) -> SqliteChunkIndex:
    """ROWS chunks of one brain, written while the brain was small, then the size lowered under
    them: a brain past the size without its postings (as after a write the build did not follow)."""
    index = _open(tmp_path)
    chunks = [chunk(f"c{n}", _text(rng, 30), document_id=f"d{n}") for n in range(ROWS)]
    index.upsert(chunks, rng.standard_normal((ROWS, DIM)).astype(np.float32))
    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    return index


def _stopped_after(index: SqliteChunkIndex, steps: int, tokens: _Counted) -> None:
    """Run the build as the maintenance worker does, the index's close asked for during its
    `steps`-th step: it stops before the next one."""
    tokens.calls, tokens.at = 0, steps
    tokens.then = index._maintenance._stop.set  # what close does first
    index._maintenance._stop.clear()
    index._build_postings("b1")
    assert tokens.calls == steps  # no step after the stop was asked for


def _table(conn: sqlite3.Connection) -> str:
    state = schema.brain_state(conn, "b1")
    assert state is not None
    return schema.fts_table(state[0])


def _by_term(conn: sqlite3.Connection, postings: str) -> dict[str, list[tuple[int, ...]]]:
    """Each term's postings in rowid order, whatever segments hold them; each segment checked."""
    terms: dict[str, list[tuple[int, ...]]] = {}
    for term, start, n, data in conn.execute(
        f"SELECT term, start, n, data FROM {postings} ORDER BY term, start"
    ):
        records = np.frombuffer(data, dtype=POSTING)
        assert 1 <= n == len(records) <= fts_postings.CAP and int(records["rowid"][0]) == start
        assert (np.diff(records["rowid"].astype(np.int64)) > 0).all()
        terms.setdefault(term, []).extend(tuple(int(v) for v in r) for r in records.tolist())
    return terms


def _from_zero(conn: sqlite3.Connection, table: str) -> dict[str, list[tuple[int, ...]]]:
    """The postings one build from the first row makes of the table as it is now (rolled back)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        fts_postings.rebuild(conn, table)
        return _by_term(conn, fts_postings.names(table)[0])
    finally:
        conn.execute("ROLLBACK")


def _assert_as_from_zero(index: SqliteChunkIndex) -> None:
    conn = index._db.get()
    table = _table(conn)
    assert fts_postings.exists(conn, table)
    made = _by_term(conn, fts_postings.names(table)[0])
    assert made == _from_zero(conn, table)
    left = [
        n for n in fts_postings.partial_names(table) if conn.execute(f"PRAGMA table_info({n})").fetchall()
    ]
    assert left == []


def _assert_kept_in_step(index: SqliteChunkIndex) -> None:
    """The writes kept the build in step: it goes on from where it stood, not from the first row."""
    from cairn.adapters.local import fts_postings_build

    conn = index._db.get()
    state = schema.brain_state(conn, "b1")
    assert state is not None
    progress = fts_postings_build.progress(conn, _table(conn))
    assert progress is not None and progress.next > 0 and progress.generation == state[1]


def test_a_stopped_build_goes_on_from_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tokens: _Counted
) -> None:
    index = _filled(tmp_path, monkeypatch, np.random.default_rng(21))
    tokens.rows = 0
    _stopped_after(index, 3, tokens)
    conn = index._db.get()
    assert not fts_postings.exists(conn, _table(conn))  # searched through FTS5 until whole
    assert fts_health.problem(conn, "b1", deep=True) == ""  # a build under way is no damage
    index.close()

    again = _open(tmp_path)
    _stopped_after(again, 4, tokens)  # closed again, as the next session's end does
    again.close()
    last = _open(tmp_path)
    last._build_postings("b1")
    assert tokens.rows == ROWS  # every row read once over the three runs, none twice
    _assert_as_from_zero(last)
    last.close()


def test_writes_between_steps_end_in_the_postings_a_build_from_zero_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tokens: _Counted
) -> None:
    rng = np.random.default_rng(22)
    index = _filled(tmp_path, monkeypatch, rng)
    _stopped_after(index, 5, tokens)  # the first 40 rows have their postings
    # still closing: the writes meanwhile leave the build where it stands
    vectors = rng.standard_normal((60, DIM)).astype(np.float32)
    index.upsert([chunk(f"new{n}", _text(rng, 25), document_id=f"new{n}") for n in range(20)], vectors[:20])
    index.upsert(  # rows below where the build stands rewritten (removed, and added at new rowids)
        [chunk(f"c{n}", _text(rng, 20), document_id=f"d{n}") for n in (3, 17, 33)], vectors[20:23]
    )
    index.delete_chunks("b1", ["c5", "c38", "c120", "new4"])  # below and above
    index.delete_document("b1", "d9")
    index.set_context("b1", "d12", _text(rng, 15))  # a row below: its text changes in place
    index.set_context("b1", "d150", _text(rng, 15))  # a row above
    index.upsert(  # in another brain meanwhile: its rowids fall among this brain's
        [chunk(f"o{n}", _text(rng, 10), brain_id="b2", document_id=f"o{n}") for n in range(10)],
        vectors[23:33],
    )
    _assert_kept_in_step(index)
    _stopped_after(index, 6, tokens)
    index.delete_chunks("b1", [f"c{n}" for n in range(40, 90, 7)])
    index.upsert(
        [chunk(f"late{n}", _text(rng, 25), document_id=f"late{n}") for n in range(10)], vectors[33:43]
    )
    _assert_kept_in_step(index)
    index._maintenance._stop.clear()
    index._build_postings("b1")
    _assert_as_from_zero(index)

    conn = index._db.get()
    for terms in ([WORDS[0], WORDS[5]], [WORDS[2]], [WORDS[9], WORDS[30], WORDS[99]]):
        expected = _reference(index, "b1", terms, 20)
        rows = int(conn.execute(f"SELECT count(*) FROM {_table(conn)}").fetchone()[0])
        got = fts_search.bm25_ranked(
            conn, _table(conn), terms, DEFAULT_BM25_WEIGHTS, None, 20, table_rows=rows
        )
        assert got == expected, terms
    assert search(index, "kingfisher") == []
    index.close()


def test_a_change_the_build_was_not_kept_in_step_with_starts_it_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tokens: _Counted
) -> None:
    """An earlier release's process writes the brain without the partial postings (it knows none):
    it moves the brain's generation on, and the build, out of step, starts over."""
    index = _filled(tmp_path, monkeypatch, np.random.default_rng(23))
    _stopped_after(index, 4, tokens)
    index.close()
    with sqlite3.connect(tmp_path / "chunks.db") as db:  # as that process's write does it
        table = _table(db)
        rowid = db.execute(f"SELECT min(rowid) FROM {table}").fetchone()[0]
        db.execute(f"UPDATE {table} SET text = 'a kingfisher over the weir' WHERE rowid = ?", (rowid,))
        db.execute("UPDATE brain_state SET generation = generation + 1 WHERE brain_id = 'b1'")
    again = _open(tmp_path)
    tokens.rows = 0
    again._build_postings("b1")
    assert tokens.rows == ROWS  # from the first row again
    _assert_as_from_zero(again)
    assert search(again, "kingfisher")[0] == "c0"
    again.close()


def test_a_compaction_between_steps_keeps_the_build_in_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tokens: _Counted
) -> None:
    """Compaction moves the brain's generation on but renumbers only the rows' vectors: the
    build goes on from where it stood (its step left, say, when the writer lock was busy)."""
    from cairn.adapters.local import fts_postings_build

    index = _filled(tmp_path, monkeypatch, np.random.default_rng(24))
    _stopped_after(index, 3, tokens)
    index.delete_chunks("b1", [f"c{n}" for n in range(5, 200, 4)])  # below and above
    index._maintenance._stop.clear()
    monkeypatch.setattr(index._maintenance, "grown", lambda brain_id: None)  # the compaction alone
    assert index.compact("b1") is not None
    _assert_kept_in_step(index)
    conn = index._db.get()
    table = _table(conn)
    progress = fts_postings_build.progress(conn, table)
    assert progress is not None
    (left,) = conn.execute(f"SELECT count(*) FROM {table} WHERE rowid >= ?", (progress.next,)).fetchone()
    tokens.rows = 0
    index._build_postings("b1")
    assert tokens.rows == left  # the rows past its progress only, not every row again
    _assert_as_from_zero(index)
    index.close()


@pytest.mark.parametrize("damage", ["dropped", "torn", "unreadable progress"])
def test_a_damaged_build_under_way_is_damage_the_keyword_rebuild_repairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tokens: _Counted, damage: str
) -> None:
    """Every write of the brain keeps a build's partial postings in step: damaged, they would
    fail each such write as an internal error while the brain's probe found it sound."""
    from cairn.adapters.local.fts_damage import KeywordsDamaged

    rng = np.random.default_rng(25)
    index = _filled(tmp_path, monkeypatch, rng)
    _stopped_after(index, 3, tokens)
    index.close()
    with sqlite3.connect(tmp_path / "chunks.db") as db:
        partial, building = fts_postings.partial_names(_table(db))
        if damage == "dropped":
            db.execute(f"DROP TABLE {partial}")
        elif damage == "torn":
            db.execute(
                f"UPDATE {partial} SET data = substr(data, 2) WHERE term = (SELECT min(term) FROM {partial})"
            )
        else:
            db.execute(f"UPDATE {building} SET skipped = 'not json'")
    again = _open(tmp_path)
    assert fts_health.problem(again._db.get(), "b1") != ""
    vector = rng.standard_normal((1, DIM)).astype(np.float32)
    with pytest.raises(KeywordsDamaged):  # refused as damaged_store, not an internal error
        again.upsert([chunk("c1", _text(rng, 20), document_id="d1")], vector)
    again.rebuild_keywords("b1")
    again.upsert([chunk("c1", _text(rng, 20), document_id="d1")], vector)
    _assert_as_from_zero(again)
    again.close()
