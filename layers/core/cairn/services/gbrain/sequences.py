"""Integer ids from a record store: a counter item per sequence, advanced by conditional writes.

Some surfaces hand out numbers, not strings (gbrain's link, gap and raw-data ids). A counter is
one item; taking the next number is a read and a write conditional on the version read, retried
when another writer got there first, so two writers never get the same number on any store.
Numbers are never reused; a writer that takes one and then fails leaves a gap.
"""

from __future__ import annotations

import random
import time

from cairn.domain.errors import Conflict
from cairn.ports.records import Item, RecordStore

_RETRIES = 200


class Sequences:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def next(self, name: str, *, count: int = 1) -> int:
        """The first of `count` consecutive new numbers of sequence `name` (numbers start at 1)."""
        if count < 1:
            raise ValueError("count must be at least 1")
        pk, sk = sequence_pk(name), "counter"
        for attempt in range(_RETRIES):
            item = self.records.get(pk, sk)
            last = int(item.data["last"]) if item else 0
            try:
                self.records.put(
                    Item(pk, sk, data={"last": last + count}), expected_version=item.version if item else 0
                )
                return last + 1
            except Conflict:
                if attempt > 3:
                    time.sleep(random.uniform(0, 0.002 * attempt))
        raise Conflict(f"sequence {name} kept losing races; retry")

    def current(self, name: str) -> int:
        """The last number handed out (0 before the first)."""
        item = self.records.get(sequence_pk(name), "counter")
        return int(item.data["last"]) if item else 0


def sequence_pk(name: str) -> str:
    """The partition of sequence `name`'s counter."""
    return f"seq#{name}"
