"""A user's ThoughtMCP memory rows: what changes on every read (strength, last access, access
count, reinforcement) and the link statistics, one record item per memory beside its document.

| record        | pk                               | sk            |
|---------------|----------------------------------|---------------|
| memory row    | `thoughts#<brain>#<user key>`    | `<memory id>` |

A user's partition holds only their rows, so a query of one user's rows cannot reach another's.
This repository is the only user of these keys; a change that must land with others (a link and
the rows it counts, a memory's document and its row) takes its ops (`put_op`, `delete_op`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cairn.domain.errors import reading_record
from cairn.domain.paths import user_key
from cairn.ports.records import MAX_SK_BYTES, Delete, Item, Put, RecordStore
from cairn.services.repositories import all_items, delete_partition, get_all
from cairn.services.thoughtmcp.models import Row


class ThoughtRows:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def get(self, brain_id: str, user_id: str, ids: Sequence[str]) -> dict[str, Row]:
        """The rows of these memories of the user (one batch read), by memory id; an id no row
        could be keyed by (empty, over a key's bytes) names none."""
        pk = rows_pk(brain_id, user_id)
        items = get_all(self.records, [(pk, i) for i in dict.fromkeys(ids) if _may_key(i)])
        return {item.sk: row_of(item) for item in items.values()}

    def all(self, brain_id: str, user_id: str) -> list[Row]:
        return [row_of(item) for item in all_items(self.records, rows_pk(brain_id, user_id))]

    def newest(self, brain_id: str, user_id: str, count: int) -> list[Row]:
        page = self.records.query(
            rows_pk(brain_id, user_id), limit=count, descending=True
        )  # ids are time-ordered
        return [row_of(item) for item in page.items]

    @staticmethod
    def put_op(brain_id: str, row: Row, version: int) -> Put:
        """The op writing `row` if it is still at `version` (0: a new row)."""
        return Put(Item(rows_pk(brain_id, row.user_id), row.id, row.data()), version)

    @staticmethod
    def delete_op(brain_id: str, row: Row, version: int) -> Delete:
        return Delete(rows_pk(brain_id, row.user_id), row.id, expected_version=version)

    def put(self, brain_id: str, row: Row, version: int) -> None:
        """Write `row` if it is still at `version` (0: a new row); Conflict otherwise."""
        op = self.put_op(brain_id, row, version)
        self.records.put(op.item, op.expected_version)

    def commit(self, ops: Sequence[Put | Delete]) -> None:
        """Apply ops built here and by the link repository together, or none (Conflict)."""
        self.records.transact(ops)

    def delete_user(self, brain_id: str, user_id: str) -> int:
        """Remove every row of the user; returns how many."""
        return delete_partition(self.records, rows_pk(brain_id, user_id))


def rows_pk(brain_id: str, user_id: str) -> str:
    return f"{thoughts_prefix(brain_id)}{user_key(user_id)}"


def thoughts_prefix(brain_id: str) -> str:
    """What every partition of a brain's ThoughtMCP memory rows starts with (one per user)."""
    return f"thoughts#{brain_id}#"


def row_of(item: Item) -> Row:
    with reading_record(item.pk, item.sk, "ThoughtMCP memory"):
        return _row_of(item)


def _row_of(item: Item) -> Row:
    d = item.data
    created = datetime.fromisoformat(d["created_at"])
    last, reinforced = d.get("last_access"), d.get("reinforced_at")
    return Row(
        item.sk,
        d["user_id"],
        d.get("session_id") or "",
        d["sector"],
        created,
        datetime.fromisoformat(last) if last else created,
        datetime.fromisoformat(reinforced) if reinforced else None,
        d.get("access_count") or 0,
        d["strength"],
        d["salience"],
        d.get("importance"),
        d.get("category"),
        d.get("context"),
        d.get("keywords") or [],
        d.get("tags") or [],
        d.get("link_sum") or 0.0,
        d.get("link_count") or 0,
        d.get("content"),
        d["path"],
        item.version,
    )


def _may_key(memory_id: object) -> bool:
    if not isinstance(memory_id, str) or not memory_id:
        return False
    try:
        return len(memory_id.encode("utf-8")) <= MAX_SK_BYTES
    except UnicodeEncodeError:  # a lone surrogate: no stored id holds one
        return False
