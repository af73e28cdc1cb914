"""Reading many items in few round trips: strongly consistent BatchGetItem, 100 keys a request.

DynamoDB may answer a batch in part and hand the rest back as UnprocessedKeys: when throttled
(nothing or little read) or when the reply reached 16 MB. The rest is resent at once while each
reply makes progress, and after a backoff when one returns nothing, up to a bounded number of
empty replies in a row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from cairn.adapters.aws.dynamodb_codec import PK, SK, key, storage_error
from cairn.adapters.aws.dynamodb_txn import chunked, parallel
from cairn.adapters.retrying import backoff_delay
from cairn.domain.errors import CairnError

BATCH_GET_MAX_KEYS = 100  # BatchGetItem's limit per request
MAX_EMPTY_REPLIES = 8  # replies in a row that read nothing before giving up
BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 2.0

Raw = dict[str, Any]
Key = tuple[str, str]


def batch_get(
    client: Any, table: str, keys: Sequence[Key], *, sleep: Callable[[float], None] = time.sleep
) -> dict[Key, Raw]:
    """The stored items (raw attribute maps) among `keys`, which must be distinct (BatchGetItem
    refuses duplicates). Requests of 100 keys go out several at once."""
    chunks = list(chunked(keys, BATCH_GET_MAX_KEYS))
    results: list[dict[Key, Raw]] = [{} for _ in chunks]
    parallel(partial(_read_chunk, client, table, sleep), list(zip(chunks, results, strict=True)))
    return {k: raw for found in results for k, raw in found.items()}


def _read_chunk(
    client: Any, table: str, sleep: Callable[[float], None], job: tuple[Sequence[Key], dict[Key, Raw]]
) -> None:
    keys, found = job
    pending: list[Raw] = [key(pk, sk) for pk, sk in keys]
    empty = 0
    while pending:
        request = {table: {"Keys": pending, "ConsistentRead": True}}
        try:
            response = client.batch_get_item(RequestItems=request)
        except ClientError as exc:
            raise storage_error("BatchGetItem", exc) from exc
        items: list[Raw] = response.get("Responses", {}).get(table, [])
        for raw in items:
            found[(str(raw[PK]["S"]), str(raw[SK]["S"]))] = raw
        pending = response.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
        if not pending or items:
            empty = 0
            continue
        if empty >= MAX_EMPTY_REPLIES:
            raise CairnError("DynamoDB BatchGetItem failed (keys left unprocessed: throttled)")
        sleep(backoff_delay(empty, BACKOFF_BASE_S, BACKOFF_CAP_S))
        empty += 1
