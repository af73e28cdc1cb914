"""Concurrent first brain_put calls on a fresh server all land in the one `default` collection:
none is refused with a conflict (-32009, which gbrain means for a version) because another made
the collection first, and none makes a second one (services/brains.py `first`). On the embedded
store and the AWS adapters."""

from __future__ import annotations

import pytest

from cairn.bootstrap import Container
from cairn.services.gbrain.pages import PutOutcome
from tests.integration.gbrain.conftest import page
from tests.support.first_writes import RACES, at_once, fresh_store, racing_creates

WRITERS = 8
__all__ = ["fresh_store"]


@pytest.mark.parametrize("race", RACES)
def test_concurrent_first_puts_all_land_in_one_default_collection(c: Container, race: str) -> None:
    def put(i: int) -> PutOutcome:
        text = page(f"Boiler visit {i}", f"The boiler was serviced on visit {i}.")
        return c.pages.first_collection(lambda: c.pages.put(f"notes/visit-{i}", text))

    with racing_creates(c, WRITERS, race):
        answers = at_once(WRITERS, put)

    assert all(isinstance(a, PutOutcome) and a.created for a in answers), answers
    assert [b.slug for b in c.brains.list()] == ["default"]
    for i in range(WRITERS):
        found = c.pages.get(f"notes/visit-{i}")
        assert found.collection == "default" and f"serviced on visit {i}" in found.render()
    assert len(c.pages.list(limit=50)) == WRITERS
