"""SessionService on the in-memory fakes: create, append, read, close, and their refusals."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.models import Brain, MessageRole, SessionStatus
from cairn.services.sessions.service import NewMessage


def test_create_opens_a_session_with_its_fields(container: Container, brain: Brain) -> None:
    session = container.sessions.create(brain, title="Planning", actor_id="agent-7", metadata={"k": 1})
    assert session.id.startswith("ses_")
    assert (session.brain_id, session.title, session.actor_id) == (brain.id, "Planning", "agent-7")
    assert session.status is SessionStatus.open and session.ended_at is None
    stored, messages = container.sessions.get(brain, session.id)
    assert stored == session and messages == []


def test_messages_come_back_in_append_order(container: Container, brain: Brain) -> None:
    s = container.sessions.create(brain)
    sent = [
        container.sessions.append(brain, s.id, "system", "be brief"),
        container.sessions.append(brain, s.id, "user", "what did I watch?"),
        container.sessions.append(brain, s.id, "tool", '{"shows": 2}', name="tv_history"),
        container.sessions.append(brain, s.id, "assistant", "Two shows."),
    ]
    _, messages = container.sessions.get(brain, s.id)
    assert [m.id for m in messages] == [m.id for m in sent]
    assert all(m.id.startswith("msg_") and m.session_id == s.id for m in messages)
    assert [m.role for m in messages] == [
        MessageRole.system,
        MessageRole.user,
        MessageRole.tool,
        MessageRole.assistant,
    ]
    assert messages[2].name == "tv_history"
    assert [m.created_at for m in messages] == sorted(m.created_at for m in messages)


def test_more_than_a_page_of_messages_stays_in_order(container: Container, brain: Brain) -> None:
    s = container.sessions.create(brain)
    for start in range(0, 1200, 400):
        batch = [NewMessage("user", f"m{n}") for n in range(start, start + 400)]
        container.sessions.append_many(brain, s.id, batch)
    _, messages = container.sessions.get(brain, s.id)
    assert [m.content for m in messages] == [f"m{n}" for n in range(1200)]
    assert [m.content for m in container.sessions.recent(brain, s.id, 3)] == ["m1199", "m1198", "m1197"]


def test_metadata_is_stored_with_the_message(container: Container, brain: Brain) -> None:
    s = container.sessions.create(brain)
    m = container.sessions.append(
        brain, s.id, "user", "hi", metadata={"actor_id": "u1", "skip_extract": True}
    )
    _, [stored] = container.sessions.get(brain, s.id)
    assert stored.metadata == m.metadata == {"actor_id": "u1", "skip_extract": True}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "user", "content": ""}, "content"),
        ({"role": "user", "content": "x" * 1_000_001}, "content"),
        ({"role": "user", "content": "x", "name": "search"}, "name"),
        ({"role": "tool", "content": "x", "name": ""}, "name"),
        ({"role": "tool", "content": "x", "name": "n" * 129}, "name"),
        ({"role": "user", "content": "x", "metadata": {"nested": {"a": 1}}}, "metadata"),
        ({"role": "user", "content": "x", "metadata": {f"k{n}": n for n in range(65)}}, "metadata"),
        ({"role": "user", "content": "x", "metadata": {"": 1}}, "metadata"),
        # each value within bounds, the whole more than a record keeps beside its other fields
        ({"role": "user", "content": "x", "metadata": {f"k{n}": "v" * 8192 for n in range(5)}}, "metadata"),
    ],
)
def test_bad_messages_are_refused_and_nothing_is_written(
    container: Container, brain: Brain, kwargs: dict[str, Any], fragment: str
) -> None:
    s = container.sessions.create(brain)
    container.sessions.append(brain, s.id, "user", "first")
    with pytest.raises(InvalidInput, match=fragment):
        container.sessions.append(brain, s.id, **kwargs)
    _, messages = container.sessions.get(brain, s.id)
    assert [m.content for m in messages] == ["first"]
    assert container.sessions.append(brain, s.id, "user", "next") is not None  # counter untouched
    assert [m.content for m in container.sessions.get(brain, s.id)[1]] == ["first", "next"]


def test_a_batch_with_one_bad_message_writes_none(container: Container, brain: Brain) -> None:
    s = container.sessions.create(brain)
    with pytest.raises(InvalidInput):
        container.sessions.append_many(brain, s.id, [NewMessage("user", "ok"), NewMessage("user", "")])
    assert container.sessions.get(brain, s.id)[1] == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"title": ""},
        {"title": "t" * 513},
        {"actor_id": ""},
        {"metadata": {"x": [1, 2]}},
        {"metadata": {f"k{n}": "é" * 8192 for n in range(3)}},  # 49 KB as UTF-8
    ],
)
def test_bad_sessions_are_refused(container: Container, brain: Brain, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        container.sessions.create(brain, **kwargs)


def test_close_sets_ended_at_and_is_idempotent(container: Container, brain: Brain) -> None:
    s = container.sessions.create(brain)
    closed = container.sessions.close(brain, s.id)
    assert closed.status is SessionStatus.closed and closed.ended_at is not None
    assert closed.ended_at > s.created_at
    again = container.sessions.close(brain, s.id)
    assert again == closed
    assert container.sessions.get(brain, s.id)[0] == closed


def test_appending_to_a_closed_session_is_a_conflict(container: Container, brain: Brain) -> None:
    s = container.sessions.create(brain)
    container.sessions.append(brain, s.id, "user", "before")
    container.sessions.close(brain, s.id)
    with pytest.raises(Conflict, match="closed"):
        container.sessions.append(brain, s.id, "user", "after")
    assert [m.content for m in container.sessions.get(brain, s.id)[1]] == ["before"]


def test_a_session_is_invisible_from_another_brain(container: Container, brain: Brain) -> None:
    other = container.brains.create("Other", slug="other")
    s = container.sessions.create(brain)
    calls = [
        lambda: container.sessions.get(other, s.id),
        lambda: container.sessions.append(other, s.id, "user", "x"),
        lambda: container.sessions.close(other, s.id),
        lambda: container.sessions.recall(other, s.id, "x"),
        lambda: container.sessions.get(brain, "ses_unknown"),
        lambda: container.sessions.get(brain, ""),
    ]
    for call in calls:
        with pytest.raises(NotFound):
            call()
    assert container.sessions.get(brain, s.id)[0].status is SessionStatus.open


def test_recall_validates_its_arguments(container: Container, brain: Brain) -> None:
    s = container.sessions.create(brain)
    for kwargs in ({"query": ""}, {"query": "   "}, {"query": "q" * 4097}, {"query": "x", "top_k": 0}):
        with pytest.raises(InvalidInput):
            container.sessions.recall(brain, s.id, **kwargs)
