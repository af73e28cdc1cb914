"""A brain's term postings built in steps that each commit, so that a build a close stopped goes
on from where it stopped: a stdio server lives as long as one agent session, and a brain of a
million chunks takes minutes, so a build started over at every start never ended.

While a build is under way, `{fts}_partial` holds the postings of the rows below `next` (laid out
as `{fts}_postings`) and `{fts}_building` one row: `next`, the brain's generation those postings
are in step with, and the tokens they leave out. Each step, in one write transaction, reads the
next STEP rows from `next` on, adds their postings as a write adds new rows' (each term's last
segment extended) and moves `next` past them; the step that finds no row after them renames the
partial table `{fts}_postings` and makes `{fts}_skipped`, whose presence tells searches and
writes the postings are whole (fts_postings.exists).

A write meanwhile keeps the partial postings in step for its rows below `next` (a later step reads
the others as they are then) and moves the recorded generation on with the brain's (`in_step`).
A change to the brain's rows by anything that does not (a process of an earlier release, an
upgrade rewriting the titles) leaves the two generations apart, and the next step starts the
build over. Compaction, which moves the generation on but renumbers only the rows' vectors,
keeps it in step (`text_untouched`). Either way the postings made are those a build from the
first row makes.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings
from cairn.adapters.local.fts_postings import BuildStopped, PostingsWriter
from cairn.adapters.local.sqlite_threads import ThreadConnections

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Progress:
    """Where a build under way stands: the rows below `next` have their postings, in step with
    the brain's `generation`, leaving out `skip`."""

    next: int
    generation: int
    skip: frozenset[str]


def progress(conn: sqlite3.Connection, table: str) -> Progress | None:
    building = fts_postings.partial_names(table)[1]
    if conn.execute("SELECT 1 FROM pragma_table_info(?) LIMIT 1", (building,)).fetchone() is None:
        return None
    row = conn.execute(f"SELECT next, generation, skipped FROM {building}").fetchone()
    if row is None:
        return None
    return Progress(int(row[0]), int(row[1]), frozenset(json.loads(row[2])))


def writer(conn: sqlite3.Connection, table: str, generation: int) -> PostingsWriter | None:
    """What a write at the brain's `generation` (before its own) keeps in step: the whole
    postings, a build's under way (its `below` set), or nothing (no postings, or a build a
    change it did not see has put out of step: started over at its next step)."""
    if fts_postings.exists(conn, table):
        return PostingsWriter(table)
    found = progress(conn, table)
    if found is None or found.generation != generation:
        return None
    into = fts_postings.partial_names(table)[0]
    return PostingsWriter(table, into=into, skip=found.skip, below=found.next)


def in_step(conn: sqlite3.Connection, table: str, before: int) -> None:
    """After a write that kept a build's partial postings in step moved the brain's generation
    on from `before`: the build stays in step with it."""
    building = fts_postings.partial_names(table)[1]
    conn.execute(f"UPDATE {building} SET generation = ? WHERE generation = ?", (before + 1, before))


def text_untouched(conn: sqlite3.Connection, table: str, before: int) -> None:
    """After a change that moved the brain's generation on from `before` without touching its
    rows' text (compaction renumbers their vectors only): a build in step stays in step."""
    if progress(conn, table) is not None:
        in_step(conn, table, before)


def step(conn: sqlite3.Connection, table: str, generation: int) -> bool:
    """One step of the build of the brain's postings, in the caller's write transaction, the
    brain being at `generation`; whether its postings are whole."""
    if fts_postings.exists(conn, table):  # made meanwhile, by an earlier release's whole build
        _discard(conn, table)
        return True
    found = progress(conn, table)
    if found is None or found.generation != generation:
        if found is not None:
            log.info("term postings of a brain started over: its rows changed out of their step")
        found = _start(conn, table, generation)
    partial, building = fts_postings.partial_names(table)
    rows = conn.execute(
        f"SELECT rowid, title, text, context FROM {table} WHERE rowid >= ? ORDER BY rowid LIMIT ?",
        (found.next, fts_postings.STEP),
    ).fetchall()
    if rows:
        new = fts_postings.TOKENS.postings([(int(r[0]), (r[1], r[2], r[3])) for r in rows], found.skip)
        fts_postings.append(conn, partial, new)
        conn.execute(f"UPDATE {building} SET next = ?", (int(rows[-1][0]) + 1,))
    if len(rows) == fts_postings.STEP:
        return False
    conn.execute(f"ALTER TABLE {partial} RENAME TO {fts_postings.names(table)[0]}")
    conn.execute(f"DROP TABLE {building}")
    fts_postings.make_skipped(conn, table, found.skip)
    return True


def build(db: ThreadConnections, lock: threading.Lock, brain_id: str, stop: Callable[[], bool]) -> None:
    """Step the brain's build until its postings are whole, each step in a write transaction of
    its own under `lock` (the index's writers wait a step at most); BuildStopped before a step when
    `stop` says so (the steps taken are kept)."""
    while True:
        if stop():
            raise BuildStopped()
        with lock, db.transaction(long=True) as conn:  # a step: a second or two at most
            state = schema.brain_state(conn, brain_id)
            if state is None or step(conn, schema.fts_table(state[0]), state[1]):
                return


def _start(conn: sqlite3.Connection, table: str, generation: int) -> Progress:
    _discard(conn, table)
    partial, building = fts_postings.partial_names(table)
    fts_postings.create(conn, partial)
    conn.execute(
        f"CREATE TABLE {building} (next INTEGER NOT NULL, generation INTEGER NOT NULL, skipped TEXT NOT NULL)"
    )
    skip = fts_postings.stop_tokens()
    conn.execute(
        f"INSERT INTO {building} (next, generation, skipped) VALUES (0, ?, ?)",
        (generation, json.dumps(sorted(skip))),
    )
    return Progress(0, generation, skip)


def _discard(conn: sqlite3.Connection, table: str) -> None:
    for name in fts_postings.partial_names(table):
        conn.execute(f"DROP TABLE IF EXISTS {name}")
