"""Staged-transaction records, and what readers and writers do with an item another one locked.

A staged transaction (more ops than one TransactWriteItems takes; dynamodb_staged.py) keeps a
state record at (`#txns`, <txid>) — pending, committed or aborted — and one record per op at
(`#tx#<txid>`, `op#<index>`). While it runs, every item it writes carries `tx` = <txid>.

Readers see through a lock: the staged value once the state is committed, the item's own value
otherwise. Writers clear a lock before writing: roll the op forward (committed), undo it
(aborted, or pending past its lease: they abort it first), or wait for a live owner.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from cairn.adapters.aws import dynamodb_writes as writes
from cairn.adapters.aws.dynamodb_codec import (
    DATA,
    LOCK,
    LOCK_OP,
    PK,
    SK,
    VERSION,
    Op,
    committed,
    error_code,
    int_of,
    key,
    storage_error,
    text_of,
)
from cairn.ports.records import Item

TXNS_PK = "#txns"
CONFLICT_RETRIES = 5
PENDING, COMMITTED, ABORTED = "pending", "committed", "aborted"
STATE, STARTED = "st", "at"
OP_PK, OP_SK, OP_KIND = "tp", "ts", "k"
OP_TTL = "e"  # never the table's TTL attribute: an op record must outlive its transaction


class Reread:
    """Returned by `Locks.visible` when the lock vanished between two reads: read the item again."""


REREAD = Reread()


def ops_pk(txid: str) -> str:
    return f"#tx#{txid}"


def op_sk(index: int) -> str:
    return f"op#{index:05d}"


def op_record(txid: str, index: int, op: Op) -> dict[str, Any]:
    record: dict[str, Any] = {
        PK: {"S": ops_pk(txid)},
        SK: {"S": op_sk(index)},
        OP_PK: {"S": op.pk},
        OP_SK: {"S": op.sk},
        OP_KIND: {"S": "del" if op.text is None else "put"},
    }
    if op.text is not None:
        record[DATA] = {"S": op.text}
    if op.expires_at is not None:
        record[OP_TTL] = {"N": str(op.expires_at)}
    return record


def op_from_record(record: dict[str, Any]) -> Op:
    kind = text_of(record, OP_KIND)
    return Op(
        pk=str(record[OP_PK]["S"]),
        sk=str(record[OP_SK]["S"]),
        expected=None,
        text=text_of(record, DATA) if kind == "put" else None,
        expires_at=int_of(record, OP_TTL),
    )


def is_conditional_failure(exc: ClientError) -> bool:
    return error_code(exc) == "ConditionalCheckFailedException"


class Locks:
    def __init__(self, client: Any, table: str, *, lease_s: float, now: Callable[[], float]) -> None:
        self.client = client
        self.table = table
        self.lease_s = lease_s
        self.now = now

    # -- reading through a lock ----------------------------------------------------------------

    def visible(self, raw: dict[str, Any]) -> Item | Reread | None:
        """What a reader sees of the stored item `raw` (None: no record)."""
        txid = text_of(raw, LOCK)
        if txid is None:
            return committed(raw)
        state = self.state(txid)
        if state is None:
            return REREAD  # finished and cleaned up since `raw` was read
        if state[0] != COMMITTED:
            return committed(raw)
        record = self.staged(txid, int_of(raw, LOCK_OP) or 0)
        if record is None:
            return REREAD
        op = op_from_record(record)
        if op.text is None:
            return None
        return Item(op.pk, op.sk, json.loads(op.text), (int_of(raw, VERSION) or 0) + 1)

    def state(self, txid: str) -> tuple[str, float] | None:
        raw = self._get(TXNS_PK, txid)
        if raw is None:
            return None
        return str(raw[STATE]["S"]), float(raw[STARTED]["N"])

    def staged(self, txid: str, index: int) -> dict[str, Any] | None:
        return self._get(ops_pk(txid), op_sk(index))

    # -- clearing a lock before writing --------------------------------------------------------

    def clear(self, raw: dict[str, Any]) -> bool:
        """Finish or undo the foreign lock on `raw`; False while its owner is within its lease."""
        txid = text_of(raw, LOCK)
        if txid is None:
            return True
        target = Op(str(raw[PK]["S"]), str(raw[SK]["S"]), None)
        state = self.state(txid)
        if state is not None and state[0] == PENDING:
            if self.now() - state[1] < self.lease_s:
                return False
            if not self.abort(txid):
                return True  # committed or aborted meanwhile: the caller looks again
            state = (ABORTED, state[1])
        if state is not None and state[0] == COMMITTED:
            record = self.staged(txid, int_of(raw, LOCK_OP) or 0)
            if record is not None:
                self.finish(writes.apply(self.table, op_from_record(record), txid))
        else:
            self.undo(target, txid)
        return True

    def abort(self, txid: str) -> bool:
        """Mark a pending transaction aborted; False when it is no longer pending."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=key(TXNS_PK, txid),
                UpdateExpression="SET #st = :aborted",
                ConditionExpression="#st = :pending",
                ExpressionAttributeNames={"#st": STATE},
                ExpressionAttributeValues={":aborted": {"S": ABORTED}, ":pending": {"S": PENDING}},
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise storage_error("UpdateItem", exc) from exc
        return True

    def undo(self, target: Op, txid: str) -> None:
        """Remove `txid`'s lock from `target`, dropping the item if the lock created it."""
        if not self.finish(writes.release(self.table, target, txid)):
            self.finish(writes.drop_placeholder(self.table, target, txid))

    def finish(self, request: writes.Request) -> bool:
        """Send one lock-conditional write; False when its condition no longer held."""
        action, params = request
        call = self.client.update_item if action == "Update" else self.client.delete_item
        for attempt in range(CONFLICT_RETRIES):
            try:
                call(**params)
                return True
            except ClientError as exc:
                if is_conditional_failure(exc):
                    return False
                # The owner may be applying this very item in a TransactWriteItems right now.
                if error_code(exc) != "TransactionConflictException" or attempt == CONFLICT_RETRIES - 1:
                    raise storage_error(f"{action}Item", exc) from exc
            time.sleep(0.02 * 2**attempt)
        return False

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        try:
            response = self.client.get_item(TableName=self.table, Key=key(pk, sk), ConsistentRead=True)
        except ClientError as exc:
            raise storage_error("GetItem", exc) from exc
        item: dict[str, Any] | None = response.get("Item")
        return item
