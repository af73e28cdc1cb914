"""Eight concurrent appenders: every message lands exactly once, numbered without gaps.

Run on the in-memory fake and on the SQLite record store, both of which let a read and the
following conditional write interleave with other threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.services.repositories import SessionRepository
from tests.fakes.container import fake_adapters

WRITERS = 8
EACH = 25


@pytest.fixture(params=["memory", "sqlite"])
def container(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    adapters = fake_adapters()
    sqlite = SqliteRecordStore(tmp_path / "records.sqlite3") if request.param == "sqlite" else None
    if sqlite is not None:
        adapters.records = sqlite
    yield build_container(Settings(data_dir=tmp_path), adapters)
    if sqlite is not None:
        sqlite.close()


def test_concurrent_appends_lose_nothing(container: Container) -> None:
    brain = container.brains.create("Race", slug="race")
    session = container.sessions.create(brain)
    barrier = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            barrier.wait()
            for i in range(EACH):
                container.sessions.append(brain, session.id, "user", f"w{n}-{i}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

    _, messages = container.sessions.get(brain, session.id)
    contents = [m.content for m in messages]
    assert sorted(contents) == sorted(f"w{n}-{i}" for n in range(WRITERS) for i in range(EACH))
    assert len({m.id for m in messages}) == WRITERS * EACH
    for n in range(WRITERS):  # each writer's own messages keep their order
        mine = [c for c in contents if c.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in range(EACH)]
    stored = SessionRepository(container.adapters.records).get(session.id)
    assert stored is not None and stored.message_count == WRITERS * EACH


def test_close_racing_appends_never_loses_an_acknowledged_message(container: Container) -> None:
    brain = container.brains.create("Close race", slug="close-race")
    session = container.sessions.create(brain)
    acknowledged: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(WRITERS + 1)

    def writer(n: int) -> None:
        barrier.wait()
        for i in range(EACH):
            try:
                m = container.sessions.append(brain, session.id, "user", f"w{n}-{i}")
            except Exception:
                return
            with lock:
                acknowledged.append(m.content)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    barrier.wait()
    container.sessions.close(brain, session.id)
    for t in threads:
        t.join()
    _, messages = container.sessions.get(brain, session.id)
    assert sorted(m.content for m in messages) == sorted(acknowledged)
