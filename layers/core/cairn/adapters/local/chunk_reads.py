"""The reads of SqliteChunkIndex's search that need no state of its own: the BM25 leg over each
brain's FTS5 table, chunk ids and rows by rowid, and the hits.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local.brain_rows import BrainRows, FilterMasks
from cairn.adapters.local.fts_boolean import boolean_ranked
from cairn.adapters.local.fts_search import bm25_ranked
from cairn.adapters.local.rrf import Fused
from cairn.adapters.local.vector_store import Rows
from cairn.domain.boolean_query import BoolQuery
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter, ChunkHit


def bm25_leg(
    conn: sqlite3.Connection,
    rows_of: Callable[[str, int], BrainRows],
    weights: tuple[float, float, float],
    terms: list[str],
    boolean: BoolQuery | None,
    masks: FilterMasks,
    brains: dict[str, tuple[int, int]],
    pool: int,
) -> dict[int, float]:
    """rowid → BM25 score (higher is better), best first, merged over the brains; with a
    boolean query, of the rows it matches (fts_boolean.py), `terms` being its positive terms."""
    ranked: list[tuple[int, float]] = []
    chunk_filter = masks.filter
    for brain_id, (seq, generation) in brains.items():
        rows = rows_of(brain_id, generation)
        condition: tuple[str, Sequence[object]] | None = schema.where(chunk_filter, (brain_id,))
        allowed: Rows | None = None
        if every_row_passes(chunk_filter, rows):
            condition = None  # every row of the brain's table qualifies: skip the join
        elif rows.generation == generation:
            # The cached rows are this snapshot's: their mask names the rows the condition can
            # pass, so rows it cannot (superseded values, other types) are neither read nor scored.
            allowed = np.sort(rows.rowid_of[masks.allowed(brain_id, rows)])
        table = schema.fts_table(seq)
        if boolean is not None:
            ranked += boolean_ranked(conn, table, boolean, weights, condition, pool, allowed)
            continue
        ranked += bm25_ranked(
            conn,
            table,
            terms,
            weights,
            condition,
            pool,
            table_rows=rows.live_count,
            allowed=allowed,
        )
    ranked.sort(key=lambda pair: (-pair[1], pair[0]))
    return dict(ranked[:pool])


def load(
    conn: sqlite3.Connection, brains: dict[str, tuple[int, int]], ids: Sequence[str]
) -> dict[str, Chunk]:
    """The chunks of these ids, by id."""
    return {chunk.id: chunk for _, chunk in _read(conn, brains, "id", ids)}


def ids_of(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, str]:
    rows = conn.execute(
        "SELECT c.rowid, c.id FROM json_each(?) j CROSS JOIN chunks c ON c.rowid = j.value",
        (json.dumps(list(rowids)),),
    )
    return dict(rows.fetchall())


def load_rows(
    conn: sqlite3.Connection, brains: dict[str, tuple[int, int]], rowids: Sequence[int]
) -> dict[int, Chunk]:
    """The chunks of these rowids, by rowid (the search's candidates: its legs rank rowids)."""
    return dict(_read(conn, brains, "rowid", rowids))


def _read(
    conn: sqlite3.Connection,
    brains: dict[str, tuple[int, int]],
    key: Literal["id", "rowid"],
    keys: Sequence[str] | Sequence[int],
) -> Iterator[tuple[int, Chunk]]:
    for brain_id, (seq, _generation) in brains.items():
        rows = conn.execute(
            f"{schema.select_keyed(schema.fts_table(seq), key)} WHERE c.brain_id = ?",
            (json.dumps(list(keys)), brain_id),
        )
        for row in rows.fetchall():
            yield int(row[0]), schema.from_row(row[1:])


def hit(fused: Fused[int], chunk: Chunk, bm25: dict[int, float], similar: dict[int, float]) -> ChunkHit:
    return ChunkHit(
        chunk=chunk,
        score=fused.score,
        bm25_rank=fused.ranks[0],
        vector_rank=fused.ranks[1],
        bm25_score=bm25.get(fused.id),
        vector_similarity=similar.get(fused.id),
    )


def every_row_passes(chunk_filter: ChunkFilter, rows: BrainRows) -> bool:
    """True when the filter lets through every live chunk of the brain: only its flags are set
    (active_only, current_only), and the brain has no inactive or superseded chunk to drop."""
    flags_only = schema.is_plain(replace(chunk_filter, current_only=False))
    return (
        flags_only
        and not (chunk_filter.active_only and rows.has_inactive)
        and not (chunk_filter.current_only and rows.has_noncurrent)
    )


def sound_vector_rows(
    conn: sqlite3.Connection, brain_id: str, chunk_ids: Sequence[str]
) -> tuple[int, list[tuple[str, int]]]:
    """The brain's vector epoch, and (chunk id, vector row) of those of the chunks whose rows are
    not recorded damaged (vector_health.py)."""
    epoch = schema.vector_epoch(conn, brain_id)
    rows = conn.execute(
        "SELECT c.id, c.vec_row FROM json_each(?) j CROSS JOIN chunks c ON c.id = j.value "
        "WHERE c.brain_id = ? AND NOT EXISTS (SELECT 1 FROM vector_damage d WHERE d.brain_id = ? "
        "AND d.epoch = ? AND c.vec_row >= d.low AND c.vec_row < d.high)",
        (json.dumps(list(chunk_ids)), brain_id, brain_id, epoch),
    ).fetchall()
    return epoch, [(row[0], int(row[1])) for row in rows]
