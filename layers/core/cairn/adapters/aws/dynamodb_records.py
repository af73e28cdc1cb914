"""RecordStore on one DynamoDB table: the single-table design of docs/DYNAMODB.md.

Same rules as the SQLite adapter (ports/records.py): the store owns versions, every write may
demand the version it expects (a ConditionExpression; Conflict when it fails), queries are one
partition's sort-key range in UTF-8 byte order (DynamoDB's own string order), and `transact`
is all or nothing: one TransactWriteItems call when the ops fit (100 items, 4 MB), else a
staged transaction (dynamodb_staged.py). Reads are strongly consistent, so a caller reads its
own writes as with SQLite. Requests read with Query, GetItem and BatchGetItem; only `scan`,
which is for maintenance (deleting a brain, erasing a person), reads with Scan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from cairn.adapters.aws import dynamodb_writes as writes
from cairn.adapters.aws.dynamodb_batch import batch_get
from cairn.adapters.aws.dynamodb_codec import (
    LOCK,
    PK,
    RESERVED_PK_PREFIX,
    SK,
    VERSION,
    Op,
    check_caller_key,
    check_caller_pk,
    committed,
    encode_op,
    error_code,
    key,
    storage_error,
)
from cairn.adapters.aws.dynamodb_locks import Locks, Reread
from cairn.adapters.aws.dynamodb_staged import StagedTransaction, recover
from cairn.adapters.aws.dynamodb_txn import (
    Patience,
    conflict_message,
    fits_one_transaction,
    read_versions,
    send_transaction,
)
from cairn.adapters.local.sqlite_records import (
    decode_cursor,
    encode_cursor,
    validate_keys,
    validate_ops,
    validate_query,
    validate_scan,
)
from cairn.domain.errors import RecordConflict
from cairn.ports.records import Delete, Item, Page, Put, ScanPage

DEFAULT_LEASE_S = 60.0  # a staged transaction must commit within this; then anyone may abort it
DEFAULT_LOCK_WAIT_S = 5.0  # how long a writer waits for a live staged transaction to finish
SCAN_REQUESTS_PER_PAGE = 8  # Scan calls one `scan` page may make while its filter finds little


class DynamoRecordStore:
    def __init__(
        self,
        client: Any,
        table: str,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        lock_wait_s: float = DEFAULT_LOCK_WAIT_S,
        now: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.table = table
        self._lock_wait_s = lock_wait_s
        self._sleep = sleep
        self._locks = Locks(client, table, lease_s=lease_s, now=now)

    # -- RecordStore -------------------------------------------------------------------------

    def get(self, pk: str, sk: str) -> Item | None:
        check_caller_key(pk, sk)
        raw: dict[str, Any] | None = None
        for _ in range(3):
            raw = self._get_raw(pk, sk)
            if raw is None:
                return None
            seen = self._locks.visible(raw)
            if not isinstance(seen, Reread):
                return seen
        return committed(raw) if raw else None

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        wanted = validate_keys(keys)
        for pk, _ in wanted:
            check_caller_pk(pk)
        found: dict[tuple[str, str], Item] = {}
        for k, raw in batch_get(self.client, self.table, wanted, sleep=self._sleep).items():
            item = self._visible(raw)  # as `get` sees it: through a staged transaction's lock
            if item is not None:
                found[k] = item
        return found

    def put(self, item: Item, expected_version: int | None = None) -> Item:
        validate_ops([Put(item, expected_version)])
        op = encode_op(Put(item, expected_version))
        patience = self._patience()
        while True:
            _, params = writes.direct_write(self.table, op)
            if expected_version is None:
                params["ReturnValues"] = "UPDATED_NEW"
            try:
                response = self.client.update_item(**params, ReturnValuesOnConditionCheckFailure="ALL_OLD")
            except ClientError as exc:
                self._failed("UpdateItem", exc, op, patience)
                continue
            if expected_version is not None:
                return op.written(expected_version + 1)
            return op.written(int(response["Attributes"][VERSION]["N"]))

    def delete(self, pk: str, sk: str, expected_version: int | None = None) -> bool:
        validate_ops([Delete(pk, sk, expected_version)])
        op = encode_op(Delete(pk, sk, expected_version))
        patience = self._patience()
        while True:
            _, params = writes.direct_write(self.table, op)
            try:
                response = self.client.delete_item(
                    **params, ReturnValues="ALL_OLD", ReturnValuesOnConditionCheckFailure="ALL_OLD"
                )
            except ClientError as exc:
                self._failed("DeleteItem", exc, op, patience)
                continue
            return VERSION in response.get("Attributes", {})

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
        check_caller_pk(pk)
        request = self._query_request(pk, prefix, after, descending)
        if request is None:
            return Page([])
        want = None if limit is None else limit + 1  # one extra item tells whether the page was cut
        items: list[Item] = []
        while want is None or len(items) < want:
            if want is not None:
                request["Limit"] = want - len(items)
            try:
                response = self.client.query(**request)
            except ClientError as exc:
                raise storage_error("Query", exc) from exc
            items += [i for i in map(self._visible, response.get("Items", [])) if i is not None]
            if "LastEvaluatedKey" not in response:
                break
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        if limit is not None and len(items) > limit:
            items = items[:limit]
            return Page(items, next_after=items[-1].sk)
        return Page(items)

    def scan(self, prefixes: Sequence[str], *, cursor: str | None = None, limit: int = 1000) -> ScanPage:
        """A strongly consistent Scan filtered on the partition key; the cursor is the Scan's own
        LastEvaluatedKey. DynamoDB applies Limit before the filter, so each call asks only for
        what the page still lacks, and a page stops after SCAN_REQUESTS_PER_PAGE calls even when
        short: one page's latency stays bounded on a table that is mostly other partitions."""
        ranges = validate_scan(prefixes, limit)
        for prefix in ranges:
            check_caller_pk(prefix)
        request = _scan_request(self.table, ranges)
        if cursor is not None:
            request["ExclusiveStartKey"] = key(*decode_cursor(ranges, cursor))
        items: list[Item] = []
        for _ in range(SCAN_REQUESTS_PER_PAGE):
            request["Limit"] = limit - len(items)
            try:
                response = self.client.scan(**request)
            except ClientError as exc:
                raise storage_error("Scan", exc) from exc
            items += [i for i in map(self._visible, response.get("Items", [])) if i is not None]
            if "LastEvaluatedKey" not in response:
                return ScanPage(items)
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
            if len(items) >= limit:
                break
        last = request["ExclusiveStartKey"]
        return ScanPage(items, encode_cursor(ranges, str(last[PK]["S"]), str(last[SK]["S"])))

    def transact(self, ops: Sequence[Put | Delete]) -> list[Item]:
        validate_ops(ops)
        encoded = [encode_op(op) for op in ops]
        if not encoded:
            return []
        if fits_one_transaction(encoded):
            return self._transact_once(encoded)
        return StagedTransaction(self.client, self.table, self._locks, encoded, self._patience).run()

    # -- maintenance -------------------------------------------------------------------------

    def recover(self) -> int:
        """Settle staged transactions left behind by crashed writers; returns how many.

        Never needed for correctness (readers and writers settle what they meet); run it on a
        schedule (the consolidation job) to clear leftovers nobody touches."""
        return recover(self.client, self.table, self._locks)

    # -- internals ---------------------------------------------------------------------------

    def _transact_once(self, ops: list[Op]) -> list[Item]:
        """One TransactWriteItems call. Unconditional puts get pinned to the version just read,
        so the version each returns is known; a pin gone stale is re-read and resent."""
        unpinned = [(o.pk, o.sk) for o in ops if o.text is not None and o.expected is None]
        patience = self._patience()
        while True:
            current = read_versions(self.client, self.table, unpinned) if unpinned else {}
            pinned = [
                replace(o, expected=current[(o.pk, o.sk)]) if (o.pk, o.sk) in current else o for o in ops
            ]
            requests = [writes.transact_write(self.table, o) for o in pinned]
            expected = [o.expected for o in ops]
            if send_transaction(self.client, requests, ops, expected, self._locks, patience):
                return [o.written((o.expected or 0) + 1) for o in pinned if o.text is not None]

    def _failed(self, action: str, exc: ClientError, op: Op, patience: Patience) -> None:
        """After a failed single-item write: clear or wait out a lock, or raise Conflict."""
        code = error_code(exc)
        if code == "ConditionalCheckFailedException":
            raw: dict[str, Any] | None = exc.response.get("Item")
            if raw is None or LOCK not in raw:
                raise RecordConflict(conflict_message(op, op.expected, raw)) from None
            if not self._locks.clear(raw):
                patience.again(f"{op.pk!r}/{op.sk!r} is locked by another transaction in progress")
        elif code == "TransactionConflictException":
            patience.again(f"{op.pk!r}/{op.sk!r} kept conflicting with concurrent transactions")
        else:
            raise storage_error(action, exc) from exc

    def _visible(self, raw: dict[str, Any]) -> Item | None:
        if LOCK not in raw:
            return committed(raw)
        seen = self._locks.visible(raw)
        if isinstance(seen, Reread):
            return self.get(str(raw[PK]["S"]), str(raw[SK]["S"]))
        return seen

    def _get_raw(self, pk: str, sk: str) -> dict[str, Any] | None:
        try:
            response = self.client.get_item(TableName=self.table, Key=key(pk, sk), ConsistentRead=True)
        except ClientError as exc:
            raise storage_error("GetItem", exc) from exc
        raw: dict[str, Any] | None = response.get("Item")
        return raw

    def _query_request(
        self, pk: str, prefix: str, after: str | None, descending: bool
    ) -> dict[str, Any] | None:
        """The Query for a prefix and an exclusive cursor; None when nothing can match.

        A key condition takes one sort-key test, so a prefix uses begins_with and the cursor
        becomes ExclusiveStartKey (DynamoDB requires it to satisfy the condition: a cursor
        outside the prefix's range either cuts nothing or everything)."""
        values: dict[str, Any] = {":pk": {"S": pk}}
        condition = "#pk = :pk"
        start: dict[str, Any] | None = None
        if prefix:
            condition += " AND begins_with(#sk, :prefix)"
            values[":prefix"] = {"S": prefix}
            if after is not None and after.startswith(prefix):
                start = key(pk, after)
            elif after is not None and (after < prefix) == descending:
                return None  # the cursor is past every item in the prefix's range
        elif after == "":
            if descending:
                return None  # nothing sorts below the empty string
        elif after is not None:
            condition += " AND #sk < :after" if descending else " AND #sk > :after"
            values[":after"] = {"S": after}
        names = {"#pk": PK} | ({"#sk": SK} if "#sk" in condition else {})
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ConsistentRead": True,
            "ScanIndexForward": not descending,
        }
        if start is not None:
            request["ExclusiveStartKey"] = start
        return request

    def _patience(self) -> Patience:
        return Patience(self._lock_wait_s, now=time.monotonic, sleep=self._sleep)


def _scan_request(table: str, prefixes: Sequence[str]) -> dict[str, Any]:
    """The Scan for partitions under any of `prefixes`: begins_with on the partition key, OR'ed.

    A prefix as short as "#" would also match the adapter's own transaction records (under
    RESERVED_PK_PREFIX), so the filter then leaves those out."""
    values = {f":p{i}": {"S": prefix} for i, prefix in enumerate(prefixes)}
    condition = " OR ".join(f"begins_with(#pk, {name})" for name in values)
    if any(RESERVED_PK_PREFIX.startswith(prefix) for prefix in prefixes):
        condition = f"({condition}) AND NOT begins_with(#pk, :reserved)"
        values[":reserved"] = {"S": RESERVED_PK_PREFIX}
    return {
        "TableName": table,
        "FilterExpression": condition,
        "ExpressionAttributeNames": {"#pk": PK},
        "ExpressionAttributeValues": values,
        "ConsistentRead": True,
    }
