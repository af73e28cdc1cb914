"""When a message was said (its `said_at` metadata, for imported history) anchors its relative
dates on the speaker's own day: the offset it was given at is kept, so "yesterday" said at 8am in
Sydney is the Sydney day before, not UTC's."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from cairn.adapters.local.rule_facts import RuleFactExtractor
from cairn.domain.models import Message, MessageRole
from cairn.services.memory.extraction import utterance_of

STORED = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)


def _said(said_at: object, text: str = "I adopted a puppy called Biscuit yesterday.") -> Message:
    return Message(
        id="msg_1",
        session_id="ses_1",
        brain_id="brn_1",
        role=MessageRole.user,
        content=text,
        metadata={"said_at": said_at, "speaker": "Maria"} if said_at is not None else {"speaker": "Maria"},
        created_at=STORED,
    )


@pytest.mark.parametrize(
    ("said_at", "day"),
    [
        ("2023-05-08T08:00:00+10:00", date(2023, 5, 8)),  # 7 May 22:00 in UTC
        ("2023-05-08T20:00:00-10:00", date(2023, 5, 8)),  # 9 May 06:00 in UTC
        ("2023-05-08T23:30:00", date(2023, 5, 8)),  # no offset: UTC
        ("not a time", STORED.date()),
        (None, STORED.date()),
    ],
)
def test_a_message_is_said_on_its_speaker_s_day(said_at: str | None, day: date) -> None:
    said = utterance_of(_said(said_at)).said_at
    assert said is not None and said.date() == day


def test_a_time_past_the_calendar_s_start_in_utc_is_held_inside_it() -> None:
    said = utterance_of(_said("0001-01-01T01:00:00+14:00")).said_at
    assert said is not None and said.year == 1


def test_yesterday_is_the_speaker_s_yesterday() -> None:
    [fact] = RuleFactExtractor().extract([utterance_of(_said("2023-05-08T08:00:00+10:00"))])
    assert fact.text == "Maria adopted a puppy called Biscuit yesterday (on 7 May 2023)."
