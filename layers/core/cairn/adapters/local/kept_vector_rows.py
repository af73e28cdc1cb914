"""Which chunks of an upsert keep the vector row they already point at.

Rewriting a chunk whose text did not change (a memory superseded, its validity, tags or owner
moved) hands the index the vector it already holds (services/documents/indexing.py lends it).
Appending it again left a dead row per rewrite: a fact key written 10,000 times left 20,000 rows,
half of them dead until compaction. A chunk whose stored row holds the vector it is upserted with
points at that row again instead. The row is compared byte for byte, so only a row that reads
back as the vector given is kept: never one the vector file lost or damaged (a brain with
recorded damage keeps none, its rows are being rebuilt), and the chunk's new row is written in
the same transaction as before, so a crash leaves the old chunk on its row.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np

from cairn.adapters.local import vector_health
from cairn.adapters.local.vector_store import Floats, Rows, VectorFile, VectorFileShrunk, unit_rows


def kept_rows(
    conn: sqlite3.Connection,
    brain_id: str,
    epoch: int,
    file: VectorFile,
    chunk_ids: Sequence[str],
    vectors: Floats,
) -> Rows:
    """Inside the upsert's write transaction (after reading the epoch): per chunk, the vector row
    it keeps, or -1 when its vector is to be appended. `vectors` are the unit rows to store."""
    kept = np.full(len(chunk_ids), -1, dtype=np.int64)
    stored = dict(
        conn.execute(
            # json_each first: each id is sought (given `brain_id = ?` beside `id IN`, SQLite read
            # every chunk of the brain, 26 ms an upsert at 100,000)
            "SELECT c.id, c.vec_row FROM json_each(?) j CROSS JOIN chunks c ON c.id = j.value "
            "WHERE c.brain_id = ?",
            (json.dumps(list(chunk_ids)), brain_id),
        ).fetchall()
    )
    if not stored or vector_health.damaged(conn, brain_id, epoch):
        return kept
    at = [i for i, chunk_id in enumerate(chunk_ids) if chunk_id in stored]
    rows = np.array([stored[chunk_ids[i]] for i in at], dtype=np.int64)
    try:
        held = file.read(rows)
    except (VectorFileShrunk, FileNotFoundError, IndexError):  # cut short: appended as before
        return kept
    given = vectors[at]
    # A vector lent from the index comes back normalised again, which moves a third of them by
    # a bit or two: the row it was read from is still the one it names.
    same = (held == given).all(axis=1) | (unit_rows(held) == given).all(axis=1)
    kept[np.asarray(at, dtype=np.int64)[same]] = rows[same]
    return kept
