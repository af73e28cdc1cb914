"""Which of some words any record of a store still holds: the erasure tests' check that nothing
of an erased text is left anywhere (keys and data alike)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from cairn.ports.records import RecordStore

EVERY_PARTITION = [chr(c) for c in range(32, 127)]
"""Prefixes that together cover every partition key."""


def words_held(records: RecordStore, words: Collection[str], prefixes: Sequence[str] = ()) -> set[str]:
    """The `words` (lower case) a record holds, in its key or data: every partition read, or those
    of `prefixes`."""
    found: set[str] = set()
    cursor: str | None = None
    while True:
        page = records.scan(prefixes or EVERY_PARTITION, cursor=cursor)
        for item in page.items:
            held = json.dumps([item.pk, item.sk, item.data]).lower()
            found.update(word for word in words if word in held)
        if page.cursor is None:
            return found
        cursor = page.cursor
