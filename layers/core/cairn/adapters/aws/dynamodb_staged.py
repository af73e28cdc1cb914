"""Transactions larger than one TransactWriteItems call (100 items, 4 MB): all or nothing anyway.

1. begin: a state record (`#txns`, <txid>) = pending, then one record per op (its new data);
2. lock: in key order, 100 items a call, set `tx` = <txid> on every target, checking each op's
   expected version as it is locked (a missing target gets a placeholder item). Locked items
   keep their old value; every other writer refuses to write a locked item;
3. commit: flip the state record pending -> committed (one conditional write: the commit point);
4. apply: copy each op's data onto its item and drop the lock, 100 items a call;
5. clean up the op records and the state record.

Any failure before the commit point undoes the locks and raises (Conflict for a failed
condition): nothing was visible. After it, readers already see the new values (they resolve a
lock through the state record), and a crash is finished by whoever next touches an item, or by
`recover`. A pending transaction older than the lease can be aborted by anyone, so a crashed
one never blocks writers for longer than that.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from cairn.adapters.aws import dynamodb_writes as writes
from cairn.adapters.aws.dynamodb_codec import PK, SK, Op, key, num, storage_error
from cairn.adapters.aws.dynamodb_locks import (
    ABORTED,
    COMMITTED,
    PENDING,
    STARTED,
    STATE,
    TXNS_PK,
    Locks,
    is_conditional_failure,
    op_from_record,
    op_record,
    op_sk,
    ops_pk,
)
from cairn.adapters.aws.dynamodb_txn import (
    Patience,
    batch_write,
    chunked,
    parallel,
    read_versions,
    send_transaction,
    transact_chunks,
)
from cairn.domain.errors import Conflict
from cairn.ports.records import Item

COUNT = "n"
log = logging.getLogger(__name__)


class StagedTransaction:
    def __init__(
        self, client: Any, table: str, locks: Locks, ops: Sequence[Op], patience: Callable[[], Patience]
    ) -> None:
        self.client, self.table, self.locks = client, table, locks
        self.ops = list(ops)
        self.patience = patience
        self.txid = uuid.uuid4().hex
        self.locked: list[int] = []

    def run(self) -> list[Item]:
        try:
            self.begin()
            self.lock_all()
            current = read_versions(
                self.client,
                self.table,
                [(o.pk, o.sk) for o in self.ops if o.expected is None and o.text is not None],
            )
            if not self.commit():
                raise Conflict("a large transaction outlived its lease and was aborted by another writer")
        except BaseException:
            self.abandon()
            raise
        try:
            self.apply_all()
            cleanup(self.client, self.table, self.txid, len(self.ops))
        except Exception as exc:  # committed: readers see it, the next writer or recover() finishes it
            log.warning("staged transaction %s committed but not finished: %s", self.txid, exc)
        written = []
        for op in self.ops:
            if op.text is not None:
                base = current[(op.pk, op.sk)] if op.expected is None else op.expected
                written.append(op.written(base + 1))
        return written

    # -- phases ------------------------------------------------------------------------------

    def begin(self) -> None:
        state = {
            PK: {"S": TXNS_PK},
            SK: {"S": self.txid},
            STATE: {"S": PENDING},
            STARTED: num(int(self.locks.now())),
            COUNT: num(len(self.ops)),
        }
        try:
            self.client.put_item(TableName=self.table, Item=state)
        except ClientError as exc:
            raise storage_error("PutItem", exc) from exc
        records = [{"PutRequest": {"Item": op_record(self.txid, i, op)}} for i, op in enumerate(self.ops)]
        batch_write(self.client, self.table, records)

    def lock_all(self) -> None:
        order = sorted(range(len(self.ops)), key=lambda i: _sort_key(self.ops[i]))
        for chunk in chunked(order, 100):
            ops = [self.ops[i] for i in chunk]
            patience = self.patience()
            while True:
                requests = [writes.lock(self.table, self.ops[i], self.txid, i) for i in chunk]
                if send_transaction(
                    self.client, requests, ops, [op.expected for op in ops], self.locks, patience
                ):
                    break
            self.locked.extend(chunk)

    def commit(self) -> bool:
        try:
            self.client.update_item(
                TableName=self.table,
                Key=key(TXNS_PK, self.txid),
                UpdateExpression="SET #st = :committed",
                ConditionExpression="#st = :pending",
                ExpressionAttributeNames={"#st": STATE},
                ExpressionAttributeValues={":committed": {"S": COMMITTED}, ":pending": {"S": PENDING}},
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise storage_error("UpdateItem", exc) from exc
        return True

    def apply_all(self) -> None:
        """Apply every op, several chunks at once: the commit already decided the outcome."""
        parallel(self._apply_chunk, list(transact_chunks(list(enumerate(self.ops)))))

    def _apply_chunk(self, chunk: list[tuple[int, Op]]) -> None:
        requests = [writes.apply(self.table, op, self.txid) for _, op in chunk]
        try:
            self.client.transact_write_items(
                TransactItems=[{a: p} for a, p in requests], ClientRequestToken=uuid.uuid4().hex
            )
        except ClientError:
            # Someone finished part of this chunk for us (or contention): go item by item; each
            # write is conditional on our lock, so none applies twice.
            for request in requests:
                self.locks.finish(request)

    def abandon(self) -> None:
        """Undo every lock taken, unless the commit landed after all (its reply was lost): then
        finish it. Best effort: whatever is left, the next writer or `recover` settles."""
        with contextlib.suppress(Exception):
            if not self.locks.abort(self.txid):
                state = self.locks.state(self.txid)
                if state is not None and state[0] == COMMITTED:
                    self.apply_all()
                    cleanup(self.client, self.table, self.txid, len(self.ops))
                    return
            parallel(partial(_undo, self.locks, self.txid), [self.ops[i] for i in self.locked])
            cleanup(self.client, self.table, self.txid, len(self.ops))


def cleanup(client: Any, table: str, txid: str, count: int) -> None:
    deletes = [{"DeleteRequest": {"Key": key(ops_pk(txid), op_sk(i))}} for i in range(count)]
    batch_write(client, table, deletes)
    try:
        client.delete_item(TableName=table, Key=key(TXNS_PK, txid))
    except ClientError as exc:
        raise storage_error("DeleteItem", exc) from exc


def recover(client: Any, table: str, locks: Locks) -> int:
    """Finish (committed) or undo (aborted, or pending: aborted first) every staged transaction
    older than the lease; returns how many. Queries the `#txns` partition only: no Scan."""
    finished = 0
    for txid, state, started, count in _transactions(client, table):
        if locks.now() - started < locks.lease_s:
            continue  # its owner may still be at work
        if state == PENDING:
            if not locks.abort(txid):
                continue
            state = ABORTED
        ops = [op_from_record(r) for r in _query_all(client, table, ops_pk(txid))]
        if state == COMMITTED:
            parallel(locks.finish, [writes.apply(table, op, txid) for op in ops])
        else:
            parallel(partial(_undo, locks, txid), ops)
        cleanup(client, table, txid, count)
        finished += 1
    return finished


def _transactions(client: Any, table: str) -> list[tuple[str, str, float, int]]:
    return [
        (str(r[SK]["S"]), str(r[STATE]["S"]), float(r[STARTED]["N"]), int(r[COUNT]["N"]))
        for r in _query_all(client, table, TXNS_PK)
    ]


def _query_all(client: Any, table: str, pk: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {"#pk": PK},
        "ExpressionAttributeValues": {":pk": {"S": pk}},
        "ConsistentRead": True,
    }
    while True:
        try:
            response = client.query(**request)
        except ClientError as exc:
            raise storage_error("Query", exc) from exc
        items += response.get("Items", [])
        if "LastEvaluatedKey" not in response:
            return items
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def _undo(locks: Locks, txid: str, op: Op) -> None:
    locks.undo(op, txid)


def _sort_key(op: Op) -> tuple[bytes, bytes]:
    return op.pk.encode("utf-8"), op.sk.encode("utf-8")
