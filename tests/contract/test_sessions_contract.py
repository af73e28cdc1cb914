"""Sessions and their messages (SessionRepository, services/repositories.py) on every record store.

A session item carries the message counter; its messages live in the same partition under
zero-padded sequence numbers. Every append is one conditional transaction on the session's
version, so two writers that read the same counter cannot both append, and nothing of the loser
is written. This suite pins the round trip, numbering and order past nine (sort keys, not
numbers), reading after a sequence and newest first, per-session isolation, and the conflicts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.errors import Conflict
from cairn.domain.models import Message, MessageRole, Session, SessionStatus
from cairn.ports.records import RecordStore
from cairn.services.repositories import SessionRepository, StoredSession

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def a_session(session_id: str = "ses_1") -> Session:
    return Session(id=session_id, brain_id="brn_1", title="Planning", actor_id="alice", created_at=T0)


def messages(session_id: str, *contents: str) -> list[Message]:
    return [
        Message(
            id=f"msg_{session_id}_{text}",
            session_id=session_id,
            brain_id="brn_1",
            role=MessageRole.user if i % 2 == 0 else MessageRole.assistant,
            content=text,
            metadata={"n": i},
            created_at=T0 + timedelta(seconds=i),
        )
        for i, text in enumerate(contents)
    ]


def read(sessions: SessionRepository, session_id: str = "ses_1") -> StoredSession:
    stored = sessions.get(session_id)
    assert stored is not None
    return stored


def test_a_session_is_created_once_and_read_back_with_no_messages(records: RecordStore) -> None:
    sessions = SessionRepository(records)
    assert sessions.get("ses_1") is None
    sessions.create(a_session())

    stored = read(sessions)
    assert stored.session == a_session() and stored.message_count == 0 and stored.version > 0
    with pytest.raises(Conflict):
        sessions.create(a_session().model_copy(update={"title": "Another"}))
    assert read(sessions) == stored
    assert list(sessions.messages("ses_1")) == [] and sessions.recent("ses_1", 5) == []


def test_messages_are_numbered_after_the_counter_and_read_in_order(records: RecordStore) -> None:
    sessions = SessionRepository(records)
    sessions.create(a_session("ses_1"))
    sessions.create(a_session("ses_2"))
    words = [f"w{i:02d}" for i in range(1, 13)]
    for batch in (words[:5], words[5:9], words[9:]):  # sequences 1-5, 6-9, then 10-12 past nine
        sessions.append(read(sessions), messages("ses_1", *batch))
    sessions.append(read(sessions, "ses_2"), messages("ses_2", "other"))

    assert read(sessions).message_count == 12
    got = list(sessions.messages("ses_1"))
    assert [m.content for m in got] == words and got[0] == messages("ses_1", "w01")[0]
    assert [m.content for m in sessions.messages("ses_1", after_seq=9)] == ["w10", "w11", "w12"]
    assert list(sessions.messages("ses_1", after_seq=12)) == []
    assert [m.content for m in sessions.recent("ses_1", 4)] == ["w12", "w11", "w10", "w09"]
    assert [m.content for m in sessions.recent("ses_1", 50)] == words[::-1]
    assert [m.content for m in sessions.messages("ses_2")] == ["other"]  # one session's partition only
    assert list(sessions.messages("ses_none")) == [] and sessions.recent("ses_none", 3) == []


def test_of_two_appends_from_the_same_read_one_wins_and_the_other_writes_nothing(
    records: RecordStore,
) -> None:
    sessions = SessionRepository(records)
    sessions.create(a_session())
    sessions.append(read(sessions), messages("ses_1", "hello"))
    first, second = read(sessions), read(sessions)

    sessions.append(first, messages("ses_1", "mine", "and mine"))
    with pytest.raises(Conflict):
        sessions.append(second, messages("ses_1", "theirs"))
    assert read(sessions).message_count == 3
    assert [m.content for m in sessions.messages("ses_1")] == ["hello", "mine", "and mine"]

    sessions.append(read(sessions), messages("ses_1", "theirs"))  # the loser reads again and retries
    assert [m.content for m in sessions.messages("ses_1", after_seq=3)] == ["theirs"]


def test_a_save_keeps_the_counter_and_a_stale_save_or_append_is_refused(records: RecordStore) -> None:
    sessions = SessionRepository(records)
    sessions.create(a_session())
    sessions.append(read(sessions), messages("ses_1", "a", "b"))
    before = read(sessions)

    closed = before.session.model_copy(
        update={"status": SessionStatus.closed, "ended_at": T0, "extracted_upto": 2}
    )
    sessions.save(before, closed)
    after = read(sessions)
    assert after.session == closed and after.message_count == 2 and after.version > before.version
    with pytest.raises(Conflict):  # written since `before` was read
        sessions.save(before, before.session)
    with pytest.raises(Conflict):
        sessions.append(before, messages("ses_1", "late"))
    assert read(sessions) == after and [m.content for m in sessions.messages("ses_1")] == ["a", "b"]

    sessions.append(after, messages("ses_1", "c"))
    assert read(sessions).session == closed  # an append keeps what was saved
    assert [m.content for m in sessions.messages("ses_1", after_seq=2)] == ["c"]
