"""RecordStore on one SQLite file: a single WAL-mode table of versioned JSON items.

Concurrency: one connection per thread; every write is a `BEGIN IMMEDIATE` transaction, so the
version check and the write happen under SQLite's single writer lock (no lost updates). Each
write also counts itself in the `commits` row, naming the store object that wrote it, so
`commit_mark` (CommitWatch) tells another writer's commits (another process: `cairn mcp`, the CLI)
from this object's own, which its callers know of already.

Erasure: connections run with `secure_delete = FAST`, so a delete zeroes the item's cells in
the pages it rewrites anyway (no extra I/O), and `scrub` purges what remains (old page images
in the WAL, freed overflow pages). The same helpers (validation, scan cursors) serve the other
adapters.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cairn.adapters.local import writer_lock
from cairn.adapters.local.durable_dirs import storage_errors
from cairn.domain.errors import CairnError, InvalidInput, RecordConflict, damaged_record
from cairn.ports.records import (
    MAX_GET_MANY,
    MAX_PK_BYTES,
    MAX_SCAN_PREFIXES,
    MAX_SK_BYTES,
    Delete,
    Item,
    Page,
    Put,
    ScanPage,
)

# Store-protocol batches hold up to 1,024 ops, each writing a document and its id pointer.
# (DynamoDB caps TransactWriteItems at 100 items; its adapter must stage larger commits.)
MAX_TRANSACT_OPS = 4096
GET_MANY_CHUNK = 400  # keys per SELECT: two variables each, under SQLite's historic 999 limit
BUSY_TIMEOUT_S = 10.0
BEGIN_RETRY_S = 30.0  # extra patience when SQLite reports BUSY without waiting (e.g. WAL recovery)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    data TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS commits (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n INTEGER NOT NULL,
    writer TEXT NOT NULL
);
"""


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string above every string that starts with `prefix`; None when unbounded.

    UTF-8 byte order equals code point order, so this works on characters: drop trailing
    U+10FFFF (nothing sorts after them within the prefix), then bump the last character,
    skipping the surrogate block that UTF-8 cannot encode.
    """
    stem = prefix.rstrip("\U0010ffff")
    if not stem:
        return None
    nxt = ord(stem[-1]) + 1
    if 0xD800 <= nxt <= 0xDFFF:
        nxt = 0xE000
    return stem[:-1] + chr(nxt)


def check_key(pk: str, sk: str) -> None:
    check_text("pk", pk, MAX_PK_BYTES, allow_empty=False)
    check_text("sk", sk, MAX_SK_BYTES, allow_empty=False)


def check_text(name: str, value: object, max_bytes: int, *, allow_empty: bool) -> None:
    # `name` (pk, sk, …) is the store's own vocabulary: it stays out of messages callers may see.
    del name
    if not isinstance(value, str):
        raise InvalidInput("an identifier must be text")
    if not value and not allow_empty:
        raise InvalidInput("an identifier must not be empty")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput("an identifier is not valid Unicode text") from exc
    if size > max_bytes:
        raise InvalidInput(f"an identifier or path is too long to store (at most {max_bytes} bytes)")


def encode_data(data: object) -> str:
    if not isinstance(data, dict):
        raise InvalidInput("item data must be a JSON object")
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        text.encode("utf-8")  # a lone surrogate would fail where the text is stored: refuse it here
    except UnicodeEncodeError:
        raise InvalidInput("the text to store holds a lone surrogate: it is not valid Unicode") from None
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"item data is not plain JSON: {exc}") from exc
    return text


def validate_query(pk: str, prefix: str, after: str | None, limit: int | None) -> None:
    check_text("pk", pk, MAX_PK_BYTES, allow_empty=False)
    check_text("prefix", prefix, MAX_SK_BYTES, allow_empty=True)
    if after is not None:
        check_text("after", after, MAX_SK_BYTES, allow_empty=True)
    if limit is not None and limit < 1:
        raise InvalidInput("limit must be at least 1")


def validate_scan(prefixes: Sequence[str], limit: int) -> list[str]:
    """Check a scan request; returns its prefixes sorted, less those another prefix covers.

    What is left selects disjoint key ranges in ascending order, so one pass visits each
    partition once even when the caller's prefixes overlap ("a#" and "a#b")."""
    if isinstance(prefixes, str) or not prefixes:
        raise InvalidInput("a scan takes a non-empty list of key prefixes")
    if len(prefixes) > MAX_SCAN_PREFIXES:
        raise InvalidInput(f"a scan takes at most {MAX_SCAN_PREFIXES} prefixes, got {len(prefixes)}")
    for prefix in prefixes:
        check_text("prefix", prefix, MAX_PK_BYTES, allow_empty=False)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_GET_MANY:
        raise InvalidInput(f"limit must be between 1 and {MAX_GET_MANY}")
    kept: list[str] = []
    for prefix in sorted(set(prefixes)):
        if not kept or not prefix.startswith(kept[-1]):
            kept.append(prefix)
    return kept


