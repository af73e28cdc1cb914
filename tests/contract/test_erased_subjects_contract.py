"""The erased subjects' marks (services/erasure/erased.py) on every record store: keyed with the
store's secret, so a mark does not tell whose data was erased to someone trying likely names;
removed by the index sweep once past their lifetime, after which work queued before that erasure
is still answered as erased; and the plain digests an earlier release wrote honoured, given a
lifetime by the sweep (again a day later, for a process of that release still running), then
removed too."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.errors import Unavailable
from cairn.ports.records import Item, RecordStore
from cairn.services.erasure.erased import LIFETIME, ErasedSubjects, _keyed
from cairn.services.erasure.subjects import Subject
from cairn.services.keyed_digests import family_keys
from tests.fakes.clock import FakeClock
from tests.fakes.store_secret import SECRET, FakeStoreSecret

START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
DAY = 86_400.0
OTHER = FakeStoreSecret(b"another store's secret, 32 bytes!!")


def stored(records: RecordStore) -> dict[tuple[str, str], Item]:
    found: dict[tuple[str, str], Item] = {}
    for pk in ("erased", "erased-expiry"):
        found.update({(item.pk, item.sk): item for item in records.query(pk).items})
    return found


def plain(kind: str, value: str) -> str:
    """What an earlier release wrote for the subject: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(f"{kind}\x00{value}".encode()).hexdigest()[:16]


