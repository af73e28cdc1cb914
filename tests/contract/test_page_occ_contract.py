"""Versioned writes (DocumentService.write_at_version, gbrain's brain_put) on every record store:
the in-memory fake, SQLite and DynamoDB under moto.

Each "process" below is a container of its own over the same stores: its own DocumentService,
so its own path locks. What keeps writers apart is then only the record store's conditional
transaction, as between the processes (or Lambda invocations) of a real deployment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.errors import VersionConflict
from cairn.domain.models import Brain
from cairn.ports.records import RecordStore
from cairn.services.gbrain.pages import PageService
from tests.fakes.container import fake_adapters

WRITERS = 8


@pytest.fixture
def processes(records: RecordStore, tmp_path: Path) -> list[Container]:
    adapters = replace(fake_adapters(), records=records)
    settings = Settings(data_dir=tmp_path / "data")
    return [build_container(settings, adapters) for _ in range(WRITERS)]


@pytest.fixture
def brain(processes: list[Container]) -> Brain:
    return processes[0].brains.create("Pages", slug="pages")


def test_a_versioned_write_creates_without_a_version_and_updates_only_at_the_current_one(
    processes: list[Container], brain: Brain
) -> None:
    docs = processes[0].documents
    created = docs.write_at_version(brain, "people/alice", b"one", expected_version=None)
    assert created.created and created.document.version == 1

    with pytest.raises(VersionConflict) as exists:
        docs.write_at_version(brain, "people/alice", b"two", expected_version=None)
    assert (exists.value.current_version, exists.value.expected_version) == (1, None)

    assert docs.write_at_version(brain, "people/alice", b"two", expected_version=1).document.version == 2
    with pytest.raises(VersionConflict) as stale:
        docs.write_at_version(brain, "people/alice", b"three", expected_version=1)
    assert (stale.value.current_version, stale.value.expected_version) == (2, 1)
    with pytest.raises(VersionConflict) as absent:
        docs.write_at_version(brain, "people/bob", b"x", expected_version=1)
    assert absent.value.current_version is None
    assert docs.read(brain, "people/alice") == b"two"

    # a deleted document is absent: only a create brings it back (its record's count goes on)
    docs.delete(brain, "people/alice")
    with pytest.raises(VersionConflict) as gone:
        docs.write_at_version(brain, "people/alice", b"back", expected_version=3)
    assert gone.value.current_version is None
    assert docs.write_at_version(brain, "people/alice", b"back", expected_version=None).document.version == 4


def test_a_writer_that_loses_to_another_process_gets_the_winners_version(
    processes: list[Container], brain: Brain
) -> None:
    slow, fast = processes[0].documents, processes[1].documents
    slow.write_at_version(brain, "p", b"v1", expected_version=None)
    prepare = slow.indexer.prepare

    def interleaved(*args: object, **kwargs: object) -> object:
        # `slow` has read version 1 and holds its own lock; the other process commits first
        slow.indexer.prepare = prepare  # type: ignore[method-assign]
        fast.write_at_version(brain, "p", b"fast", expected_version=1)
        return prepare(*args, **kwargs)  # type: ignore[arg-type]

    slow.indexer.prepare = interleaved  # type: ignore[method-assign,assignment]
    with pytest.raises(VersionConflict) as lost:
        slow.write_at_version(brain, "p", b"slow", expected_version=1)
    assert (lost.value.current_version, lost.value.expected_version) == (2, 1)
    assert slow.read(brain, "p") == b"fast"
    assert slow.get(brain, "p").version == 2


def _race(calls: list[Callable[[], int]]) -> tuple[list[int], list[VersionConflict]]:
    """Run the calls together; the versions the winners got and the conflicts the losers got."""
    start = threading.Barrier(len(calls))
    won: list[int] = []
    lost: list[VersionConflict] = []
    errors: list[BaseException] = []

    def run(call: Callable[[], int]) -> None:
        try:
            start.wait()
            won.append(call())
        except VersionConflict as exc:
            lost.append(exc)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return won, lost


def test_eight_concurrent_page_writers_at_one_version_leave_one_winner_per_version(
    processes: list[Container], brain: Brain
) -> None:
    services = [PageService(c.brains, c.documents) for c in processes]

    def put(service: PageService, n: int, expected: int | None) -> Callable[[], int]:
        return lambda: service.put("people/alice", f"# Alice\n\nwriter {n}\n", expected).page.version

    won, lost = _race([put(s, n, None) for n, s in enumerate(services)])
    assert won == [1] and len(lost) == WRITERS - 1
    assert {(c.current_version, c.expected_version) for c in lost} == {(1, None)}

    for version in (1, 2, 3):
        won, lost = _race([put(s, n, version) for n, s in enumerate(services)])
        assert won == [version + 1]
        assert len(lost) == WRITERS - 1
        assert {(c.current_version, c.expected_version) for c in lost} == {(version + 1, version)}
        assert all(
            c.message == f"conflict: page updated elsewhere (current version: {version + 1})" for c in lost
        )

    page = services[0].get("people/alice")
    assert page.version == 4
    chunks = processes[0].adapters.chunks.get_chunks(brain.id, page.document.id)
    assert {c.text for c in chunks} == {page.text.compiled_truth}  # the index holds the winner's text
