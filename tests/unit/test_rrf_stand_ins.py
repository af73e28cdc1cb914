"""Fusion over stand-ins (row numbers) gives the order fusion over the ids gives: ties in the
head break by the ids, looked up only when there is a tie."""

from __future__ import annotations

from collections.abc import Mapping

from cairn.adapters.local.rrf import Leg, fused_head

# Row numbers whose ids sort the other way round: row 1 is "z", row 9 is "r".
IDS = {row: chr(ord("z") - row + 1) for row in range(1, 10)}


class Names:
    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    def __call__(self, rows: list[int]) -> Mapping[int, str]:
        self.asked.append(sorted(rows))
        return {row: IDS[row] for row in rows}


def by_ids(legs: list[Leg[int]], top_k: int, nearest: int = 0) -> list[str]:
    """The head fused over the ids themselves: what the stand-ins must give."""
    named = [Leg([IDS[r] for r in leg.ids], leg.weight) for leg in legs]
    return [f.id for f in fused_head(named, 60, top_k, nearest)]


def test_a_tie_cut_by_the_head_is_broken_by_the_ids_not_the_row_numbers() -> None:
    # rows 2 and 3 tie (first in one leg, second in the other), as do 4 and 5
    legs = [Leg([2, 3, 4, 5, 6]), Leg([3, 2, 5, 4, 7])]
    names = Names()
    head = fused_head(legs, 60, 3, names=names)
    assert [IDS[f.id] for f in head] == by_ids(legs, 3) == ["x", "y", "v"]
    assert names.asked == [[2, 3, 4, 5]]  # the runs that start in the head, nothing else


def test_without_a_tie_the_ids_are_not_looked_up() -> None:
    legs = [Leg([1, 2, 3]), Leg([1, 2, 4], 0.4)]
    names = Names()
    head = fused_head(legs, 60, 2, nearest=1, names=names)
    assert [IDS[f.id] for f in head] == by_ids(legs, 2, nearest=1)
    assert names.asked == []


def test_the_nearest_after_the_head_follow_the_reordered_head() -> None:
    legs = [Leg([8, 9]), Leg([9, 8, 6])]
    names = Names()
    head = fused_head(legs, 60, 1, nearest=2, names=names)
    assert [IDS[f.id] for f in head] == by_ids(legs, 1, nearest=2) == ["r", "s"]
