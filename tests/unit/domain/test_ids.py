"""Ids (domain/ids.py): the base32 text of time and randomness, sortable by creation."""

from __future__ import annotations

import random
import re
import threading

from cairn.domain import ids
from cairn.domain.ids import new_id

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def five_bits_at_a_time(value: int, length: int) -> str:
    """The encoding spelled out: `length` characters, five bits each, most significant first."""
    return "".join(CROCKFORD[(value >> (5 * (length - 1 - n))) & 31] for n in range(length))


def test_the_encoding_is_five_bits_a_character_of_time_then_randomness() -> None:
    rng = random.Random(3)
    cases = [(0, 0), (2**50 - 1, 2**80 - 1), (2**50, 1), (1_764_331_200_000, 2**79)]
    cases += [(rng.getrandbits(rng.randint(1, 52)), rng.getrandbits(rng.randint(1, 80))) for _ in range(3000)]
    for millis, rand in cases:
        expected = five_bits_at_a_time(millis & (2**50 - 1), 10) + five_bits_at_a_time(rand, 16)
        assert ids._encode(millis, rand) == expected, (millis, rand)


def test_ids_are_prefixed_and_sort_in_the_order_they_were_made_across_threads() -> None:
    made: list[list[str]] = [[] for _ in range(4)]

    def make(out: list[str]) -> None:
        out.extend(new_id("lnk") for _ in range(2000))

    threads = [threading.Thread(target=make, args=(out,)) for out in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for out in made:
        assert out == sorted(out)  # each thread's in the order it made them
        assert all(re.fullmatch(r"lnk_[0-9a-hjkmnp-tv-z]{26}", i) for i in out)
    every = [i for out in made for i in out]
    assert len(set(every)) == len(every) == 8000
