"""ThoughtMCP's dateRange holds both its ends, as ThoughtMCP's own filter does (created_at <= end):
a range from and to a memory's createdAt finds it, and one ending at a memory's createdAt
includes that memory, in recall and in search alike. A memory's chunks carry its document's
creation time, a while after its createdAt (its row's): the index's bound allows for that
(recall.py WRITE_SPAN). On the embedded store and the AWS adapters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.boolean_query import parse
from cairn.domain.models import Brain
from cairn.services.thoughtmcp.models import Filters, NewMemory, Row, iso
from tests.fakes.clock import FakeClock
from tests.support.shapes import SHAPES, adapters_for, process

USER = "u1"


@pytest.fixture(params=SHAPES)
def c(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with adapters_for(request.param, request, tmp_path) as adapters:
        # each reading of the clock a second on, as on a slow embedder: a memory's document (and
        # so its chunks) is stamped seconds after its createdAt; sub-millisecond digits included
        clock = FakeClock(tick=timedelta(seconds=1, microseconds=1234))
        yield process(replace(adapters, clock=clock), tmp_path)


@pytest.fixture
def brain(c: Container) -> Brain:
    return c.brains.create("ThoughtMCP", slug="t")


@pytest.fixture
def made(c: Container, brain: Brain) -> list[Row]:
    texts = [f"I drank green tea number {i} today" for i in range(5)]
    ids = [str(c.thoughts.remember(brain, NewMemory(t, USER, "s", "episodic"))["memoryId"]) for t in texts]
    rows = c.thoughts.get_many(brain, USER, ids)
    return [rows[i].row for i in ids]


def recalled(c: Container, brain: Brain, start: datetime, end: datetime) -> list[str]:
    filters = Filters(date_from=start, date_to=end)
    hits, _ = c.thoughts.recall(
        brain, USER, text="green tea", filters=filters, limit=50, min_similarity=0.0, reinforce=False
    )
    return sorted(h.row.id for h in hits)


def searched(c: Container, brain: Brain, start: datetime, end: datetime) -> list[str]:
    filters = Filters(date_from=start, date_to=end)
    hits, _ = c.thoughts.search(brain, USER, parse("green tea"), filters=filters, limit=50)
    return sorted(h.row.id for h, _ in hits)


READS = {"recall": recalled, "search": searched}


@pytest.mark.parametrize("read", sorted(READS))
def test_a_range_from_and_to_a_memory_s_created_at_finds_it(
    c: Container, brain: Brain, made: list[Row], read: str
) -> None:
    one = made[2].created_at
    assert READS[read](c, brain, one, one) == [made[2].id]


@pytest.mark.parametrize("read", sorted(READS))
def test_a_range_ending_at_a_memory_s_created_at_includes_it_and_nothing_later(
    c: Container, brain: Brain, made: list[Row], read: str
) -> None:
    found = READS[read](c, brain, made[1].created_at, made[3].created_at)
    assert found == sorted(r.id for r in made[1:4])


@pytest.mark.parametrize("read", sorted(READS))
def test_the_created_at_shown_finds_its_memory_to_the_millisecond(
    c: Container, brain: Brain, made: list[Row], read: str
) -> None:
    """createdAt is shown to the millisecond, as ThoughtMCP's JavaScript dates are; a range from and
    to the time shown (what a client's Date gives back) finds the memory, whose stored time has
    sub-millisecond digits."""
    row = made[2]
    shown = iso(row.created_at)  # what wire_memory shows as createdAt
    assert shown.endswith("Z") and len(shown.split(".")[1]) == 4  # three digits and the Z
    assert row.created_at.microsecond % 1000 != 0
    back = datetime.fromisoformat(shown.replace("Z", "+00:00"))
    assert READS[read](c, brain, back, back) == [row.id]
