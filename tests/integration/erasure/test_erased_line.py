"""Erasing values from the middle of a fact key's line: the chain joins the live values around
them, so walking it (history placed later, the web UI's chain) never stops at an erased id, and
what held while the erased value did stays unknown. On the embedded store and the AWS adapters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document, MemoryType
from cairn.services.memory.memory_model import SUPERSEDES, MemoryInput
from tests.support.shapes import fresh_store

__all__ = ["fresh_store"]  # the fixture `c`: a fresh store on each shape


@pytest.fixture
def brain(c: Container) -> Brain:
    return c.brains.create("Facts", slug="facts")


def year(y: int) -> datetime:
    return datetime(y, 1, 1, tzinfo=UTC)


def fact(c: Container, brain: Brain, text: str, began: int, agent: str) -> str:
    m = MemoryInput(
        type=MemoryType.fact, content=text, key="office", source_agent=agent, valid_from=year(began)
    )
    return c.memories.store(brain, m).memory.id


def record(c: Container, memory_id: str) -> Document:
    doc = c.documents.repo.get_by_id(memory_id)
    assert doc is not None and doc.memory is not None
    return doc


def test_the_line_closes_over_erased_values_and_later_history_finds_its_place(
    c: Container, brain: Brain
) -> None:
    first = fact(c, brain, "The office is in Leeds.", 2022, "agent-a")
    middle = fact(c, brain, "The office is in York.", 2023, "mallory")
    also = fact(c, brain, "The office is in Hull.", 2024, "mallory")
    last = fact(c, brain, "The office is in Bath.", 2025, "agent-a")
    ended_before = record(c, first).memory.valid_to  # type: ignore[union-attr]

    with access.as_system():
        receipt = c.erasure.erase("source_agent", "mallory")
    assert receipt.status == "completed"

    assert record(c, last).metadata[SUPERSEDES] == first
    kept = record(c, first).memory
    assert kept is not None and kept.superseded_by == last
    assert kept.valid_to == ended_before == year(2023)  # York's years are not Leeds's now
    assert c.documents.repo.get_by_id(middle) is None
    assert c.documents.repo.get_by_id(also) is None

    older = fact(c, brain, "The office is in Hebden Bridge.", 2020, "agent-a")
    assert record(c, first).metadata[SUPERSEDES] == older  # placed before Leeds
    placed = record(c, older).memory
    assert placed is not None and placed.superseded_by == first and placed.valid_to == year(2022)


def test_an_erased_first_value_leaves_its_successor_superseding_nothing(c: Container, brain: Brain) -> None:
    fact(c, brain, "The office is in York.", 2023, "mallory")
    last = fact(c, brain, "The office is in Bath.", 2025, "agent-a")

    with access.as_system():
        c.erasure.erase("source_agent", "mallory")

    assert SUPERSEDES not in record(c, last).metadata
    assert record(c, last).memory.current  # type: ignore[union-attr]


def test_an_erased_current_value_gives_its_line_back_to_the_value_before_it(
    c: Container, brain: Brain
) -> None:
    first = fact(c, brain, "The office is in Leeds.", 2022, "agent-a")
    fact(c, brain, "The office is in York.", 2023, "mallory")
    fact(c, brain, "The office is in Hull.", 2024, "mallory")

    with access.as_system():
        c.erasure.erase("source_agent", "mallory")

    kept = record(c, first).memory
    assert kept is not None and kept.current and kept.valid_to is None  # open again, as before York
    found = {h.document_id for h in c.search.search(brain, "office Leeds", top_k=10).hits}
    assert first in found  # a plain search (current values only) finds it again
    # the key's claim is Leeds's: the next value supersedes it, so one value stays current
    bath = fact(c, brain, "The office is in Bath.", 2025, "agent-a")
    assert record(c, bath).metadata[SUPERSEDES] == first
    after = record(c, first).memory
    assert after is not None and after.superseded_by == bath and after.valid_to == year(2025)
    assert _current_facts(c, brain) == [bath]


def test_an_erased_current_value_reopens_the_value_before_a_deleted_one_left_unjoined(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete joins its line after it commits: one a crash stopped there (or made before deletes
    joined lines) leaves the deleted value in the chain. Erasing the current value passes over it
    to the value before, which is current again (the line was left with no current value, and the
    next value stored started a chain of its own beside Leeds)."""
    first = fact(c, brain, "The office is in Leeds.", 2022, "agent-a")
    york = fact(c, brain, "The office is in York.", 2023, "agent-a")
    fact(c, brain, "The office is in Hull.", 2024, "mallory")
    monkeypatch.setattr(c.memories, "_join_over", lambda *_a, **_k: 0)  # stopped before joining
    c.memories.delete(brain, york)
    monkeypatch.undo()

    with access.as_system():
        c.erasure.erase("source_agent", "mallory")

    kept = record(c, first).memory
    assert kept is not None and kept.current and kept.valid_to is None  # open again, as before York
    bath = fact(c, brain, "The office is in Bath.", 2025, "agent-a")
    assert record(c, bath).metadata[SUPERSEDES] == first
    after = record(c, first).memory
    assert after is not None and after.superseded_by == bath and after.valid_to == year(2025)


def test_erasing_a_deleted_current_value_leaves_its_line_with_no_current_value(
    c: Container, brain: Brain
) -> None:
    """A delete of the current value leaves its key with no current value; erasing it later does
    not make the value before it current again (it did: Leeds came back as true now, though it had
    ended when Hull began). The next value stored goes on from Leeds, as after the delete."""
    first = fact(c, brain, "The office is in Leeds.", 2022, "agent-a")
    hull = fact(c, brain, "The office is in Hull.", 2024, "mallory")
    c.memories.delete(brain, hull)

    with access.as_system():
        c.erasure.erase("source_agent", "mallory")

    kept = record(c, first).memory
    assert kept is not None and not kept.current and kept.valid_to == year(2024)  # ended, as before
    found = {h.document_id for h in c.search.search(brain, "office Leeds", top_k=10).hits}
    assert first not in found  # a plain search (current values only) finds nothing of the key
    bath = fact(c, brain, "The office is in Bath.", 2025, "agent-a")
    assert record(c, bath).metadata[SUPERSEDES] == first
    after = record(c, first).memory
    assert after is not None and after.superseded_by == bath and after.valid_to == year(2024)
    assert _current_facts(c, brain) == [bath]


def _current_facts(c: Container, brain: Brain) -> list[str]:
    """The ids of the brain's facts that are current and not deleted."""
    return [
        d.id
        for d in c.documents.repo.list(brain.id, "memories/fact/")
        if d.memory is not None and d.memory.current and d.deleted_at is None
    ]
