"""One write transaction of the SQLite ChunkIndex: rows, FTS text, tags and facets, change noted
per brain.

Each touched brain's generation is bumped once at the end; the noted change (rows added, vector
rows released and rows made active, from the generation the write began at) lets the index
derive its cached BrainRows without reading the brain again.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_postings_build
from cairn.adapters.local.brain_rows import Added
from cairn.adapters.local.fts_postings import PostingsWriter
from cairn.domain.models import Chunk


@dataclass
class Delta:
    """What one write transaction changed in one brain."""

    seq: int
    before: int  # the brain's generation when the write began
    epoch: int  # the brain's vector epoch (vector_compaction.py)
    added: dict[int, Added] = field(default_factory=dict)  # by chunk rowid
    removed: list[int] = field(default_factory=list)  # vector rows no longer used
    activated: list[int] = field(default_factory=list)  # vector rows (not in `added`) made active
    # Rows added to a brain without term postings: after the commit the index makes them if the
    # brain is now past fts_search.SMALL_TABLE rows (read then: FTS5's count of the rows is not
    # up to date inside the transaction for the table written last).
    unposted: bool = False


class WriteBatch:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.deltas: dict[str, Delta] = {}
        # By brain seq: FTS changes for its term postings, None while the brain has none (they
        # are made once it holds more rows than the BM25 leg ranks through FTS5 alone), or those
        # of a build under way (fts_postings_build.py).
        self.postings: dict[int, PostingsWriter | None] = {}

    def ensure_brain(self, brain_id: str) -> None:
        """Create the brain's state row and FTS table (visible to others only after the commit);
        a new brain starts at the floor dropped brains left (chunk_schema.py)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO brain_state (brain_id, generation, vec_epoch) "
            "SELECT ?, coalesce(max(generation), 0), coalesce(max(vec_epoch), 0) FROM brain_floor",
            (brain_id,),
        )
        self.conn.execute(schema.fts_ddl(self._delta(brain_id).seq))

    def insert(self, chunk: Chunk, vec_row: int) -> None:
        delta = self._delta(chunk.brain_id)
        rowid = int(self.conn.execute(schema.INSERT, schema.to_row(chunk, vec_row)).fetchone()[0])
        self.conn.execute(
            f"INSERT INTO {schema.fts_table(delta.seq)} (rowid, title, text, context) VALUES (?, ?, ?, ?)",
            (rowid, title := schema.fts_title(chunk), chunk.text, chunk.context),
        )
        postings = self._postings(delta)
        if postings is not None:
            postings.insert(rowid, (title, chunk.text, chunk.context))
        self.conn.executemany(
            "INSERT OR IGNORE INTO chunk_tags (tag, chunk_rowid, brain_id, vec_row) VALUES (?, ?, ?, ?)",
            [(tag, rowid, chunk.brain_id, vec_row) for tag in chunk.tags],
        )
        self.conn.executemany(
            "INSERT INTO chunk_facets (chunk_rowid, name, value, brain_id, vec_row) VALUES (?, ?, ?, ?, ?)",
            [(rowid, name, value, chunk.brain_id, vec_row) for name, value in chunk.facets.items()],
        )
        delta.added[rowid] = Added.of(chunk, vec_row, rowid)

    def remove(self, condition: str, params: Sequence[object]) -> int:
        """Delete the chunks matching `condition` (on `chunks`) with their text, tags and facets."""
        removed = self.conn.execute(
            f"DELETE FROM chunks WHERE {condition} RETURNING rowid, brain_id, vec_row", params
        ).fetchall()
        for rowid, brain_id, vec_row in removed:
            delta = self._delta(brain_id)
            table = schema.fts_table(delta.seq)
            postings = self._postings(delta)
            old = None
            if postings is not None:
                old = self.conn.execute(
                    f"SELECT title, text, context FROM {table} WHERE rowid = ?", (rowid,)
                ).fetchone()
            if postings is not None and old is not None:
                postings.remove(rowid, (old[0], old[1], old[2]))
            self.conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
            self.conn.execute("DELETE FROM chunk_tags WHERE chunk_rowid = ?", (rowid,))
            self.conn.execute("DELETE FROM chunk_facets WHERE chunk_rowid = ?", (rowid,))
            if delta.added.pop(rowid, None) is None:  # else it was inserted earlier in this batch
                delta.removed.append(vec_row)
        return len(removed)

    def activate(self, condition: str, params: Sequence[object]) -> int:
        """Set the inactive chunks matching `condition` (on `chunks`) active; returns how many."""
        changed = self.conn.execute(
            f"UPDATE chunks SET active = 1 WHERE active = 0 AND {condition} "
            "RETURNING rowid, brain_id, vec_row",
            params,
        ).fetchall()
        for rowid, brain_id, vec_row in changed:
            delta = self._delta(brain_id)
            added = delta.added.get(rowid)
            if added is not None:  # inserted earlier in this batch
                delta.added[rowid] = replace(added, active=True)
            else:
                delta.activated.append(vec_row)
        return len(changed)

    def finish(self) -> dict[str, Delta]:
        building: list[Delta] = []  # brains whose postings a build under way has in part
        for delta in self.deltas.values():
            writer = self._postings(delta)
            if writer is not None:
                writer.apply(self.conn)
            if writer is not None and writer.below is not None:
                building.append(delta)
            # a build under way reads the rows past its progress: woken like a brain without postings
            delta.unposted = bool(delta.added) and (writer is None or writer.below is not None)
        now_ms = int(time.time() * 1000)
        self.conn.executemany(
            "UPDATE brain_state SET generation = generation + 1, written_ms = ? WHERE brain_id = ?",
            [(now_ms, brain_id) for brain_id in self.deltas],
        )
        for delta in building:
            fts_postings_build.in_step(self.conn, schema.fts_table(delta.seq), delta.before)
        return self.deltas

    def _postings(self, delta: Delta) -> PostingsWriter | None:
        """The brain's term postings this write keeps in step (fts_postings_build.writer)."""
        if delta.seq not in self.postings:
            table = schema.fts_table(delta.seq)
            self.postings[delta.seq] = fts_postings_build.writer(self.conn, table, delta.before)
        return self.postings[delta.seq]

    def _delta(self, brain_id: str) -> Delta:
        if brain_id not in self.deltas:
            state = schema.brain_state(self.conn, brain_id)
            assert state is not None, "ensure_brain runs first; a brain with chunks has a state row"
            epoch = schema.vector_epoch(self.conn, brain_id)
            self.deltas[brain_id] = Delta(seq=state[0], before=state[1], epoch=epoch)
        return self.deltas[brain_id]
