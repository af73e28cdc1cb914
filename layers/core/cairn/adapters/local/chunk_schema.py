"""SQLite schema of the embedded ChunkIndex, row ↔ Chunk mapping and the filter clause.

`chunks` holds only the filter fields (narrow rows keep the BM25 leg's filter join cheap) and
each chunk's fingerprint (read per document by rewrites); title, text and context live in the
brain's own FTS5 table under the same rowid. The title column also holds the words of the
chunk's tags (`fts_title`), after a unit separator, so the keyword leg matches them with the
title's weight; reading a row takes off exactly that suffix, which the row's tags spell (rows
written before hold the title alone). Tags and facets are kept twice: as JSON in `chunks` (read
back into the Chunk) and one row each in `chunk_tags` / `chunk_facets` (filtered on).
Datetimes are filtered by their epoch milliseconds (`created_ms`, `valid_from_ms`, ...), never
by ISO text, which would order `...+02:00` against `...Z` wrongly.
`brain_state.generation` changes in every write transaction touching a brain, so readers can
cache per-brain row arrays and revalidate them with one indexed lookup; `written_ms` says when
(wall clock), so a check can tell which records were written after the index last was. A dropped brain's state
row goes with it; `brain_floor` keeps the highest generation and vector epoch a dropped brain
reached, and a brain created afterwards starts past them, so no instance that cached the old
brain's rows, index or files (by brain id and generation or epoch) mistakes them for the new one's.
Beside each brain's FTS5 table, `{fts}_postings` and `{fts}_skipped` hold the term postings the
BM25 leg scores (their DDL and upkeep: fts_postings.py; a brain past fts_search.SMALL_TABLE rows
gets them from the maintenance worker, or from the write that carried it past without one, built
in steps that resume, in `{fts}_partial` and `{fts}_building` while under way: fts_postings_build.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from cairn.adapters.local.fts_separators import SEPARATORS
from cairn.domain.models import OWNER_FACET, Chunk
from cairn.domain.text import tag_words
from cairn.ports.chunks import ChunkFilter

SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    brain_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    path TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    tags TEXT NOT NULL,
    type TEXT,
    scope TEXT,
    sector TEXT,
    valid_from TEXT,
    valid_to TEXT,
    active INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    vec_row INTEGER NOT NULL,
    fingerprint TEXT NOT NULL DEFAULT '',
    is_current INTEGER NOT NULL DEFAULT 1,
    facets TEXT NOT NULL DEFAULT '{}',
    importance REAL,
    valid_from_ms INTEGER,
    valid_to_ms INTEGER
);
CREATE INDEX IF NOT EXISTS chunks_brain_path ON chunks (brain_id, path, vec_row);
CREATE INDEX IF NOT EXISTS chunks_brain_document ON chunks (brain_id, document_id, ordinal, vec_row);
CREATE INDEX IF NOT EXISTS chunks_brain_created ON chunks (brain_id, created_ms);

CREATE TABLE IF NOT EXISTS chunk_tags (
    tag TEXT NOT NULL,
    chunk_rowid INTEGER NOT NULL,
    brain_id TEXT NOT NULL,
    vec_row INTEGER NOT NULL,
    PRIMARY KEY (tag, chunk_rowid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_tags_rowid ON chunk_tags (chunk_rowid);

CREATE TABLE IF NOT EXISTS chunk_facets (
    chunk_rowid INTEGER NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    brain_id TEXT NOT NULL,
    vec_row INTEGER NOT NULL,
    PRIMARY KEY (chunk_rowid, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS brain_state (
    seq INTEGER PRIMARY KEY,
    brain_id TEXT NOT NULL UNIQUE,
    generation INTEGER NOT NULL,
    vec_epoch INTEGER NOT NULL DEFAULT 0,
    written_ms INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS brain_floor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL,
    vec_epoch INTEGER NOT NULL
);
"""

TOKENIZER = f"porter unicode61 remove_diacritics 2 separators {SEPARATORS}"
"""Porter stems over unicode61 (case and Latin diacritics folded), told to split at the symbols
its own Unicode tables are too old to know (fts_separators.py). A brain's table keeps the
tokenizer it was made with; fts_retokenize.py rebuilds one made with an earlier one."""


