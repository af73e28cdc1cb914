"""A ThoughtMCP memory removed through another surface (a REST or web UI delete, a batch, an
erasure) is gone for ThoughtMCP too, and a ThoughtMCP write that read the memory before it was
removed never brings it back: its row goes with its document in one transaction
(services/thoughtmcp/removal.py), and ThoughtMCP writes its document only at the version it read
(store.py `_write`). On the embedded store and the AWS adapters, whose processes keep rows."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.documents.inputs import BatchOp
from cairn.services.thoughtmcp.models import MAX_CATEGORY, MAX_CONTEXT, Metadata, NewMemory, ThoughtError
from cairn.services.thoughtmcp.recall import Filters
from tests.support.shapes import fresh_store

__all__ = ["fresh_store"]  # the fixture `c`: a fresh store on each shape

USER = "u1"


@pytest.fixture
def brain(c: Container) -> Brain:
    return c.brains.create("ThoughtMCP", slug="t")


def remember(c: Container, brain: Brain, text: str, user: str = USER) -> str:
    return str(c.thoughts.remember(brain, NewMemory(text, user, "s", "semantic"))["memoryId"])


def path_of(c: Container, memory_id: str) -> str:
    doc = c.documents.repo.get_by_id(memory_id)
    assert doc is not None
    return doc.path


def recalled(c: Container, brain: Brain, text: str | None = None, user: str = USER) -> list[str]:
    hits, _ = c.thoughts.recall(brain, user, text=text, filters=Filters(min_strength=0.0), limit=50)
    return [h.row.id for h in hits]


def searched(c: Container, brain: Brain, text: str) -> set[str]:
    return {h.document_id for h in c.search.search(brain, text, top_k=20).hits}


REMOVALS: dict[str, Callable[[Container, Brain, str], object]] = {
    "delete": lambda c, brain, path: c.documents.delete(brain, path),
    "batch": lambda c, brain, path: c.documents.batch(brain, [BatchOp(type="delete", path=path)]),
}


@pytest.mark.parametrize("removal", sorted(REMOVALS))
def test_a_memory_deleted_through_another_surface_is_gone_for_thoughtmcp(
    c: Container, brain: Brain, removal: str
) -> None:
    kept = remember(c, brain, "The kettle is descaled every Sunday morning.")
    doomed = remember(c, brain, "Espresso machine descaling happens every March.")
    assert set(recalled(c, brain)) == {kept, doomed}  # the process keeps these rows from here on

    REMOVALS[removal](c, brain, path_of(c, doomed))

    assert recalled(c, brain) == [kept]
    assert doomed not in recalled(c, brain, "espresso descaling")
    assert list(c.thoughts.get_many(brain, USER, [doomed, kept])) == [kept]
    with pytest.raises(ThoughtError, match="Memory not found"):
        c.thoughts.update(brain, doomed, USER, salience=0.9)
    assert c.documents.repo.get_by_id(doomed).deleted_at is not None  # type: ignore[union-attr]


def stalled_after_reading(c: Container) -> tuple[threading.Event, threading.Event]:
    """The next ThoughtMCP write pauses once it has read the memory's row, until released."""
    read, release = threading.Event(), threading.Event()
    owned = c.thoughts._owned

    def owned_then_wait(*args: Any, **kwargs: Any) -> Any:
        row = owned(*args, **kwargs)
        if not read.is_set():
            read.set()
            assert release.wait(timeout=30)
        return row

    c.thoughts._owned = owned_then_wait  # type: ignore[method-assign]
    return read, release


