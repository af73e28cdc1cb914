"""JobStore.claim contract: both stores (in-memory fake, SQLite) share one fair order between
principals and honour the per-principal cap the worker threads claim with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.adapters.local.job_rows import JobRow, JobStore
from cairn.adapters.local.sqlite_jobs import SqliteJobStore
from tests.fakes.clock import FakeClock
from tests.fakes.jobs import MemoryJobStore

LEASE_S = 60.0


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JobStore]:
    made: JobStore = (
        MemoryJobStore() if request.param == "memory" else SqliteJobStore(tmp_path / "jobs.sqlite3")
    )
    yield made
    made.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def queue(store: JobStore, clock: FakeClock, principal: str | None, name: str) -> str:
    return store.insert(JobRow.new("work", {"name": name}, clock.now(), principal=principal)).id


def claim(store: JobStore, clock: FakeClock, per_principal: int | None = None) -> str | None:
    now = clock.now()
    # Uncapped, the call is the one the store has always taken.
    capped = {} if per_principal is None else {"per_principal": per_principal}
    row = store.claim(now, now.timestamp() + LEASE_S, **capped)
    return None if row is None else row.input["name"]


def test_the_principal_with_fewer_running_jobs_goes_first(store: JobStore, clock: FakeClock) -> None:
    for name in ("a1", "a2", "a3"):
        queue(store, clock, "alice", name)
    assert claim(store, clock) == "a1"  # nobody runs anything: the oldest
    queue(store, clock, "bob", "b1")

    assert claim(store, clock) == "b1"  # alice holds one live lease, bob none
    assert claim(store, clock) == "a2"  # one each: the oldest


def test_a_principal_at_the_cap_waits_until_its_running_job_ends_or_its_lease_expires(
    store: JobStore, clock: FakeClock
) -> None:
    queue(store, clock, "alice", "a1")
    a1 = claim(store, clock, per_principal=1)
    queue(store, clock, "alice", "a2")
    queue(store, clock, "bob", "b1")
    assert a1 == "a1"

    assert claim(store, clock, per_principal=1) == "b1"
    assert claim(store, clock, per_principal=1) is None  # both at the cap; a2 waits
    assert claim(store, clock, per_principal=2) == "a2"  # a higher cap lets alice's second one go

    clock.advance(LEASE_S + 1)  # every lease ran out: nobody is running anything
    assert claim(store, clock, per_principal=1) == "a1"  # an expired lease counts for no one
    assert claim(store, clock, per_principal=1) == "b1"
    assert claim(store, clock, per_principal=1) is None  # a2's lease ran out too, but a1 holds alice's


def test_jobs_without_a_principal_are_one_group(store: JobStore, clock: FakeClock) -> None:
    queue(store, clock, None, "n1")
    queue(store, clock, None, "n2")
    queue(store, clock, "carol", "c1")
    queue(store, clock, None, "n3")
    assert claim(store, clock, per_principal=1) == "n1"

    assert claim(store, clock, per_principal=1) == "c1"  # the principal-less group holds one
    assert claim(store, clock, per_principal=1) is None  # n2, n3 wait for n1; c1 holds carol's
    assert claim(store, clock) == "n2"  # without a cap: the oldest of the least held


def test_a_claim_for_one_job_takes_that_one_or_none(store: JobStore, clock: FakeClock) -> None:
    queue(store, clock, "alice", "a1")
    b1 = queue(store, clock, "bob", "b1")
    now = clock.now()
    row = store.claim(now, now.timestamp() + LEASE_S, job_id=b1)
    assert row is not None and row.input["name"] == "b1"  # not the oldest: the one asked for
    assert store.claim(now, now.timestamp() + LEASE_S, job_id=b1) is None  # running: not claimable
    assert store.claim(now, now.timestamp() + LEASE_S, job_id="job_none") is None
    assert claim(store, clock) == "a1"  # the other was left queued


def test_a_running_job_with_no_lease_time_is_not_claimable_and_holds_no_share(
    store: JobStore, clock: FakeClock
) -> None:
    a1 = queue(store, clock, "alice", "a1")
    now = clock.now()
    running = store.claim(now, now.timestamp() + LEASE_S)
    assert running is not None and running.id == a1
    assert store.update(a1, running.attempts, now, {"lease_until": None})
    queue(store, clock, "alice", "a2")

    clock.advance(LEASE_S + 1)  # long past any lease it had
    now = clock.now()
    assert store.claim(now, now.timestamp() + LEASE_S, job_id=a1) is None  # no lease has run out
    assert claim(store, clock, per_principal=1) == "a2"  # and it counts as no live lease of alice's
    assert claim(store, clock) is None
    left = store.get(a1)
    assert left is not None and left.attempts == 1 and left.lease_until is None