def fts_table(seq: int) -> str:
    """Each brain has its own FTS5 table (title, text; it also stores them): BM25 statistics
    and the cost of common terms stay within the brain."""
    return f"chunks_fts_{seq}"


def fts_ddl(seq: int, name: str | None = None) -> str:
    """The brain's FTS5 table, made under `name` if given (a rebuild's temporary name)."""
    columns = f"title, text, context, tokenize='{TOKENIZER}'"
    return f"CREATE VIRTUAL TABLE IF NOT EXISTS {name or fts_table(seq)} USING fts5({columns})"


COLUMNS = (
    'id, brain_id, document_id, path, ordinal, start, "end", tags, type, scope, sector, '
    "valid_from, valid_to, active, created_at, created_ms, vec_row, fingerprint, "
    "is_current, facets, importance, valid_from_ms, valid_to_ms"
)
INSERT = f"INSERT INTO chunks ({COLUMNS}) VALUES ({', '.join('?' * 23)}) RETURNING rowid"

# Columns added after the first release, with the definition that fills existing rows: every
# chunk written before memories had a lifecycle is current, has no facets and no importance.
_ADDED_COLUMNS = {
    "fingerprint": "TEXT NOT NULL DEFAULT ''",  # unknown: such chunks are rewritten in full once
    "is_current": "INTEGER NOT NULL DEFAULT 1",
    "facets": "TEXT NOT NULL DEFAULT '{}'",
    "importance": "REAL",
    "valid_from_ms": "INTEGER",
    "valid_to_ms": "INTEGER",
}
# A brain's facets by name, then value: the filter on values and the rows other owners hold
# (BrainRows.allowed) each seek one brain's. Its predecessor, by name and value first, read every
# brain's owners to answer for one.
_FACETS_INDEX = (
    "CREATE INDEX IF NOT EXISTS chunk_facets_brain ON chunk_facets (brain_id, name, value, vec_row)"
)
# A brain's tags, then their rows: the tag filters and compaction's renumbering of a brain's rows
# each seek one brain's. Its predecessor, by tag first, had the renumbering read every brain's tags.
_TAGS_INDEX = "CREATE INDEX IF NOT EXISTS chunk_tags_by_brain ON chunk_tags (brain_id, tag, vec_row)"
# What BrainRows.load reads for a brain, all of it in the index so the load never visits the table.
_ROWS_INDEX = (
    "CREATE INDEX IF NOT EXISTS chunks_brain_rows_v2 ON chunks "
    "(brain_id, active, vec_row, created_ms, is_current, valid_from_ms, valid_to_ms, importance)"
)


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a database made by an earlier version up to SCHEMA (run after it, in one write
    transaction, so one process migrates and the others see the result)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
    for name, definition in _ADDED_COLUMNS.items():
        if name not in columns:
            conn.execute(f"ALTER TABLE chunks ADD COLUMN {name} {definition}")
    if "valid_from_ms" not in columns:  # the validity range was kept as ISO text only
        _fill_valid_ms(conn)
    state_columns = {row[1] for row in conn.execute("PRAGMA table_info(brain_state)")}
    if "vec_epoch" not in state_columns:
        conn.execute("ALTER TABLE brain_state ADD COLUMN vec_epoch INTEGER NOT NULL DEFAULT 0")
    if "written_ms" not in state_columns:  # 0: not known (written before it was kept)
        conn.execute("ALTER TABLE brain_state ADD COLUMN written_ms INTEGER NOT NULL DEFAULT 0")
    conn.execute("DROP INDEX IF EXISTS chunks_brain_rows")  # narrower predecessor of _ROWS_INDEX
    conn.execute(_ROWS_INDEX)
    conn.execute("DROP INDEX IF EXISTS chunk_facets_value")
    conn.execute(_FACETS_INDEX)
    conn.execute("DROP INDEX IF EXISTS chunk_tags_brain")
    conn.execute(_TAGS_INDEX)


def _fill_valid_ms(conn: sqlite3.Connection) -> None:
    rows = conn.execute(
        "SELECT rowid, valid_from, valid_to FROM chunks WHERE valid_from IS NOT NULL OR valid_to IS NOT NULL"
    ).fetchall()
    conn.executemany(
        "UPDATE chunks SET valid_from_ms = ?, valid_to_ms = ? WHERE rowid = ?",
        [(_ms(_when(low)), _ms(_when(high)), rowid) for rowid, low, high in rows],
    )