WRITES: dict[str, Callable[[Container, Brain, str], object]] = {
    "update content": lambda c, brain, m: c.thoughts.update(
        brain, m, USER, content="Espresso: descale in May now."
    ),
    "update salience": lambda c, brain, m: c.thoughts.update(brain, m, USER, salience=0.2),
    "soft forget": lambda c, brain, m: c.thoughts.forget(brain, m, USER, soft=True),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_that_read_the_memory_before_it_was_deleted_does_not_bring_it_back(
    c: Container, brain: Brain, write: str
) -> None:
    memory = remember(c, brain, "Espresso machine descaling happens every March.")
    path = path_of(c, memory)
    read, release = stalled_after_reading(c)
    answers: list[object] = []

    def run() -> None:
        try:
            answers.append(WRITES[write](c, brain, memory))
        except ThoughtError as exc:
            answers.append(exc.message)

    writer = threading.Thread(target=run)
    writer.start()
    assert read.wait(timeout=30)
    c.documents.delete(brain, path)
    release.set()
    writer.join(timeout=60)

    assert answers and "not found" in str(answers[0]).lower(), answers
    assert c.documents.repo.stored(brain.id, path).deleted_at is not None  # type: ignore[union-attr]
    assert memory not in searched(c, brain, "espresso descaling")
    assert recalled(c, brain) == []


def test_an_erasure_leaves_nothing_of_the_user_however_their_memories_are_being_written(
    c: Container, brain: Brain
) -> None:
    memories = [
        remember(c, brain, f"Private note {n}: the vault code is 4{n}17.", user="victor") for n in range(3)
    ]
    other = remember(c, brain, "Shared note: the team lunch is on Fridays.", user="wendy")
    read, release = stalled_after_reading(c)
    answers: list[object] = []

    def run() -> None:
        try:
            answers.append(c.thoughts.update(brain, memories[1], "victor", salience=0.3))
        except ThoughtError as exc:
            answers.append(exc.message)

    writer = threading.Thread(target=run)
    writer.start()
    assert read.wait(timeout=30)
    receipt = c.erasure.erase("thoughtmcp_user", "victor")
    release.set()
    writer.join(timeout=60)

    assert receipt.status == "completed"
    assert answers and "not found" in str(answers[0]).lower(), answers
    assert all(c.documents.repo.get_by_id(m) is None for m in memories)
    assert not searched(c, brain, "private note vault code") & set(memories)
    assert recalled(c, brain, user="victor") == []
    assert recalled(c, brain, user="wendy") == [other]


def test_metadata_text_is_bounded_the_same_on_every_shape(c: Container, brain: Brain) -> None:
    """ThoughtMCP does not bound context or category; Cairn keeps them in the memory's record,
    so the bound is one every shape holds (a DynamoDB item's 400 KB included)."""
    widest = "𝄞" * MAX_CONTEXT  # four bytes each in UTF-8
    memory = c.thoughts.remember(
        brain, NewMemory("The boiler is serviced in March.", USER, "s", "semantic", Metadata(context=widest))
    )["memoryId"]
    c.thoughts.update(
        brain, memory, USER, metadata=Metadata(context=widest[1:] + "!", category="c" * MAX_CATEGORY)
    )
    assert c.thoughts.get_many(brain, USER, [memory])[memory].row.context == widest[1:] + "!"

    for too_long in (Metadata(context="x" * (MAX_CONTEXT + 1)), Metadata(category="c" * (MAX_CATEGORY + 1))):
        with pytest.raises(ThoughtError, match="must be at most"):
            c.thoughts.remember(
                brain, NewMemory("Another note about the boiler.", USER, "s", "semantic", too_long)
            )
        with pytest.raises(ThoughtError, match="must be at most"):
            c.thoughts.update(brain, memory, USER, metadata=too_long)
    assert len(recalled(c, brain)) == 1


def test_a_memory_stored_while_an_erasure_runs_goes_with_it(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(c, brain, "Private note: the vault code is 4417.", user="victor")
    other = remember(c, brain, "Shared note: the team lunch is on Fridays.", user="wendy")
    erase = c.erasure.eraser.erase
    late: list[str] = []

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        if not late:  # committed after the erasure's scan, before it finished
            late.append(remember(c, brain, "Private note: the safe is behind the painting.", user="victor"))
        return erase(*args, **kwargs)

    monkeypatch.setattr(c.erasure.eraser, "erase", meanwhile)
    receipt = c.erasure.erase("thoughtmcp_user", "victor")

    assert receipt.status == "completed" and late
    assert c.documents.repo.get_by_id(late[0]) is None
    assert recalled(c, brain, user="victor") == []
    assert not searched(c, brain, "private note safe painting") & set(late)
    assert recalled(c, brain, user="wendy") == [other]
    assert receipt.removed["memory_rows"] == 2
