"""Request builders for every write the DynamoDB RecordStore makes (pure functions).

Each returns `(action, params)`: `params` is the body of an UpdateItem/DeleteItem call (a
PutItem one for `transact_write`'s puts) and, as is, of a TransactWriteItems entry
`{action: params}`. DynamoDB rejects expression names and values that the expressions do not
use, so each request carries exactly the ones it uses.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.adapters.aws.dynamodb_codec import (
    DATA,
    NAMES,
    TTL,
    VERSION,
    Op,
    both,
    key,
    num,
    version_condition,
)

Request = tuple[str, dict[str, Any]]

UNLOCKED = "attribute_not_exists(#tx)"
_NAME = re.compile(r"#\w+")


def direct_write(table: str, op: Op) -> Request:
    """A put or delete outside staged transactions: refused while the item is locked."""
    values: dict[str, Any] = {}
    condition = both(UNLOCKED, version_condition(op.expected, values))
    if op.text is None:
        return _request("Delete", table, op, condition=condition, values=values)
    return _put(table, op, condition, values, release_lock=False)


def transact_write(table: str, op: Op) -> Request:
    """`direct_write` as an entry of TransactWriteItems, where a put's version is known (pinned
    when it had none): a Put of the whole item at that version plus one. The same item an
    Update leaves (the condition keeps out a locked one, so it holds no other attribute), and
    the same write capacity; under moto a Put skips the update expression's validation, which
    took most of the time of every memory write in the tests."""
    if op.text is None or op.expected is None:
        return direct_write(table, op)
    values: dict[str, Any] = {}
    condition = both(UNLOCKED, version_condition(op.expected, values))
    _, params = _request("Put", table, op, condition=condition, values=values)
    item = {**params.pop("Key"), VERSION: num(op.expected + 1), DATA: {"S": op.text}}
    if op.expires_at is not None:
        item[TTL] = num(op.expires_at)
    params["Item"] = item
    return "Put", params


def lock(table: str, op: Op, txid: str, index: int) -> Request:
    """Claim the item for staged transaction `txid`, checking the op's condition now."""
    values: dict[str, Any] = {":id": {"S": txid}, ":i": num(index)}
    condition = both(UNLOCKED, version_condition(op.expected, values))
    return _request(
        "Update", table, op, update="SET #tx = :id, #txi = :i", condition=condition, values=values
    )


def apply(table: str, op: Op, txid: str) -> Request:
    """Make a committed staged op visible and release its lock (once: conditional on the lock)."""
    values: dict[str, Any] = {":id": {"S": txid}}
    if op.text is None:
        return _request("Delete", table, op, condition="#tx = :id", values=values)
    return _put(table, op, "#tx = :id", values, release_lock=True)


def release(table: str, op: Op, txid: str) -> Request:
    """Drop an aborted transaction's lock from an item that existed before it."""
    return _request(
        "Update",
        table,
        op,
        update="REMOVE #tx, #txi",
        condition="#tx = :id AND attribute_exists(#v)",
        values={":id": {"S": txid}},
    )


def drop_placeholder(table: str, op: Op, txid: str) -> Request:
    """Delete the empty item an aborted transaction created to lock a key that did not exist."""
    return _request(
        "Delete",
        table,
        op,
        condition="#tx = :id AND attribute_not_exists(#v)",
        values={":id": {"S": txid}},
    )


def _put(table: str, op: Op, condition: str, values: dict[str, Any], *, release_lock: bool) -> Request:
    assert op.text is not None
    values[":d"] = {"S": op.text}
    values[":z"] = num(0)
    values[":one"] = num(1)
    sets = ["#d = :d", "#v = if_not_exists(#v, :z) + :one"]
    removes = ["#tx", "#txi"] if release_lock else []
    if op.expires_at is None:
        removes.append("#e")
    else:
        values[":e"] = num(op.expires_at)
        sets.append("#e = :e")
    update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    return _request("Update", table, op, update=update, condition=condition, values=values)


def _request(
    action: str,
    table: str,
    op: Op,
    *,
    condition: str,
    values: dict[str, Any],
    update: str | None = None,
) -> Request:
    params: dict[str, Any] = {"TableName": table, "Key": key(op.pk, op.sk)}
    expressions = [condition]
    if update is not None:
        params["UpdateExpression"] = update
        expressions.append(update)
    if condition:
        params["ConditionExpression"] = condition
    names = {alias: NAMES[alias] for alias in _NAME.findall(" ".join(expressions))}
    if names:
        params["ExpressionAttributeNames"] = names
    if values:
        params["ExpressionAttributeValues"] = values
    return action, params