def brain_state(conn: sqlite3.Connection, brain_id: str) -> tuple[int, int] | None:
    """(seq, generation) of a brain as this transaction sees it; None if never written to."""
    row = conn.execute("SELECT seq, generation FROM brain_state WHERE brain_id = ?", (brain_id,)).fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def vector_epoch(conn: sqlite3.Connection, brain_id: str) -> int:
    """Which vector file of the brain this transaction's `vec_row`s number (compaction moves
    the live rows into the next epoch's file, vector_compaction.py)."""
    row = conn.execute("SELECT vec_epoch FROM brain_state WHERE brain_id = ?", (brain_id,)).fetchone()
    return 0 if row is None else int(row[0])


def select(table: str) -> str:
    """Full chunk rows with their title, text and context from the brain's FTS table; alias `c`."""
    return f"SELECT {_FULL_ROW} FROM chunks c CROSS JOIN {table} f ON f.rowid = c.rowid"


def select_keyed(table: str, key: Literal["id", "rowid"]) -> str:
    """Each row's rowid, then the full row as `select` reads it, for the rows whose `key` is in
    the JSON array bound first; CROSS JOIN pins the join order so SQLite looks each one up
    instead of scanning the brain."""
    return (
        f"SELECT c.rowid, {_FULL_ROW} FROM json_each(?) j CROSS JOIN chunks c ON c.{key} = j.value "
        f"CROSS JOIN {table} f ON f.rowid = c.rowid"
    )


