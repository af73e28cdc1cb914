"""A search over several brains around one whose index cannot be read
(services/search/damaged_brains.py): the rest searched and the damaged ones named, in the order
they were met; a search whose every brain is damaged is refused as one of them alone is."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from cairn.domain.errors import BrainIndexDamaged, DamagedStore
from cairn.services.search.damaged_brains import around_damage


def searching(damaged: set[str]) -> tuple[list[tuple[str, ...]], Callable[[tuple[str, ...]], list[str]]]:
    """A search that is refused for the first damaged brain it is asked for, and the calls made."""
    calls: list[tuple[str, ...]] = []

    def run(brain_ids: tuple[str, ...]) -> list[str]:
        calls.append(brain_ids)
        for brain_id in brain_ids:
            if brain_id in damaged:
                raise BrainIndexDamaged(f"the keyword index of brain {brain_id} cannot be read", brain_id)
        return [f"hit in {b}" for b in brain_ids]

    return calls, run


def test_the_damaged_brains_are_left_out_and_named(caplog: pytest.LogCaptureFixture) -> None:
    calls, run = searching({"b", "d"})
    with caplog.at_level(logging.WARNING, "cairn.services.search.damaged_brains"):
        hits, unsearched = around_damage(["a", "b", "c", "d", "a"], run)
    told = [r.getMessage() for r in caplog.records if r.name == "cairn.services.search.damaged_brains"]
    assert [("out brain b" in t, "out brain d" in t) for t in told] == [(True, False), (False, True)]
    assert hits == ["hit in a", "hit in c"]
    assert [(u.brain_id, u.code) for u in unsearched] == [("b", "damaged_store"), ("d", "damaged_store")]
    assert "brain d cannot be read" in unsearched[1].message
    assert calls == [("a", "b", "c", "d"), ("a", "c", "d"), ("a", "c")]


@pytest.mark.parametrize("brains", [["b"], ["b", "d"]])
def test_a_search_of_only_damaged_brains_is_refused(brains: list[str]) -> None:
    _, run = searching({"b", "d"})
    with pytest.raises(BrainIndexDamaged, match=f"brain {brains[-1]} cannot be read"):
        around_damage(brains, run)


def test_other_damage_is_not_taken_for_a_brain_s() -> None:
    def run(brain_ids: tuple[str, ...]) -> list[str]:
        raise DamagedStore("the records database is damaged")

    with pytest.raises(DamagedStore, match="records"):
        around_damage(["a", "b"], run)
