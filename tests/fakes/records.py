"""In-memory RecordStore: a dict under a lock, with the same rules as the SQLite adapter."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from cairn.adapters.local.sqlite_records import (
    check_condition,
    check_key,
    decode_cursor,
    encode_cursor,
    encode_data,
    validate_keys,
    validate_ops,
    validate_query,
    validate_scan,
)
from cairn.ports.records import Delete, Item, Page, Put, ScanPage


class MemoryRecordStore:
    def __init__(self) -> None:
        # (pk, sk) -> (JSON text, version); storing text gives callers fresh copies, like a database
        self.rows: dict[tuple[str, str], tuple[str, int]] = {}
        self._lock = threading.Lock()

    def get(self, pk: str, sk: str) -> Item | None:
        check_key(pk, sk)
        with self._lock:
            row = self.rows.get((pk, sk))
        return None if row is None else Item(pk, sk, json.loads(row[0]), row[1])

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        wanted = validate_keys(keys)
        with self._lock:
            rows = {key: self.rows[key] for key in wanted if key in self.rows}
        return {key: Item(*key, json.loads(text), version) for key, (text, version) in rows.items()}

    def put(self, item: Item, expected_version: int | None = None) -> Item:
        return self.transact([Put(item, expected_version)])[0]

    def delete(self, pk: str, sk: str, expected_version: int | None = None) -> bool:
        validate_ops([Delete(pk, sk, expected_version)])
        with self._lock:
            row = self.rows.get((pk, sk))
            check_condition(pk, sk, expected_version, row[1] if row else None)
            return self.rows.pop((pk, sk), None) is not None

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
        with self._lock:
            rows = [(sk, row) for (p, sk), row in self.rows.items() if p == pk and sk.startswith(prefix)]
        # str order is code point order, which is UTF-8 byte order
        rows.sort(key=lambda r: r[0], reverse=descending)
        if after is not None:
            rows = [r for r in rows if (r[0] < after if descending else r[0] > after)]
        cut = limit is not None and len(rows) > limit
        rows = rows[:limit] if limit is not None else rows
        items = [Item(pk, sk, json.loads(text), version) for sk, (text, version) in rows]
        return Page(items, next_after=items[-1].sk if cut else None)

    def scan(self, prefixes: Sequence[str], *, cursor: str | None = None, limit: int = 1000) -> ScanPage:
        """In key order, like the SQLite adapter; the cursor is the last key returned."""
        ranges = validate_scan(prefixes, limit)
        start = None if cursor is None else decode_cursor(ranges, cursor)
        with self._lock:
            rows = [
                (key, row)
                for key, row in self.rows.items()
                if key[0].startswith(tuple(ranges)) and (start is None or key > start)
            ]
        rows.sort(key=lambda r: r[0])
        items = [Item(*key, json.loads(text), version) for key, (text, version) in rows[:limit]]
        if len(rows) > limit:
            return ScanPage(items, encode_cursor(ranges, items[-1].pk, items[-1].sk))
        return ScanPage(items)

    def transact(self, ops: Sequence[Put | Delete]) -> list[Item]:
        validate_ops(ops)
        encoded = [encode_data(op.item.data) if isinstance(op, Put) else "" for op in ops]
        with self._lock:
            for op in ops:
                key = (op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk)
                row = self.rows.get(key)
                check_condition(*key, op.expected_version, row[1] if row else None)
            written = []
            for op, text in zip(ops, encoded, strict=True):
                if isinstance(op, Put):
                    key = (op.item.pk, op.item.sk)
                    row = self.rows.get(key)
                    self.rows[key] = (text, (row[1] if row else 0) + 1)
                    written.append(Item(*key, json.loads(text), self.rows[key][1]))
                else:
                    self.rows.pop((op.pk, op.sk), None)
        return written

    def commit_mark(self) -> int:
        """CommitWatch: nothing but this object ever writes to it, so the mark never moves."""
        return 0