_FULL_ROW = ", ".join(f"c.{col.strip()}" for col in COLUMNS.split(",")) + ", f.title, f.text, f.context"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_CHAR = "\U0010ffff"


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def prefix_range(prefix: str) -> tuple[str, str | None]:
    """[low, high) holding exactly the texts that start with `prefix` (high None: unbounded).

    SQLite compares text as UTF-8 bytes, which orders like code points: bump the last
    character that can be bumped, skipping the surrogates UTF-8 cannot encode.
    """
    stem = prefix.rstrip(_MAX_CHAR)
    if not stem:
        return prefix, None
    following = ord(stem[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:
        following = 0xE000
    return prefix, stem[:-1] + chr(following)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _ms(moment: datetime | None) -> int | None:
    return None if moment is None else epoch_ms(moment)


def to_row(chunk: Chunk, vec_row: int) -> tuple[object, ...]:
    return (
        chunk.id, chunk.brain_id, chunk.document_id, chunk.path, chunk.ordinal, chunk.start,
        chunk.end, json.dumps(chunk.tags), chunk.type, chunk.scope, chunk.sector,
        _iso(chunk.valid_from), _iso(chunk.valid_to), int(chunk.active),
        chunk.created_at.isoformat(), epoch_ms(chunk.created_at), vec_row, chunk.fingerprint,
        int(chunk.current), json.dumps(chunk.facets), chunk.importance, _ms(chunk.valid_from),
        _ms(chunk.valid_to),
    )  # fmt: skip


TAGS_AFTER = "\x1f"


def tags_suffix(tags: Sequence[str]) -> str:
    """What follows a chunk's title in its FTS title column: a unit separator and the words of
    its tags ("" when they have none)."""
    words = tag_words(tags)
    return f"{TAGS_AFTER}{words}" if words else ""


def fts_title(chunk: Chunk) -> str:
    """The FTS title column of a chunk: its title, then the words of its tags, if any."""
    return chunk.title + tags_suffix(chunk.tags)


def from_row(row: Sequence[Any]) -> Chunk:
    (id_, brain_id, document_id, path, ordinal, start, end, tags, type_, scope, sector, valid_from,
     valid_to, active, created_at, _created_ms, _vec, fingerprint, current, facets, importance,
     _from_ms, _to_ms, title, text, context) = row  # fmt: skip
    tags = json.loads(tags)
    if suffix := tags_suffix(tags):
        title = title.removesuffix(suffix)
    return Chunk(
        id=id_,
        brain_id=brain_id,
        document_id=document_id,
        path=path,
        ordinal=ordinal,
        text=text,
        start=start,
        end=end,
        title=title,
        context=context,
        fingerprint=fingerprint,
        tags=tags,
        type=type_,
        scope=scope,
        sector=sector,
        valid_from=_when(valid_from),
        valid_to=_when(valid_to),
        active=bool(active),
        current=bool(current),
        facets=json.loads(facets),
        importance=importance,
        created_at=datetime.fromisoformat(created_at),
    )


def is_plain(chunk_filter: ChunkFilter) -> bool:
    """True when the filter only names brains (and maybe active_only): served from caches."""
    f = chunk_filter
    return not (
        f.path_prefixes
        or f.tags
        or f.any_tags
        or f.document_ids
        or f.facets
        or f.current_only
        or f.owners
        or any(v is not None for v in (f.created_from, f.created_to, f.importance_min, f.valid_at))
    )


def where(chunk_filter: ChunkFilter, brain_ids: Sequence[str]) -> tuple[str, list[object]]:
    """SQL condition on alias `c` for the filter, restricted to `brain_ids`."""
    f = chunk_filter
    parts = [f"c.brain_id IN ({', '.join('?' * len(brain_ids))})"]
    params: list[object] = list(brain_ids)
    if f.active_only:
        parts.append("c.active = 1")
    if f.path_prefixes and "" not in f.path_prefixes:
        ranges = [prefix_range(prefix) for prefix in f.path_prefixes]
        parts.append(
            "("
            + " OR ".join("(c.path >= ? AND c.path < ?)" if high else "c.path >= ?" for _, high in ranges)
            + ")"
        )
        for low, high in ranges:
            params += [low] if high is None else [low, high]
    for tag in dict.fromkeys(f.tags):
        parts.append("EXISTS (SELECT 1 FROM chunk_tags t WHERE t.tag = ? AND t.chunk_rowid = c.rowid)")
        params.append(tag)
    for group in f.any_tags:
        parts.append(
            "EXISTS (SELECT 1 FROM chunk_tags t WHERE t.chunk_rowid = c.rowid "
            f"AND t.tag IN ({', '.join('?' * len(group))}))"
        )
        params += list(group)
    if f.created_from is not None:
        parts.append("c.created_ms >= ?")
        params.append(epoch_ms(f.created_from))
    if f.created_to is not None:
        parts.append("c.created_ms < ?")
        params.append(epoch_ms(f.created_to))
    if f.document_ids:
        parts.append(f"c.document_id IN ({', '.join('?' * len(f.document_ids))})")
        params += list(f.document_ids)
    if f.current_only:
        parts.append("c.is_current = 1")
    for name, values in f.facets:
        parts.append(
            "EXISTS (SELECT 1 FROM chunk_facets x WHERE x.chunk_rowid = c.rowid AND x.name = ? "
            f"AND x.value IN ({', '.join('?' * len(values))}))"
        )
        params += [name, *values]
    if f.importance_min is not None:
        parts.append("c.importance >= ?")  # NULL never passes
        params.append(float(f.importance_min))
    if f.valid_at is not None:
        parts.append("(c.valid_from_ms IS NULL OR c.valid_from_ms <= ?)")
        parts.append("(c.valid_to_ms IS NULL OR c.valid_to_ms > ?)")
        params += [epoch_ms(f.valid_at)] * 2
    for brain_id, subject in f.owners:
        if brain_id not in brain_ids:
            continue
        hidden, hidden_params = hidden_owners(subject)
        parts.append(
            "NOT (c.brain_id = ? AND EXISTS (SELECT 1 FROM chunk_facets x WHERE x.chunk_rowid = c.rowid "
            f"AND {hidden}))"
        )
        params += [brain_id, *hidden_params]
    return " AND ".join(parts), params


def hidden_owners(subject: str | None) -> tuple[str, list[object]]:
    """SQL condition on a `chunk_facets` row (unaliased columns) that names an owner the subject
    does not act for (ChunkFilter.owners): any owner when `subject` is None."""
    if subject is None:
        return "name = ?", [OWNER_FACET]
    low, high = prefix_range(f"{subject}:")
    assert high is not None  # a prefix ending in ":" always has an upper bound
    return "name = ? AND value <> ? AND NOT (value >= ? AND value < ?)", [OWNER_FACET, subject, low, high]
