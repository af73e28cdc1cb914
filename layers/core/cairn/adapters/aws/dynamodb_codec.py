"""How RecordStore items are laid out in the DynamoDB table, and the table's limits.

One item per record: `pk` (S, hash), `sk` (S, range), `v` (N, version), `d` (S, the data as
compact JSON), `expires_at` (N, epoch seconds; the table's TTL attribute, copied from the data
when it carries a numeric `expires_at`). A record being written by a staged transaction also
carries `tx` (its owner's id) and `txi` (the op's index). docs/DYNAMODB.md has the whole design.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from cairn.adapters.local.sqlite_records import check_key, encode_data
from cairn.domain.errors import CairnError, InvalidInput, PayloadTooLarge, Unavailable, damaged_record
from cairn.ports.records import Delete, Item, Put

PK, SK, VERSION, DATA, TTL, LOCK, LOCK_OP = "pk", "sk", "v", "d", "expires_at", "tx", "txi"
NAMES = {"#v": VERSION, "#d": DATA, "#e": TTL, "#tx": LOCK, "#txi": LOCK_OP}

RESERVED_PK_PREFIX = "#tx"  # the adapter's own transaction records live under these partitions
MAX_ITEM_BYTES = 400_000  # DynamoDB: "400 KB" (measured ~409 KB); stay under either reading
# Attribute names, version, TTL, a lock, and the extra attributes of a staged op's record.
ITEM_OVERHEAD_BYTES = 256
TRANSACT_MAX_ITEMS = 100
TRANSACT_MAX_BYTES = 3_500_000  # TransactWriteItems takes 4 MB per request; leave room for framing


@dataclass(frozen=True)
class Op:
    """One validated, encoded write: a put (text set) or a delete (text None)."""

    pk: str
    sk: str
    expected: int | None
    text: str | None = None
    expires_at: int | None = None

    @property
    def size(self) -> int:
        body = len(self.text.encode("utf-8")) if self.text is not None else 0
        return len(self.pk.encode("utf-8")) + len(self.sk.encode("utf-8")) + body + ITEM_OVERHEAD_BYTES

    def written(self, version: int) -> Item:
        assert self.text is not None
        return Item(self.pk, self.sk, json.loads(self.text), version)


def check_caller_key(pk: str, sk: str) -> None:
    check_key(pk, sk)
    check_caller_pk(pk)


def check_caller_pk(pk: str) -> None:
    if pk.startswith(RESERVED_PK_PREFIX):
        raise InvalidInput(f"pk must not start with {RESERVED_PK_PREFIX!r} (reserved by the DynamoDB store)")


def encode_op(op: Put | Delete) -> Op:
    """Validate one op (keys already checked) and encode its data; PayloadTooLarge above 400 KB."""
    if isinstance(op, Delete):
        check_caller_pk(op.pk)
        return Op(op.pk, op.sk, op.expected_version)
    check_caller_pk(op.item.pk)
    text = encode_data(op.item.data)
    encoded = Op(op.item.pk, op.item.sk, op.expected_version, text, ttl_of(op.item.data))
    if encoded.size > MAX_ITEM_BYTES:
        # The keys stay out of the message: callers see it, and they name brains and users.
        raise PayloadTooLarge(
            f"a record of {encoded.size} bytes encoded is more than a DynamoDB item holds "
            f"({MAX_ITEM_BYTES} bytes)"
        )
    return encoded


def ttl_of(data: dict[str, Any]) -> int | None:
    """The TTL epoch (whole seconds) when the data carries a positive numeric `expires_at`."""
    value = data.get(TTL)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return int(value)


def key(pk: str, sk: str) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk}}


def num(value: int) -> dict[str, str]:
    return {"N": str(value)}


def text_of(raw: dict[str, Any], name: str) -> str | None:
    value = raw.get(name)
    return None if value is None else str(value["S"])


def int_of(raw: dict[str, Any], name: str) -> int | None:
    value = raw.get(name)
    return None if value is None else int(value["N"])


def committed(raw: dict[str, Any]) -> Item | None:
    """The item's committed state, ignoring any lock; None for a placeholder (never written).
    DamagedStore for an item no write of Cairn's could have left (written by something else)."""
    pk, sk = str((raw.get(PK) or {}).get("S", "?")), str((raw.get(SK) or {}).get("S", "?"))
    try:
        version = int_of(raw, VERSION)
        if version is None:
            return None
        text = raw[DATA]["S"]
    except (KeyError, TypeError, ValueError):
        raise damaged_record(pk, sk, "its attributes are not those of a record") from None
    try:
        data = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        raise damaged_record(pk, sk, "its data is not JSON") from None
    if not isinstance(data, dict):
        raise damaged_record(pk, sk, "its data is not a JSON object")
    return Item(pk, sk, data, version)


def version_condition(expected: int | None, values: dict[str, Any], tag: str = "") -> str:
    """The condition on `v` that `expected` demands ('' when unconditional)."""
    if expected is None:
        return ""
    if expected == 0:
        return "attribute_not_exists(#v)"
    values[f":x{tag}"] = num(expected)
    return f"#v = :x{tag}"


def both(*conditions: str) -> str:
    return " AND ".join(c for c in conditions if c)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


THROTTLED = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
"""Codes of a request DynamoDB refused for its rate (after botocore's own retries): nothing is wrong
with it, so it is Unavailable, which callers may try again, not a failure."""


def storage_error(action: str, exc: ClientError) -> CairnError:
    """A domain error for an unexpected DynamoDB failure: the code only, never the request."""
    code = error_code(exc)
    message = str(exc.response.get("Error", {}).get("Message", ""))
    if code == "ValidationException" and "size" in message.lower():
        return PayloadTooLarge(
            f"DynamoDB {action} refused the item as too large (an item holds at most 400 KB)"
        )
    if code in THROTTLED:
        return Unavailable(f"DynamoDB {action} was throttled ({code}): try again", retry_after_s=1)
    return CairnError(f"DynamoDB {action} failed ({code})")
