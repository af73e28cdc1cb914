"""Typed memories in the core (services/memory/memories.py), on every record store: the in-memory fake,
SQLite and DynamoDB under moto. Supersede by key and subject, deduplication by content hash, soft
delete, in-place update, event expiry, and concurrent writers racing on one key."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from fastapi.testclient import TestClient

from cairn import faults
from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.models import Brain, MemoryType
from cairn.entrypoints.http import create_app
from cairn.ports.records import Item
from cairn.services.memory.memory_model import SUPERSEDES, MemoryInput, MemoryQuery
from cairn.services.repositories import documents_pk
from tests.fakes.clock import FakeClock
from tests.integration.memory.conftest import START, superseded_line


def fact(content: str, key: str | None = "acme-stack", **kw: object) -> MemoryInput:
    return MemoryInput(type=MemoryType.fact, content=content, key=key, client_id="acme", **kw)  # type: ignore[arg-type]


def current(container: Container, brain: Brain, kind: MemoryType) -> list[str]:
    return sorted(
        container.memories.text(d)
        for d in container.memories.of_type(brain, [kind])
        if d.deleted_at is None and d.memory is not None and d.memory.current
    )


def test_a_fact_with_a_key_supersedes_the_current_one(container: Container, brain: Brain) -> None:
    first = container.memories.store(brain, fact("Acme runs WordPress"))
    second = container.memories.store(brain, fact("Acme moved to Next.js 14"))

    old = container.memories.record(brain, first.memory.id)
    assert second.supersedes == first.memory.id and not second.deduplicated
    assert old.memory is not None and old.memory.superseded_by == second.memory.id
    assert old.memory.valid_to is not None and old.memory.superseded_at is not None
    assert current(container, brain, MemoryType.fact) == ["Acme moved to Next.js 14"]
    # The superseded fact's chunks are no longer current in the index, but still there.
    chunks = container.adapters.chunks.get_chunks(brain.id, first.memory.id)
    assert chunks and not any(c.current for c in chunks)


def test_a_fact_moved_by_a_rename_is_still_the_one_its_next_value_supersedes(
    container: Container, brain: Brain
) -> None:
    """The current fact is looked for where a memory of its kind is stored, then by its id."""
    first = container.memories.store(brain, fact("Acme runs WordPress"))
    container.documents.rename(brain, first.memory.path, "notes/acme-stack.md")
    assert container.memories.store(brain, fact("Acme runs WordPress")).deduplicated
    second = container.memories.store(brain, fact("Acme moved to Next.js 14"))

    assert second.supersedes == first.memory.id
    moved = container.documents.get(brain, "notes/acme-stack.md")
    assert moved is not None and moved.memory is not None and moved.memory.superseded_by == second.memory.id
    assert current(container, brain, MemoryType.fact) == ["Acme moved to Next.js 14"]


def test_statuses_supersede_by_subject_and_other_types_never(container: Container, brain: Brain) -> None:
    def status(value: str) -> MemoryInput:
        return MemoryInput(
            type=MemoryType.status, content=f"deploy is {value}", subject="deploy", status_value=value
        )

    container.memories.store(brain, status("green"))
    container.memories.store(brain, status("red"))
    for text in ("we shipped v2", "we shipped v3"):
        container.memories.store(brain, MemoryInput(type=MemoryType.event, content=text))
        container.memories.store(brain, MemoryInput(type=MemoryType.decision, content=f"decided: {text}"))
    container.memories.store(brain, fact("an unkeyed fact", key=None))
    container.memories.store(brain, fact("another unkeyed fact", key=None))

    assert current(container, brain, MemoryType.status) == ["deploy is red"]
    assert len(current(container, brain, MemoryType.event)) == 2
    assert len(current(container, brain, MemoryType.decision)) == 2
    assert len(current(container, brain, MemoryType.fact)) == 2  # without a key nothing is superseded


def test_the_same_text_for_the_same_client_and_type_is_a_duplicate(
    container: Container, brain: Brain
) -> None:
    one = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="Deployed v2", client_id="acme")
    )
    again = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content=" Deployed v2 ", client_id="acme")
    )
    other_client = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="Deployed v2", client_id="globex")
    )
    other_type = container.memories.store(
        brain, MemoryInput(type=MemoryType.decision, content="Deployed v2", client_id="acme")
    )

    assert again.deduplicated and again.memory.id == one.memory.id
    assert not other_client.deduplicated and not other_type.deduplicated
    # Once the first is deleted, the same text is stored anew.
    container.memories.delete(brain, one.memory.id, reason="wrong")
    fresh = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="Deployed v2", client_id="acme")
    )
    assert not fresh.deduplicated and fresh.memory.id != one.memory.id


def test_credentials_are_scrubbed_before_anything_is_stored(container: Container, brain: Brain) -> None:
    stored = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="rotated key AKIAIOSFODNN7EXAMPLE today")
    )
    text = container.memories.text(stored.memory)
    chunks = container.adapters.chunks.get_chunks(brain.id, stored.memory.id)
    assert "AKIA" not in text and "[AWS_KEY_REDACTED]" in text
    assert all("AKIA" not in c.text for c in chunks)


def test_facts_and_statuses_are_valid_from_their_writing(container: Container, brain: Brain) -> None:
    keyed = container.memories.store(brain, fact("Acme uses Postgres"))
    event = container.memories.store(brain, MemoryInput(type=MemoryType.event, content="a thing happened"))
    dated = container.memories.store(
        brain, fact("Acme used MySQL", key="acme-db-2020", valid_from=datetime(2020, 1, 1, tzinfo=UTC))
    )

    assert keyed.memory.memory is not None and keyed.memory.memory.valid_from is not None
    assert event.memory.memory is not None and event.memory.memory.valid_from is None
    assert dated.memory.memory is not None and dated.memory.memory.valid_from == datetime(
        2020, 1, 1, tzinfo=UTC
    )
    with pytest.raises(InvalidInput):
        container.memories.store(brain, fact("x", valid_from=START, valid_to=START - timedelta(days=1)))


def test_update_changes_in_place_and_reindexes_new_text(container: Container, brain: Brain) -> None:
    stored = container.memories.store(brain, fact("Acme runs WordPress", key=None))

    updated = container.memories.update(brain, stored.memory.id, content="Acme runs Ghost", importance=0.85)
    unchanged = container.memories.update(brain, stored.memory.id, importance=0.85)

    assert updated.memory.id == stored.memory.id
    assert updated.fields == ["content", "content_hash", "importance"]
    assert unchanged.fields == []
    assert container.memories.text(updated.memory) == "Acme runs Ghost"
    chunks = container.adapters.chunks.get_chunks(brain.id, stored.memory.id)
    assert [c.text for c in chunks] == ["Acme runs Ghost"] and chunks[0].importance == 0.85
    with pytest.raises(InvalidInput):
        container.memories.update(brain, stored.memory.id)
    with pytest.raises(NotFound):
        container.memories.update(brain, "mem_nope", importance=0.5)


def test_delete_is_soft_and_idempotent(container: Container, brain: Brain) -> None:
    stored = container.memories.store(brain, MemoryInput(type=MemoryType.event, content="a mistake"))

    first = container.memories.delete(brain, stored.memory.id, reason="incorrect")
    second = container.memories.delete(brain, stored.memory.id)

    assert not first.already_inactive and first.memory.deleted_at is not None
    assert second.already_inactive
    assert container.memories.record(brain, stored.memory.id).deleted_reason == "incorrect"
    assert container.adapters.chunks.get_chunks(brain.id, stored.memory.id) == []
    with pytest.raises(NotFound):
        container.memories.delete(brain, "mem_missing")


def test_a_superseded_memory_deleted_is_gone_from_history_too(container: Container, brain: Brain) -> None:
    """Deleting the wrong value a newer one superseded was answered `already_inactive` and left
    it readable through history, time travel and known_at (the web UI then said it was deleted)."""
    old = container.memories.store(brain, fact("the Acme database password is tulip-42"))
    new = container.memories.store(brain, fact("the Acme database lives in Dublin"))

    gone = container.memories.delete(brain, old.memory.id, reason="held a secret")

    assert gone.already_inactive  # zengram's answer for a memory it no longer counts as active
    assert container.memories.record(brain, old.memory.id).deleted_at is not None
    assert container.adapters.chunks.get_chunks(brain.id, old.memory.id) == []
    then = old.memory.created_at
    for q in (
        MemoryQuery(types=("fact",), include_superseded=True, count_access=False),
        MemoryQuery(types=("fact",), at_time=then, count_access=False),
        MemoryQuery(types=("fact",), known_at=then, count_access=False),
    ):
        found = container.memories.search(brain, "Acme database password", q)
        assert old.memory.id not in [h.memory.id for h in found], q
    assert container.memories.delete(brain, old.memory.id).already_inactive
    assert current(container, brain, MemoryType.fact) == ["the Acme database lives in Dublin"]
    assert container.memories.record(brain, new.memory.id).deleted_at is None


def test_deleting_a_value_inside_a_line_joins_its_neighbours(container: Container, brain: Brain) -> None:
    """The line stays one line: a value stored later as history is placed among the live ones
    (it was placed after the deleted one, and two values overlapped)."""
    ids = [
        container.memories.store(brain, fact(text, key="on-call", valid_from=_year(2024, month))).memory.id
        for text, month in (("Alice is on call", 1), ("Bob is on call", 3), ("Carol is on call", 6))
    ]
    container.memories.delete(brain, ids[1])

    alice = container.memories.record(brain, ids[0])
    assert alice.memory is not None and alice.memory.superseded_by == ids[2]
    assert container.memories.record(brain, ids[2]).metadata.get(SUPERSEDES) == ids[0]
    xavier = container.memories.store(
        brain, fact("Xavier is on call", key="on-call", valid_from=_year(2024, 4))
    )
    line = [container.memories.record(brain, i) for i in (ids[0], xavier.memory.id, ids[2])]
    assert [d.memory.superseded_by for d in line[:2] if d.memory] == [xavier.memory.id, ids[2]]
    ends = [(d.memory.valid_from, d.memory.valid_to) for d in line if d.memory]
    for (_, end), (start, _) in pairwise(ends):  # no two values overlap
        assert end is not None and start is not None and end <= start


def _rest_delete(client: TestClient, brain: Brain, path: str) -> None:
    client.delete(f"/v1/brains/{brain.id}/documents", params={"path": path}).raise_for_status()


def _batch_delete(client: TestClient, brain: Brain, path: str) -> None:
    body = {"reason": "wrong value", "ops": [{"type": "delete", "path": path}]}
    client.post(f"/v1/brains/{brain.id}/documents/batch-ops", json=body).raise_for_status()


@pytest.mark.parametrize("delete", [_rest_delete, _batch_delete], ids=["rest", "batch"])
def test_deleting_a_value_through_the_store_protocol_joins_its_neighbours(
    container: Container, brain: Brain, delete: Callable[[TestClient, Brain, str], None]
) -> None:
    """REST's document delete and a batch's delete op join the line over the deleted value as
    zengram's delete does (they left it unjoined: history stored later went after the deleted
    value, and Paris [2024-06, 2026) overlapped Frankfurt [2024, 2025))."""
    ids = [
        container.memories.store(brain, fact(f"the Acme database lives in {city}", key="acme-db",
                                             valid_from=_year(year))).memory
        for year, city in ((2024, "Frankfurt"), (2025, "Dublin"), (2026, "Oslo"))
    ]  # fmt: skip
    with TestClient(create_app(container), base_url="http://localhost") as client:
        delete(client, brain, ids[1].path)

    frankfurt, oslo = (container.memories.record(brain, d.id) for d in (ids[0], ids[2]))
    assert frankfurt.memory is not None and frankfurt.memory.superseded_by == oslo.id
    assert oslo.metadata.get(SUPERSEDES) == frankfurt.id
    paris = container.memories.store(
        brain,
        replace(fact("the Acme database lives in Paris", key="acme-db", valid_from=_year(2024, 6)),
                client_id="globex"),
    ).memory  # fmt: skip
    line = [container.memories.record(brain, i) for i in (frankfurt.id, paris.id, oslo.id)]
    assert [d.memory.superseded_by for d in line[:2] if d.memory] == [paris.id, oslo.id]
    ends = [(d.memory.valid_from, d.memory.valid_to) for d in line if d.memory]
    for (_, end), (start, _) in pairwise(ends):  # no two values overlap
        assert end is not None and start is not None and end <= start
    acme = MemoryQuery(types=("fact",), client_ids=("acme",), at_time=_year(2024, 9), count_access=False)
    assert container.memories.search(brain, "where does the Acme database live", acme) == []


def test_history_is_placed_past_a_deleted_value_its_neighbours_were_not_joined_over(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete joins the line after it commits: one a crash stopped there (or made before deletes
    joined lines) leaves the deleted value in the chain, and history is placed past it."""
    ids = list(_acme_line(container, brain).values())
    monkeypatch.setattr(container.memories, "_join_over", lambda *_a, **_k: 0)  # stopped before joining
    container.memories.delete(brain, ids[1])
    monkeypatch.undo()
    paris = container.memories.store(
        brain, fact("the Acme database lives in Paris", key="acme-db", valid_from=_year(2024, 6))
    ).memory
    first = container.memories.record(brain, ids[0]).memory
    assert first is not None and (first.superseded_by, first.valid_to) == (paris.id, _year(2024, 6))
    assert paris.metadata.get(SUPERSEDES) == ids[0]
    assert container.memories.record(brain, ids[2]).metadata.get(SUPERSEDES) == paris.id


