"""Sending TransactWriteItems and batches: cancellation reasons mapped to Conflict, retry or wait."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from cairn.adapters.aws import dynamodb_writes as writes
from cairn.adapters.aws.dynamodb_codec import (
    LOCK,
    PK,
    SK,
    TRANSACT_MAX_BYTES,
    TRANSACT_MAX_ITEMS,
    VERSION,
    Op,
    error_code,
    int_of,
    key,
    storage_error,
)
from cairn.adapters.aws.dynamodb_locks import Locks
from cairn.domain.errors import Conflict, PayloadTooLarge, RecordConflict, Unavailable

T = TypeVar("T")
PARALLEL_CALLS = 8
THROTTLED_CODES = {"ThrottlingError", "ProvisionedThroughputExceeded"}
RETRY_CODES = {"TransactionConflict", *THROTTLED_CODES}
RETRY_ERRORS = {"TransactionConflictException", "TransactionInProgressException"}


class Patience:
    """Bounded retrying: a number of attempts, and a deadline for waiting on a live lock."""

    def __init__(
        self, wait_s: float, *, now: Callable[[], float], sleep: Callable[[float], None], attempts: int = 32
    ) -> None:
        self.deadline = now() + wait_s
        self.now, self.sleep = now, sleep
        self.left = attempts
        self.delay = 0.01

    def again(self, what: str, *, throttled: bool = False) -> None:
        """Sleep before the next attempt; once attempts or time ran out, Conflict, or Unavailable
        when the last try was `throttled` (the table refused it for its rate: nothing conflicted,
        and a caller may try again later)."""
        self.left -= 1
        if self.left <= 0 or self.now() >= self.deadline:
            if throttled:
                raise Unavailable(f"{what}; gave up waiting", retry_after_s=1)
            raise Conflict(f"{what}; gave up waiting")
        self.sleep(min(self.delay * (1 + random.random()), max(self.deadline - self.now(), 0)))
        self.delay = min(self.delay * 2, 0.5)


def conflict_message(op: Op, expected: int | None, raw: dict[str, Any] | None) -> str:
    found = int_of(raw, VERSION) if raw else None
    state = f"version {found}" if found else "no item"
    return f"{op.pk!r}/{op.sk!r}: expected version {expected}, found {state}"


def send_transaction(
    client: Any,
    requests: Sequence[writes.Request],
    ops: Sequence[Op],
    expected: Sequence[int | None],
    locks: Locks,
    patience: Patience,
) -> bool:
    """One TransactWriteItems call. True when applied; False when the caller should rebuild and
    resend (a lock was cleared, or an implicit version pin went stale). Raises Conflict when an
    op's own condition (`expected`, the caller's) failed, after waiting out live locks."""
    items = [{a: {**p, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}} for a, p in requests]
    try:
        client.transact_write_items(TransactItems=items, ClientRequestToken=uuid.uuid4().hex)
        return True
    except ClientError as exc:
        if error_code(exc) != "TransactionCanceledException":
            if error_code(exc) in RETRY_ERRORS:
                patience.again("transaction kept conflicting with concurrent transactions")
                return False
            raise storage_error("TransactWriteItems", exc) from exc
        cancelled = exc
    reasons = cancelled.response.get("CancellationReasons") or []
    waiting: str | None = None
    throttled = False
    for op, wanted, reason in zip(ops, expected, reasons, strict=False):
        code = reason.get("Code") or "None"
        raw: dict[str, Any] | None = reason.get("Item")
        if code == "None":
            continue
        throttled = throttled or code in THROTTLED_CODES
        if code == "ConditionalCheckFailed" and raw is not None and LOCK in raw:
            if not locks.clear(raw):
                waiting = f"{op.pk!r}/{op.sk!r} is locked by another transaction in progress"
        elif code == "ConditionalCheckFailed" and wanted is not None:
            raise RecordConflict(conflict_message(op, wanted, raw))
        elif code not in RETRY_CODES and code != "ConditionalCheckFailed":
            if "size" in str(reason.get("Message", "")).lower():
                raise PayloadTooLarge(f"{op.pk!r}/{op.sk!r}: DynamoDB refused the item's size")
            raise storage_error(f"TransactWriteItems ({code})", cancelled)
    if throttled and waiting is None:
        patience.again("the table kept throttling the transaction", throttled=True)
    else:
        patience.again(waiting or "transaction kept conflicting with concurrent writers")
    return False


def read_versions(client: Any, table: str, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Current versions (0: no item) by consistent BatchGetItem, 100 keys a call."""
    versions: dict[tuple[str, str], int] = {}
    for chunk in chunked(list(dict.fromkeys(keys)), 100):
        request: dict[str, Any] = {
            table: {
                "Keys": [key(pk, sk) for pk, sk in chunk],
                "ConsistentRead": True,
                "ProjectionExpression": "#pk, #sk, #v",
                "ExpressionAttributeNames": {"#pk": PK, "#sk": SK, "#v": VERSION},
            }
        }
        for _ in range(20):
            try:
                response = client.batch_get_item(RequestItems=request)
            except ClientError as exc:
                raise storage_error("BatchGetItem", exc) from exc
            for raw in response.get("Responses", {}).get(table, []):
                versions[(raw[PK]["S"], raw[SK]["S"])] = int_of(raw, VERSION) or 0
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
        else:
            raise storage_error("BatchGetItem", _unprocessed("BatchGetItem"))
    return {k: versions.get(k, 0) for k in dict.fromkeys(keys)}


def batch_write(client: Any, table: str, requests: list[dict[str, Any]]) -> None:
    """BatchWriteItem, 25 requests a call and several calls at once, resending unprocessed ones."""
    parallel(partial(_batch_write, client, table), list(chunked(requests, 25)))


def _batch_write(client: Any, table: str, chunk: Sequence[dict[str, Any]]) -> None:
    pending: dict[str, Any] = {table: list(chunk)}
    delay = 0.01
    for _ in range(20):
        try:
            response = client.batch_write_item(RequestItems=pending)
        except ClientError as exc:
            raise storage_error("BatchWriteItem", exc) from exc
        pending = response.get("UnprocessedItems") or {}
        if not pending:
            return
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 1.0)
    raise storage_error("BatchWriteItem", _unprocessed("BatchWriteItem"))


def parallel(fn: Callable[[T], Any], values: Sequence[T], workers: int = PARALLEL_CALLS) -> None:
    """Run `fn` over `values` on a few threads (boto3 clients are thread-safe); re-raise the first error."""
    if len(values) <= 1:
        for value in values:
            fn(value)
        return
    with ThreadPoolExecutor(min(workers, len(values))) as pool:
        for future in [pool.submit(fn, v) for v in values]:
            future.result()


def chunked(values: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def transact_chunks(ops: Sequence[tuple[int, Op]]) -> Iterator[list[tuple[int, Op]]]:
    """Split (index, op) pairs into runs that one TransactWriteItems call accepts."""
    chunk: list[tuple[int, Op]] = []
    size = 0
    for pair in ops:
        if chunk and (len(chunk) == TRANSACT_MAX_ITEMS or size + pair[1].size > TRANSACT_MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(pair)
        size += pair[1].size
    if chunk:
        yield chunk


def fits_one_transaction(ops: Sequence[Op]) -> bool:
    return len(ops) <= TRANSACT_MAX_ITEMS and sum(op.size for op in ops) <= TRANSACT_MAX_BYTES


def _unprocessed(action: str) -> ClientError:
    return ClientError({"Error": {"Code": "Unprocessed", "Message": "throttled"}}, action)