def test_a_mark_is_keyed_no_digest_of_the_subject_and_meaningless_without_the_secret(
    records: RecordStore,
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    ErasedSubjects(records, clock, SECRET).mark(Subject.of("any", "alice"), ["brn_1"])

    marks = [sk for pk, sk in stored(records) if pk == "erased"]
    assert len(marks) == 2 and all(sk.startswith("brn_1#") and len(sk) == len("brn_1#") + 64 for sk in marks)
    everything = str(list(stored(records).values())) + str(list(stored(records)))
    assert "alice" not in everything
    assert not any(plain(kind, "alice") in everything for kind in ("session_actor", "agent_scope"))

    same = ErasedSubjects(records, clock, SECRET)
    assert same.actor_since("brn_1", "alice") == START
    assert same.scope_since("brn_1", "memory/agent/alice/notes.md") == START
    assert same.actor_since("brn_2", "alice") is None and same.actor_since("brn_1", "bob") is None
    theirs = _keyed(
        family_keys(OTHER, b"cairn erased subjects").current, "brn_1", Subject.of("session_actor", "alice")
    )
    assert theirs not in marks  # the marks mean nothing without the secret


def test_work_queued_before_an_erasure_under_another_secret_stays_stopped_and_says_so(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A data directory restored without its store-secret.key makes a new one, under which the
    marks made before cannot be read: work queued before then (an extraction job holding an
    erased actor's drafts, an ingest into an erased agent's scope) is answered as erased all the
    same, in any brain, with a warning that names no secret; marks made from then on are read
    with the new secret, and work queued after the change is not stopped wholesale."""
    clock = FakeClock(start=START, tick=timedelta(0))
    queued = START
    clock.advance(60)
    ErasedSubjects(records, clock, SECRET).mark(Subject.of("any", "alice"), ["brn_1"])  # the lost secret
    clock.advance(60)
    changed = clock.now()
    restored = ErasedSubjects(records, clock, OTHER)

    assert (since := restored.actor_since("brn_1", "alice")) is not None and since > queued
    assert (since := restored.scope_since("brn_1", "memory/agent/alice/a.md")) is not None and since > queued
    assert restored.actor_since("brn_9", "carl") == changed  # any work queued before the change
    warned = [r.getMessage() for r in caplog.records if "not the one" in r.getMessage()]
    assert len(warned) == 1 and not any(
        OTHER.secret.decode() in m or SECRET.secret.decode() in m for m in warned
    )

    clock.advance(60)
    restored.mark(Subject.of("session_actor", "bea"), ["brn_1"])
    assert restored.actor_since("brn_1", "bea") == clock.now()  # keyed with the new secret, read with it
    assert restored.actor_since("brn_1", "dan") == changed  # queued after it: not stopped
    assert len([r for r in caplog.records if "not the one" in r.getMessage()]) == 1  # once


def test_a_mark_without_its_secret_is_unavailable_and_changes_nothing(records: RecordStore) -> None:
    secret = FakeStoreSecret()
    secret.refusing = True
    erased = ErasedSubjects(records, FakeClock(start=START, tick=timedelta(0)), secret)
    with pytest.raises(Unavailable, match="secret"):
        erased.mark(Subject.of("session_actor", "alice"), ["brn_1"])
    assert stored(records) == {}


def test_a_mark_past_its_lifetime_goes_and_work_queued_before_it_stays_stopped(records: RecordStore) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    erased = ErasedSubjects(records, clock, SECRET)
    erased.mark(Subject.of("session_actor", "alice"), ["brn_1"])
    clock.advance(20 * DAY)
    erased.mark(Subject.of("session_actor", "bea"), ["brn_1"])
    later = START + timedelta(days=20)
    clock.advance(LIFETIME.total_seconds() - 15 * DAY)  # alice's mark is 5 days past it, bea's 15 within

    assert erased.sweep() == 1
    assert erased.sweep() == 0
    assert [item.data["since"] for (pk, _), item in stored(records).items() if pk == "erased"] == [
        later.isoformat()
    ]
    assert len(stored(records)) == 2  # bea's mark and its expiry
    assert erased.actor_since("brn_1", "bea") == later
    # alice's mark is gone: work queued before her erasure is answered as erased all the same (in
    # any brain, for any actor); work queued after it compares as never erased
    assert erased.actor_since("brn_1", "alice") == START
    assert erased.actor_since("brn_9", "carl") == START
    assert erased.scope_since("brn_9", "memory/agent/carl/notes.md") == START
    assert erased.scope_since("brn_9", "notes/carl.md") is None

    clock.advance(20 * DAY)
    assert erased.sweep() == 1 and stored(records) == {}
    assert erased.actor_since("brn_9", "carl") == later


def test_a_mark_lives_on_from_the_subjects_latest_erasure(records: RecordStore) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    erased = ErasedSubjects(records, clock, SECRET)
    erased.mark(Subject.of("agent_scope", "alice"), ["brn_1"])
    clock.advance(25 * DAY)
    erased.mark(Subject.of("agent_scope", "alice"), ["brn_1"])  # erased again
    again = START + timedelta(days=25)
    clock.advance(10 * DAY)
    assert erased.sweep() == 0
    assert erased.scope_since("brn_1", "memory/agent/alice/a.md") == again
    clock.advance(LIFETIME.total_seconds() - 10 * DAY + 1)
    assert erased.sweep() == 1 and stored(records) == {}


def test_unkeyed_marks_of_an_earlier_release_are_honoured_then_given_a_lifetime(records: RecordStore) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    old = START - timedelta(days=400)
    records.put(Item("erased", f"brn_1#{plain('session_actor', 'alice')}", {"since": old.isoformat()}))
    erased = ErasedSubjects(records, clock, SECRET)
    assert erased.actor_since("brn_1", "alice") == old

    assert erased.sweep() == 1  # given LIFETIME from now, not removed at once for its age
    assert erased.sweep() == 0 and ErasedSubjects(records, clock, SECRET).sweep() == 0
    assert erased.actor_since("brn_1", "alice") == old
    erased.mark(Subject.of("session_actor", "alice"), ["brn_1"])  # erased again: the later mark counts
    assert erased.actor_since("brn_1", "alice") == START
    clock.advance(LIFETIME.total_seconds() + 1)
    assert erased.sweep() == 2 and stored(records) == {}


def test_a_plain_mark_written_after_the_adoption_gets_a_lifetime_at_the_next_daily_pass(
    records: RecordStore,
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    erased = ErasedSubjects(records, clock, SECRET)
    assert erased.sweep() == 0  # the first pass: nothing of an earlier release
    clock.advance(60)
    straggler = ("erased", f"brn_1#{plain('agent_scope', 'alice')}")  # an old process still running
    records.put(Item(*straggler, {"since": clock.now().isoformat()}))
    assert erased.sweep() == 0 and ErasedSubjects(records, clock, SECRET).sweep() == 0  # within the day

    clock.advance(DAY)
    assert ErasedSubjects(records, clock, SECRET).sweep() == 1
    assert "until" in stored(records)[straggler].data
    assert erased.sweep() == 0  # this process learns the pass is done: it waits another day
    clock.advance(LIFETIME.total_seconds() + 1)
    assert erased.sweep() == 1 and straggler not in stored(records)