def test_a_delete_joins_the_line_as_it_is_after_a_value_stored_while_it_ran(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value stored between a delete's commit and its line join (another request) is placed past
    the deleted value, between its neighbours; the join leaves them (it joined them from the records
    read before the delete, cutting the new value out of the line: Rome stored next overlapped it)."""
    ids = _acme_line(container, brain)
    # The second request runs in this thread, inside the delete's path lock: a lock per path, where
    # the new value's path fell on the deleted one's stripe about once in 256 runs and waited for good
    locks, paths = container.documents.locks, {}
    monkeypatch.setattr(locks, "_locks", [threading.Lock() for _ in range(1024)])
    monkeypatch.setattr(locks, "_index", lambda key: paths.setdefault(key, len(paths)))
    stored: list[str] = []

    def store_paris() -> None:  # what a second request does while the delete runs
        paris = replace(fact("the Acme database lives in Paris", key="acme-db", valid_from=_year(2025, 6)),
                        client_id="globex")  # fmt: skip
        stored.append(container.memories.store(brain, paris).memory.id)

    with faults.armed("documents.indexed", action=store_paris):
        container.memories.delete(brain, ids["Dublin"])

    [paris] = stored
    frankfurt = container.memories.record(brain, ids["Frankfurt"]).memory
    assert frankfurt is not None and frankfurt.superseded_by == paris
    assert container.memories.record(brain, ids["Oslo"]).metadata.get(SUPERSEDES) == paris
    rome = container.memories.store(
        brain, fact("the Acme database lives in Rome", key="acme-db", valid_from=_year(2025, 9))
    ).memory
    line = [container.memories.record(brain, i) for i in (ids["Frankfurt"], paris, rome.id, ids["Oslo"])]
    assert [d.memory.superseded_by for d in line[:3] if d.memory] == [paris, rome.id, ids["Oslo"]]
    ends = [(d.memory.valid_from, d.memory.valid_to) for d in line if d.memory]
    for (_, end), (start, _) in pairwise(ends):  # no two values overlap
        assert end is not None and start is not None and end <= start
    assert _true_then(container, brain, _year(2025, 7)) == ["the Acme database lives in Paris"]
    globex = MemoryQuery(types=("fact",), client_ids=("globex",), at_time=_year(2025, 10), count_access=False)
    assert container.memories.search(brain, "where does the Acme database live", globex) == []


def test_a_value_stored_after_the_current_one_was_deleted_goes_on_from_the_line(
    container: Container, brain: Brain
) -> None:
    """Deleting the current value leaves its key with no current value; the next value stored
    follows the values before the deleted one (it started a line of its own, and Dublin's value,
    ending where the deleted one began, overlapped it: `at_time` then found Dublin or Paris by
    client)."""
    ids = _acme_line(container, brain)
    container.memories.delete(brain, ids["Oslo"], reason="wrong")
    assert current(container, brain, MemoryType.fact) == []  # no current value, as zengram leaves it
    # a value that began before the last one kept is history, placed in the line: still none
    lisbon = container.memories.store(
        brain, fact("the Acme database lives in Lisbon", key="acme-db", valid_from=_year(2024, 6))
    ).memory
    assert lisbon.memory is not None and lisbon.memory.superseded_by == ids["Dublin"]
    assert current(container, brain, MemoryType.fact) == []

    _paris_follows(container, brain, ids["Dublin"])


def test_a_value_stored_after_a_restore_goes_on_from_a_line_whose_current_value_was_deleted(
    container: Container, brain: Brain
) -> None:
    """An archive holds no deleted value: a line whose current value (Oslo) was deleted comes back
    as its kept values, the last (Dublin) superseded by the missing one, and the claim names it.
    The next value stored goes on from Dublin, as where it was exported (it started a chain of its
    own: Paris [2025-06, ...) overlapped Dublin [2025, 2026), and `at_time` found either by client)."""
    frankfurt, dublin, oslo = "mem_frankfurt", "mem_dublin", "mem_oslo"  # Oslo: deleted, not archived
    for memory_id, year, city, successor in (
        (frankfurt, 2024, "Frankfurt", dublin),
        (dublin, 2025, "Dublin", oslo),
    ):
        restored = fact(
            f"the Acme database lives in {city}",
            key="acme-db",
            valid_from=_year(year),
            valid_to=_year(year + 1),
            memory_id=memory_id,
            superseded_by=successor,
        )
        container.memories.store(brain, restored)
    assert current(container, brain, MemoryType.fact) == []

    _paris_follows(container, brain, dublin)


def _paris_follows(container: Container, brain: Brain, last_kept: str) -> None:
    """Store Paris (from 2025-06, for globex): it supersedes `last_kept`, whose validity ends where
    Paris begins, and is the one value true in 2025-09, which no acme value is."""
    paris = container.memories.store(
        brain,
        replace(fact("the Acme database lives in Paris", key="acme-db", valid_from=_year(2025, 6)),
                client_id="globex"),
    )  # fmt: skip
    assert paris.supersedes == last_kept
    assert paris.memory.metadata.get(SUPERSEDES) == last_kept
    held = container.memories.record(brain, last_kept).memory
    assert held is not None and (held.superseded_by, held.valid_to) == (paris.memory.id, _year(2025, 6))
    assert current(container, brain, MemoryType.fact) == ["the Acme database lives in Paris"]
    assert _true_then(container, brain, _year(2025, 9)) == ["the Acme database lives in Paris"]
    acme = MemoryQuery(types=("fact",), client_ids=("acme",), at_time=_year(2025, 9), count_access=False)
    assert container.memories.search(brain, "where does the Acme database live", acme) == []


def test_unread_medium_and_low_events_expire_after_thirty_days(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    low = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="low event", importance=0.5)
    )
    read = container.memories.store(brain, MemoryInput(type=MemoryType.event, content="read event"))
    high = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="high event", importance=0.85)
    )
    kept_fact = container.memories.store(brain, fact("a fact never expires"))
    assert container.search.access is not None
    container.search.access.saw(brain.id, [read.memory.id])
    clock.advance(29 * 86_400)
    assert container.memories.expire_events(brain) == 0
    clock.advance(2 * 86_400)
    young = container.memories.store(brain, MemoryInput(type=MemoryType.event, content="young event"))

    assert container.memories.expire_events(brain) == 1
    assert container.memories.expire_events(brain) == 0  # already expired: nothing more
    expired = container.memories.record(brain, low.memory.id)
    assert expired.memory is not None and expired.memory.expired_at is not None
    for kept in (read, high, kept_fact, young):
        record = container.memories.record(brain, kept.memory.id)
        assert record.memory is not None and record.memory.current
    chunks = container.adapters.chunks.get_chunks(brain.id, low.memory.id)
    assert chunks and not chunks[0].current


def test_since_reads_the_time_range_newest_first(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    container.memories.store(brain, MemoryInput(type=MemoryType.event, content="old"))
    clock.advance(3600)
    cut = clock.now()
    names = [f"new {i}" for i in range(5)]
    for name in names:
        container.memories.store(brain, MemoryInput(type=MemoryType.event, content=name))

    got = container.memories.since(brain, cut, limit=100)
    capped = container.memories.since(brain, cut, limit=2)

    assert [container.memories.text(d) for d in got] == list(reversed(names))
    assert [container.memories.text(d) for d in capped] == ["new 4", "new 3"]


def test_eight_concurrent_writers_of_one_key_leave_exactly_one_current(
    container: Container, brain: Brain
) -> None:
    writers, rounds = 8, 2  # two rounds: each writer races again after its own commit
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def write(n: int) -> None:
        try:
            start.wait()
            for r in range(rounds):
                container.memories.store(brain, fact(f"version {n}.{r} of the stack"))
                container.memories.store(
                    brain,
                    MemoryInput(type=MemoryType.status, content=f"deploy {n}.{r}", subject="deploy"),
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    facts = [d for d in container.memories.of_type(brain, [MemoryType.fact]) if d.deleted_at is None]
    statuses = [d for d in container.memories.of_type(brain, [MemoryType.status]) if d.deleted_at is None]
    assert len(facts) == len(statuses) == writers * rounds  # nothing lost
    for docs in (facts, statuses):
        live = [d for d in docs if d.memory is not None and d.memory.current]
        assert len(live) == 1
        # Every other memory was superseded by exactly one successor: one chain, no fork.
        successors = [d.memory.superseded_by for d in docs if d.memory is not None and d.memory.superseded_by]
        assert len(successors) == len(set(successors)) == len(docs) - 1
    # The index agrees: exactly one fact's chunks are current.
    chunks = [c for d in facts for c in container.adapters.chunks.get_chunks(brain.id, d.id)]
    assert sum(1 for c in chunks if c.current) == 1


def test_the_consolidation_job_expires_stale_events(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    stale = container.memories.store(brain, MemoryInput(type=MemoryType.event, content="nobody read this"))
    clock.advance(31 * 86_400)

    job = container.consolidation.queue(brain)
    container.jobs.run_pending()
    done = container.jobs.status(job.id)

    assert done.result is not None and done.result["prune"]["events_expired"] == 1
    record = container.memories.record(brain, stale.memory.id)
    assert record.memory is not None and record.memory.expired_at is not None


def test_the_memory_count_is_kept_fresh_and_a_full_count_cached_for_at_most_its_max_age(
    container: Container, brain: Brain
) -> None:
    container.memories.store(brain, MemoryInput(type=MemoryType.event, content="one"))
    assert container.memories.count(brain)[0] == 1
    container.memories.store(brain, MemoryInput(type=MemoryType.event, content="two"))
    assert container.memories.count(brain) == (2, 2)  # the kept counts: each short memory one chunk

    # counts grown past a record (services/documents/memory_counts.py): every record is read
    container.documents.repo.records.put(Item(documents_pk(brain.id), "memory-counts", data={"over": True}))
    assert container.memories.count(brain) == (2, 2)
    container.memories.store(brain, MemoryInput(type=MemoryType.event, content="three"))
    assert container.memories.count(brain)[0] == 2  # within 30 s: the cached total
    total, chunks = container.memories.count(brain, max_age_s=0)
    assert total == 3 and chunks == 3


def _year(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _acme_line(container: Container, brain: Brain) -> dict[str, str]:
    """The Acme database's line, by city: Frankfurt from 2024, Dublin from 2025, Oslo from 2026."""
    return {
        city: container.memories.store(
            brain, fact(f"the Acme database lives in {city}", key="acme-db", valid_from=_year(year))
        ).memory.id
        for year, city in ((2024, "Frankfurt"), (2025, "Dublin"), (2026, "Oslo"))
    }


def _true_then(container: Container, brain: Brain, when: datetime) -> list[str]:
    hits = container.memories.search(
        brain,
        "where does the Acme database live",
        MemoryQuery(types=("fact",), at_time=when, count_access=False),
    )
    return [container.memories.text(h.memory) for h in hits]


def _each_year_has_its_value(container: Container, brain: Brain, values: dict[int, str]) -> None:
    """The values of 2024, 2025 and 2026: each the one true in its year, 2026's the current one."""
    for year, month in ((2024, 6), (2025, 6), (2026, 2)):
        assert _true_then(container, brain, _year(year, month)) == [values[year]]
    assert current(container, brain, MemoryType.fact) == [values[2026]]


def test_a_superseded_fact_was_true_until_its_successor_became_true(
    container: Container, brain: Brain
) -> None:
    values = {2024: "the Acme database lives in Frankfurt", 2025: "the Acme database lives in Dublin",
              2026: "the Acme database lives in Oslo"}  # fmt: skip
    ids = {}
    for year, text in values.items():
        ids[year] = container.memories.store(
            brain, fact(text, key="acme-db", valid_from=_year(year))
        ).memory.id
    for year in (2024, 2025):  # each ends where the next begins, not when it was superseded (START)
        old = container.memories.record(brain, ids[year]).memory
        assert old is not None and old.valid_to == _year(year + 1) and old.superseded_by == ids[year + 1]

    _each_year_has_its_value(container, brain, values)
    assert _true_then(container, brain, _year(2023, 6)) == []  # before any was true


def test_a_fact_that_was_true_before_the_current_one_is_stored_as_its_history(
    container: Container, brain: Brain
) -> None:
    now = container.memories.store(
        brain, fact("Acme bills in euros", key="acme-currency", valid_from=_year(2025))
    )
    before = container.memories.store(
        brain, fact("Acme billed in pounds", key="acme-currency", valid_from=_year(2022))
    )
    assert before.supersedes is None and not before.deduplicated
    past = before.memory.memory
    assert past is not None and past.superseded_by == now.memory.id and past.valid_to == _year(2025)
    assert current(container, brain, MemoryType.fact) == ["Acme bills in euros"]
    later = container.memories.store(brain, fact("Acme bills in dollars", key="acme-currency"))
    assert later.supersedes == now.memory.id  # the line still runs through the current one


def test_known_at_answers_what_cairn_held_then(container: Container, brain: Brain, clock: FakeClock) -> None:
    recorded = {}
    for day, city in ((1, "Frankfurt"), (10, "Dublin"), (20, "Oslo")):
        clock.current = START + timedelta(days=day)
        stored = container.memories.store(brain, fact(f"the Acme database lives in {city}", key="acme-db"))
        recorded[city] = stored.memory.id

    def held(day: int, **kw: object) -> list[str]:
        q = MemoryQuery(types=("fact",), known_at=START + timedelta(days=day), count_access=False, **kw)  # type: ignore[arg-type]
        return [h.memory.id for h in container.memories.search(brain, "where does the Acme database live", q)]

    assert held(0) == []  # nothing recorded yet
    assert held(5) == [recorded["Frankfurt"]]
    assert held(15) == [recorded["Dublin"]]  # Frankfurt was superseded on day 10
    assert held(25) == [recorded["Oslo"]]
    assert sorted(held(15, include_superseded=True)) == sorted([recorded["Frankfurt"], recorded["Dublin"]])
    # beside validity: on day 15 Cairn held Frankfurt true from day 1 to 10 ...
    assert held(15, at_time=START + timedelta(days=5)) == [recorded["Frankfurt"]]
    # ... and on day 5 it held Frankfurt true with no end, so true on day 15 as well
    assert held(5, at_time=START + timedelta(days=15)) == [recorded["Frankfurt"]]
    assert held(25, at_time=START + timedelta(days=15)) == [recorded["Dublin"]]


def test_values_stored_out_of_order_give_one_value_at_each_time(container: Container, brain: Brain) -> None:
    # Given a key's values stored latest first, then the earliest, then the one between
    values = {2026: "the Acme database lives in Oslo", 2024: "the Acme database lives in Frankfurt",
              2025: "the Acme database lives in Dublin"}  # fmt: skip
    for year, text in values.items():
        container.memories.store(brain, fact(text, key="acme-db", valid_from=_year(year)))
    # Then each time has the one value that began last by then, the current one stays current
    _each_year_has_its_value(container, brain, values)


def test_history_stored_out_of_order_takes_its_place_in_the_line(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    ids = {}
    for year, client in ((2026, "beta"), (2024, "alpha"), (2025, "beta")):
        clock.current += timedelta(hours=1)
        text = f"the Acme database lives in {year}-land"
        stored = container.memories.store(
            brain, replace(fact(text, key="acme-db", valid_from=_year(year)), client_id=client)
        )
        ids[year] = stored.memory.id
    line = {year: container.memories.record(brain, i) for year, i in ids.items()}
    # the chain runs in order of beginning, each value ending where the next begins
    assert [line[y].metadata.get("supersedes") for y in (2026, 2025, 2024)] == [ids[2025], ids[2024], None]
    for year in (2024, 2025):
        m = line[year].memory
        assert m is not None and (m.superseded_by, m.valid_to) == (ids[year + 1], _year(year + 1))
    # so a filter that hides 2025's value finds nothing true in mid-2025, not 2024's
    alpha = MemoryQuery(types=("fact",), client_ids=("alpha",), at_time=_year(2025, 6), count_access=False)
    assert container.memories.search(brain, "where does the Acme database live", alpha) == []
    # and before 2025's value was recorded, Cairn held 2024's true until 2026
    before = MemoryQuery(
        types=("fact",), known_at=clock.current - timedelta(minutes=30), at_time=_year(2025, 6)
    )
    held = container.memories.search(brain, "where does the Acme database live", before)
    assert [h.memory.id for h in held] == [ids[2024]]


def test_a_value_without_a_start_is_history_to_a_change_scheduled_ahead(
    container: Container, brain: Brain
) -> None:
    ahead = container.memories.store(
        brain, fact("the Acme database will live in Oslo", key="acme-db", valid_from=_year(2030))
    )
    now = container.memories.store(brain, fact("the Acme database lives in Dublin", key="acme-db"))
    assert now.supersedes is None
    held = now.memory.memory
    assert held is not None and held.superseded_by == ahead.memory.id
    assert held.valid_from is not None and held.valid_from < _year(2027)  # true from now ...
    assert held.valid_to == _year(2030)  # ... until the move
    assert _true_then(container, brain, _year(2029)) == ["the Acme database lives in Dublin"]
    assert _true_then(container, brain, _year(2031)) == ["the Acme database will live in Oslo"]
    assert current(container, brain, MemoryType.fact) == ["the Acme database will live in Oslo"]


def test_a_value_that_ended_already_never_displaces_the_current_one(
    container: Container, brain: Brain
) -> None:
    container.memories.store(
        brain, fact("the Acme database lives in Dublin", key="acme-db", valid_from=_year(2025))
    )
    past = container.memories.store(
        brain, fact("the Acme database lived in Lisbon", key="acme-db", valid_to=_year(2020))
    ).memory.memory
    assert past is not None and past.valid_from is None and past.valid_to == _year(2020)  # start unknown
    assert current(container, brain, MemoryType.fact) == ["the Acme database lives in Dublin"]
    assert _true_then(container, brain, _year(2019)) == ["the Acme database lived in Lisbon"]
    assert _true_then(container, brain, _year(2026)) == ["the Acme database lives in Dublin"]


def test_a_value_that_ended_already_takes_its_place_in_the_line_by_its_end(
    container: Container, brain: Brain
) -> None:
    """A value with only a past `valid_to` has no known start: it goes before the first value that
    began before its end, its end cut at that one's start, beginning where the value before ended;
    stated starts and other values' ends stay (it was stored [-inf, valid_to), unlinked, and
    overlapped every value that began before its end: `at_time` found two values, or one by client)."""
    ids = _acme_line(container, brain)
    paris = container.memories.store(
        brain,
        replace(fact("the Acme database lived in Paris", key="acme-db", valid_to=_year(2024, 6)),
                client_id="globex"),
    ).memory  # fmt: skip
    held = paris.memory
    assert held is not None and (held.valid_from, held.valid_to) == (None, _year(2024))
    assert held.superseded_by == ids["Frankfurt"]
    assert container.memories.record(brain, ids["Frankfurt"]).metadata.get(SUPERSEDES) == paris.id
    # no room for it between two values whose starts are stated: true at no time, in its place
    lyon = container.memories.store(
        brain, fact("the Acme database lived in Lyon", key="acme-db", valid_to=_year(2025, 6))
    ).memory
    assert lyon.memory is not None and (lyon.memory.valid_from, lyon.memory.valid_to) == (_year(2025),) * 2
    assert lyon.memory.superseded_by == ids["Dublin"] and lyon.metadata.get(SUPERSEDES) == ids["Frankfurt"]

    order = [paris.id, ids["Frankfurt"], lyon.id, ids["Dublin"], ids["Oslo"]]
    line = [container.memories.record(brain, i) for i in order]
    assert [d.memory.superseded_by for d in line if d.memory] == [*order[1:], None]
    ends = [(d.memory.valid_from, d.memory.valid_to) for d in line if d.memory]
    assert ends[1] == (_year(2024), _year(2025))  # Frankfurt's stated start and its end stay
    for (_, end), (start, _) in pairwise(ends):  # no two values overlap
        assert end is not None and start is not None and end <= start
    # one value at each time, and a client filter finds it or nothing
    for when, city, client in ((_year(2023, 6), "Paris", "globex"), (_year(2024, 3), "Frankfurt", "acme")):
        assert [t.rsplit(" ", 1)[-1] for t in _true_then(container, brain, when)] == [city]
        for asked in ("acme", "globex"):
            q = MemoryQuery(types=("fact",), client_ids=(asked,), at_time=when, count_access=False)
            hits = container.memories.search(brain, "where does the Acme database live", q)
            assert [h.memory.id for h in hits] == ([ids.get(city, paris.id)] if asked == client else [])


def test_known_at_finds_a_memory_at_the_millisecond_it_shows(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    clock.tick = timedelta(microseconds=1)
    clock.current = START + timedelta(microseconds=123_456)
    stored = container.memories.store(brain, fact("the Acme database lives in Oslo", key="acme-db"))
    created = stored.memory.created_at
    assert created.microsecond % 1000 != 0  # a creation time between two milliseconds
    shown = created.replace(microsecond=created.microsecond // 1000 * 1000)  # as the surfaces show it

    def held(when: datetime) -> list[str]:
        q = MemoryQuery(types=("fact",), known_at=when, count_access=False)
        return [h.memory.id for h in container.memories.search(brain, "where does the Acme database live", q)]

    assert held(shown) == [stored.memory.id]
    assert held(created) == [stored.memory.id]
    assert held(shown - timedelta(milliseconds=1)) == []


def test_known_at_with_at_time_keeps_an_end_that_was_recorded(container: Container, brain: Brain) -> None:
    container.memories.store(
        brain,
        fact("the Acme database lives in Oslo", key="acme-db", valid_from=_year(2024), valid_to=_year(2025)),
    )

    def held(when: datetime) -> list[str]:
        q = MemoryQuery(types=("fact",), known_at=START + timedelta(days=1), at_time=when, count_access=False)
        return [
            container.memories.text(h.memory) for h in container.memories.search(brain, "Acme database", q)
        ]

    assert held(_year(2024, 6)) == ["the Acme database lives in Oslo"]
    assert held(_year(2025, 6)) == []  # recorded as ending in 2025: never held true after it


def test_known_at_looks_past_many_superseded_values(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    # Given 60 superseded values that match the question better than the current one
    last = superseded_line(container, brain, clock, 60, "the Acme database lives in datacenter number")
    q = MemoryQuery(types=("fact",), known_at=clock.current, count_access=False, limit=1)
    # Then what Cairn held at known_at is found however deep the index ranks it
    hits = container.memories.search(brain, "the Acme database lives in datacenter number", q)
    assert [h.memory.id for h in hits] == [last]