def encode_cursor(prefixes: list[str], pk: str, sk: str) -> str:
    """An opaque scan cursor: the key the next page starts after, tied to the scan's prefixes
    (as `validate_scan` returns them) so a cursor from another scan is refused, not misread."""
    text = json.dumps([_scan_tag(prefixes), pk, sk], ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii")


def stored_item(pk: str, sk: str, text: str, version: int) -> Item:
    """The item a row holds; DamagedStore when its data is not the JSON object a write stored."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise damaged_record(pk, sk, f"its data is not JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise damaged_record(pk, sk, "its data is not a JSON object")
    return Item(pk, sk, data, version)


def decode_cursor(prefixes: list[str], cursor: str) -> tuple[str, str]:
    """The key an `encode_cursor` cursor of the same scan names; InvalidInput for anything else."""
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8"))
    except (AttributeError, binascii.Error, UnicodeError, ValueError):
        value = None
    if not isinstance(value, list) or len(value) != 3 or value[0] != _scan_tag(prefixes):
        raise InvalidInput("not a cursor of this scan")
    pk, sk = value[1], value[2]
    check_key(pk, sk)
    return pk, sk


def _scan_tag(prefixes: list[str]) -> str:
    text = json.dumps(prefixes, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def validate_keys(keys: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Check a get_many request; returns its distinct keys in first-seen order."""
    if len(keys) > MAX_GET_MANY:
        raise InvalidInput(f"get_many takes at most {MAX_GET_MANY} keys, got {len(keys)}")
    for key in keys:
        if not isinstance(key, tuple) or len(key) != 2:
            raise InvalidInput("get_many keys must be (pk, sk) pairs")
        check_key(*key)
    return list(dict.fromkeys(keys))


def validate_ops(ops: Sequence[Put | Delete]) -> None:
    if len(ops) > MAX_TRANSACT_OPS:
        raise InvalidInput(f"a transaction takes at most {MAX_TRANSACT_OPS} operations")
    seen: set[tuple[str, str]] = set()
    for op in ops:
        pk, sk = (op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk)
        check_key(pk, sk)
        expected = op.expected_version
        if expected is not None and (expected < 0 or (isinstance(op, Delete) and expected == 0)):
            raise InvalidInput(f"invalid expected_version {expected} for {pk!r}/{sk!r}")
        if (pk, sk) in seen:
            raise InvalidInput(f"a transaction touches {pk!r}/{sk!r} more than once")
        seen.add((pk, sk))


def check_condition(pk: str, sk: str, expected: int | None, current: int | None) -> None:
    """Raise Conflict unless the stored version (None = absent) satisfies `expected`."""
    if expected is None:
        return
    found = current or 0
    if found != expected:
        state = f"version {found}" if current else "no item"
        raise RecordConflict(f"{pk!r}/{sk!r}: expected version {expected}, found {state}")


class SqliteRecordStore:
    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._closed = False
        self._mark_lock = threading.Lock()
        self._writer = uuid.uuid4().hex  # this object, in the commits row
        self._foreign = 0  # commit_mark: another writer's commits noticed so far
        conn = self._conn()
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        self._seen: int | None = None  # the count last seen; the first read of it is the start

    # -- RecordStore -------------------------------------------------------------------------

    def get(self, pk: str, sk: str) -> Item | None:
        check_key(pk, sk)
        row = (
            self._conn()
            .execute("SELECT data, version FROM items WHERE pk = ? AND sk = ?", (pk, sk))
            .fetchone()
        )
        return None if row is None else stored_item(pk, sk, row[0], row[1])

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        wanted = validate_keys(keys)
        found: dict[tuple[str, str], Item] = {}
        conn = self._conn()
        for start in range(0, len(wanted), GET_MANY_CHUNK):
            chunk = wanted[start : start + GET_MANY_CHUNK]
            values = ", ".join(["(?, ?)"] * len(chunk))
            # A VALUES table joined on the primary key: one index lookup per key.
            sql = (
                f"WITH wanted(pk, sk) AS (VALUES {values}) "
                "SELECT items.pk, items.sk, data, version FROM wanted "
                "JOIN items ON items.pk = wanted.pk AND items.sk = wanted.sk"
            )
            for pk, sk, data, version in conn.execute(sql, [part for key in chunk for part in key]):
                found[(pk, sk)] = stored_item(pk, sk, data, version)
        return found

    def put(self, item: Item, expected_version: int | None = None) -> Item:
        return self.transact([Put(item, expected_version)])[0]

    def delete(self, pk: str, sk: str, expected_version: int | None = None) -> bool:
        validate_ops([Delete(pk, sk, expected_version)])
        with self._write() as conn:
            current = _version(conn, pk, sk)
            check_condition(pk, sk, expected_version, current)
            conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", (pk, sk))
        return current is not None

    def query(
        self,
        pk: str,
        prefix: str = "",
        *,
        after: str | None = None,
        limit: int | None = None,
        descending: bool = False,
    ) -> Page:
        validate_query(pk, prefix, after, limit)
        where, args = ["pk = ?"], [pk]
        # One bound a side: given `sk >= prefix` beside `sk > after`, the planner seeks to the
        # prefix and steps over every row before `after`, so paging through a partition read it
        # again up to each page (110 pages of 1,000 memories: 7.4 s where 0.24 s).
        lower: tuple[str, str] | None = ("sk >= ?", prefix) if prefix else None
        upper_bound = prefix_upper_bound(prefix)
        upper = None if upper_bound is None else ("sk < ?", upper_bound)
        if after is not None and descending and (upper is None or after <= upper[1]):
            upper = ("sk < ?", after)
        elif after is not None and not descending and (lower is None or after >= lower[1]):
            lower = ("sk > ?", after)
        for bound in (lower, upper):
            if bound is not None:
                where.append(bound[0])
                args.append(bound[1])
        sql = f"SELECT sk, data, version FROM items WHERE {' AND '.join(where)}"
        sql += f" ORDER BY sk {'DESC' if descending else 'ASC'}"
        params: list[Any] = list(args)
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit + 1)  # one extra row tells whether the page was cut
        rows = self._conn().execute(sql, params).fetchall()
        items = [stored_item(pk, sk, data, version) for sk, data, version in rows]
        if limit is not None and len(items) > limit:
            items = items[:limit]
            return Page(items, next_after=items[-1].sk)
        return Page(items)

    def scan(self, prefixes: Sequence[str], *, cursor: str | None = None, limit: int = 1000) -> ScanPage:
        """One primary-key range per prefix, in key order; the cursor is the last key returned."""
        ranges = validate_scan(prefixes, limit)
        start = None if cursor is None else decode_cursor(ranges, cursor)
        conn = self._conn()
        rows: list[tuple[str, str, str, int]] = []
        for prefix in ranges:
            upper = prefix_upper_bound(prefix)
            if start is not None and upper is not None and start[0] >= upper:
                continue  # the scan is past this range
            # One lower bound only: beside `pk >= ?` the planner would not seek to the cursor.
            if start is not None and start[0] >= prefix:
                where, args = ["(pk, sk) > (?, ?)"], list(start)
            else:
                where, args = ["pk >= ?"], [prefix]
            if upper is not None:
                where.append("pk < ?")
                args.append(upper)
            sql = f"SELECT pk, sk, data, version FROM items WHERE {' AND '.join(where)} ORDER BY pk, sk"
            rows += conn.execute(f"{sql} LIMIT ?", [*args, limit + 1 - len(rows)]).fetchall()
            if len(rows) > limit:  # one extra row tells whether the scan goes on
                break
        items = [stored_item(pk, sk, data, version) for pk, sk, data, version in rows[:limit]]
        if len(rows) > limit:
            return ScanPage(items, encode_cursor(ranges, items[-1].pk, items[-1].sk))
        return ScanPage(items)

    def transact(self, ops: Sequence[Put | Delete]) -> list[Item]:
        validate_ops(ops)
        texts: dict[int, str] = {}  # by the data's identity: a link's two items share one dict
        encoded = [
            texts.get(id(op.item.data)) or texts.setdefault(id(op.item.data), encode_data(op.item.data))
            if isinstance(op, Put)
            else ""
            for op in ops
        ]
        written: list[tuple[Put, str, int]] = []
        keys = [(op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk) for op in ops]
        with self._write() as conn:
            # One read of every version and two statements, not two per op: a transaction of
            # many items (concept links: hundreds a document) is mostly per-statement overhead.
            current = _versions(conn, keys)
            rows: list[tuple[str, str, str, int]] = []
            for op, key, text in zip(ops, keys, encoded, strict=True):
                check_condition(*key, op.expected_version, current.get(key))
                if isinstance(op, Put):
                    version = (current.get(key) or 0) + 1
                    rows.append((*key, text, version))
                    written.append((op, text, version))
            conn.executemany(
                "INSERT INTO items (pk, sk, data, version) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (pk, sk) DO UPDATE SET data = excluded.data, version = excluded.version",
                rows,
            )
            conn.executemany(
                "DELETE FROM items WHERE pk = ? AND sk = ?",
                [key for op, key in zip(ops, keys, strict=True) if isinstance(op, Delete)],
            )
        return [stored_item(op.item.pk, op.item.sk, text, v) for op, text, v in written]

    # -- maintenance -------------------------------------------------------------------------

    def scrub(self) -> None:
        """Leave no deleted item's bytes in the database file or its WAL.

        secure_delete zeroes a deleted item's cells in the pages its delete rewrote, but the WAL
        still holds those pages as they were, and data over ~1 KB lives on overflow pages that a
        delete moves to the freelist untouched. So: checkpoint, VACUUM when any page is free (a
        rewrite of the whole file: this is maintenance, after erasing, not a request's work),
        and checkpoint again with TRUNCATE, which empties the WAL. Raises CairnError when
        readers kept the last checkpoint from finishing (try again later)."""
        conn = self._conn()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if conn.execute("PRAGMA freelist_count").fetchone()[0]:
            try:
                conn.execute("VACUUM")
            except sqlite3.OperationalError as exc:
                if not writer_lock.held(exc):
                    raise
                raise writer_lock.unavailable(BUSY_TIMEOUT_S, retry_after_s=BUSY_TIMEOUT_S) from exc
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise CairnError("the record store is busy: its write-ahead log could not be emptied")

    # -- CommitWatch -------------------------------------------------------------------------

    def commit_mark(self) -> int:
        """How many times another writer's commits were noticed: the `commits` row's count has
        moved past the last this object saw, and not by one commit of its own."""
        counted = self._conn().execute("SELECT n, writer FROM commits").fetchone()
        n, writer = counted if counted is not None else (0, "")  # nothing counted yet
        return self._noticed(int(n), own=writer == self._writer)

    def _noticed(self, n: int, *, own: bool) -> int:
        """Count `n`, read now or returned by this object's own commit (`own`: the last commit was
        its own). One own commit past the last seen is its own; any other move is another
        writer's (or own commits whose counting crossed: a read again, never a miss)."""
        with self._mark_lock:
            if self._seen is None:  # nothing is kept from before a first mark is read
                self._seen = n
            elif n > self._seen:
                if not (own and n == self._seen + 1):
                    self._foreign += 1
                self._seen = n
            return self._foreign

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close every thread's connection; the store is unusable afterwards."""
        with self._lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for _, conn in conns:
            conn.close()

    # -- internals ---------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and not self._closed:
            return conn
        with self._lock:
            if self._closed:
                raise RuntimeError("SqliteRecordStore is closed")
            # check_same_thread=False only so close() may close connections from any thread;
            # each connection is used solely by the thread that opened it.
            conn = sqlite3.connect(
                self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA synchronous=FULL")  # a commit survives a power loss, not only a crash
            conn.execute("PRAGMA secure_delete=FAST")
            self._prune_dead_threads()
            self._conns.append((threading.current_thread(), conn))
        self._local.conn = conn
        return conn

    def _prune_dead_threads(self) -> None:
        alive = []
        for thread, conn in self._conns:
            if thread.is_alive():
                alive.append((thread, conn))
            else:
                conn.close()
        self._conns = alive

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        with storage_errors():  # a full disk, or a log SQLite could open only read-only
            writer_lock.begin_immediate(conn, BEGIN_RETRY_S, retry_after_s=BUSY_TIMEOUT_S)
            try:
                yield conn
                counted = conn.execute(
                    "UPDATE commits SET n = n + 1, writer = ? WHERE id = 1 RETURNING n", (self._writer,)
                ).fetchone()
                if counted is None:  # the first commit counted in this file
                    conn.execute("INSERT INTO commits (id, n, writer) VALUES (1, 1, ?)", (self._writer,))
                n = counted[0] if counted is not None else 1
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        self._noticed(int(n), own=True)


def _versions(conn: sqlite3.Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int | None]:
    """The stored version of each key (absent keys are missing from the answer)."""
    found: dict[tuple[str, str], int | None] = {}
    for start in range(0, len(keys), GET_MANY_CHUNK):
        chunk = keys[start : start + GET_MANY_CHUNK]
        values = ", ".join(["(?, ?)"] * len(chunk))
        sql = (
            f"WITH wanted(pk, sk) AS (VALUES {values}) SELECT items.pk, items.sk, version FROM wanted "
            "JOIN items ON items.pk = wanted.pk AND items.sk = wanted.sk"
        )
        for pk, sk, version in conn.execute(sql, [part for key in chunk for part in key]):
            found[(pk, sk)] = int(version)
    return found


def _version(conn: sqlite3.Connection, pk: str, sk: str) -> int | None:
    row = conn.execute("SELECT version FROM items WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
    return None if row is None else int(row[0])
