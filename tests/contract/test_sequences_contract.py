"""Sequences (services/gbrain/sequences.py) on every record store: numbers start at 1, blocks are
consecutive, and 8 concurrent writers never get the same number."""

from __future__ import annotations

import threading

from cairn.ports.records import RecordStore
from cairn.services.gbrain.sequences import Sequences


def test_numbers_start_at_one_and_blocks_are_consecutive(records: RecordStore) -> None:
    seq = Sequences(records)
    assert seq.current("links") == 0
    assert [seq.next("links") for _ in range(3)] == [1, 2, 3]
    assert seq.next("links", count=5) == 4 and seq.current("links") == 8
    assert seq.next("gaps") == 1  # sequences are independent


def test_concurrent_writers_never_share_a_number(records: RecordStore) -> None:
    seq = Sequences(records)
    taken: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def take() -> None:
        start.wait()
        for _ in range(10):
            n = seq.next("race")
            with lock:
                taken.append(n)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == list(range(1, 81))
