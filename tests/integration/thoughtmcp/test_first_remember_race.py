"""Concurrent first remembers on a fresh server all land in the one brain marked ThoughtMCP's, for
the local tenant and for another (whose brain has a slug of its own): none is refused because
another made the brain first, and none makes a second one (services/brains.py `first`). On the
embedded store and the AWS adapters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.auth.principal import SCOPES, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.services.thoughtmcp.brain import BRAIN_MARK, thought_brain
from cairn.services.thoughtmcp.models import Filters, NewMemory
from tests.support.first_writes import RACES, at_once, racing_creates
from tests.support.shapes import SHAPES, adapters_for, process

WRITERS = 8
ACME = Principal("acme", "acme-admin", frozenset(SCOPES), Via.api_key)
SLUGS = {"local": "thoughtmcp", "acme": "thoughtmcp-acme"}


@pytest.fixture(params=SHAPES)
def c(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with adapters_for(request.param, request, tmp_path) as adapters:
        yield process(adapters, tmp_path)


@pytest.mark.parametrize("tenant", sorted(SLUGS))
@pytest.mark.parametrize("race", RACES)
def test_concurrent_first_remembers_all_land_in_one_thoughtmcp_brain(
    c: Container, race: str, tenant: str
) -> None:
    def acting() -> AbstractContextManager[object]:
        return access.acting_as(ACME, WRITE) if tenant == "acme" else nullcontext()

    def remember(i: int) -> str:
        with acting():
            brain = thought_brain(c.brains, None, user_id="u1", create=True)
            assert brain is not None
            memory = NewMemory(f"I drank green tea number {i} today", "u1", "s", "episodic")
            return str(c.thoughts.remember(brain, memory)["memoryId"])

    with racing_creates(c, WRITERS, race):
        answers = at_once(WRITERS, remember)

    assert all(isinstance(a, str) for a in answers), answers
    brains = c.brains.list()
    assert [(b.slug, b.metadata.get(BRAIN_MARK)) for b in brains] == [(SLUGS[tenant], True)]
    with acting():
        brain = thought_brain(c.brains, None, user_id="u1")
        assert brain is not None and brain.id == brains[0].id
        found, _ = c.thoughts.recall(brain, "u1", text=None, filters=Filters(), limit=50, reinforce=False)
    assert sorted(f.row.id for f in found) == sorted(str(a) for a in answers)
