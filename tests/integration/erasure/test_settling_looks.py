"""The sweep's looks at many brain deletions settling at once (services/erasure/settling.py), on
the fakes, the embedded store and the AWS adapters (DynamoDB and S3 under moto, the OpenSearch
fake): the records of every deletion are read in one scan a MAX_SCAN_PREFIXES prefixes, not one
scan each (on DynamoDB every scan reads the whole table), and a look that fails for one deletion
leaves the others' looks to run."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import Adapters, Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain
from cairn.ports.records import MAX_SCAN_PREFIXES, Item, RecordStore
from cairn.services.erasure.keyspace import brain_prefixes
from cairn.services.erasure.settling import SETTLE_S
from cairn.services.memory.entities import entities_pk
from cairn.services.repositories import documents_pk
from tests.fakes.clock import FakeClock
from tests.support.shapes import adapters_for, process

DELETIONS = 12


class Scans:
    """The record store, counting its scans."""

    def __init__(self, records: RecordStore) -> None:
        self.records = records
        self.calls = 0

    def scan(self, prefixes: Sequence[str], **kwargs: Any) -> Any:
        self.calls += 1
        return self.records.scan(prefixes, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.records, name)


class Refusing:
    """The blob store, refusing to delete under the prefixes named in `refused`."""

    def __init__(self, blobs: Any) -> None:
        self.blobs = blobs
        self.refused: set[str] = set()

    def delete_prefix(self, prefix: str) -> int:
        if any(prefix.startswith(r) for r in self.refused):
            raise Unavailable("the blob store refuses for now")
        result: int = self.blobs.delete_prefix(prefix)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.blobs, name)


@pytest.fixture(params=("fakes", "embedded", "aws"))
def adapters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapters]:
    with adapters_for(request.param, request, tmp_path) as made:
        yield replace(made, records=Scans(made.records), blobs=Refusing(made.blobs))


def deleted(c: Container, n: int) -> list[Brain]:
    brains = [c.brains.create(f"Brain {i}", slug=f"brain-{i}") for i in range(n)]
    for brain in brains:
        c.documents.write(brain, "notes/ledger.md", b"The harbour ledger is in the blue cabinet.")
        c.erasure.delete_brain(brain.id)
    return brains


def late_write(records: RecordStore, brain: Brain) -> list[tuple[str, str]]:
    """Records work that read the brain before its deletion writes after the purge."""
    keys = [(documents_pk(brain.id), "memory-counts"), (entities_pk(brain.id), "entity#late")]
    for pk, sk in keys:
        records.put(Item(pk, sk, {"late": True}))
    return keys


def test_the_looks_at_many_deletions_read_the_records_once_a_hundred_prefixes(
    adapters: Adapters, tmp_path: Path
) -> None:
    c = process(adapters, tmp_path)
    kept = c.brains.create("Kept", slug="kept")
    c.documents.write(kept, "notes/kept.md", b"This brain stays.")
    brains = deleted(c, DELETIONS)
    late = [key for brain in brains for key in late_write(adapters.records, brain)]
    scans = adapters.records
    assert isinstance(scans, Scans)
    scans.calls = 0

    removed = c.erasure.settle()

    # one scan of the sessions, then one a MAX_SCAN_PREFIXES of the brains' partitions (was one a brain)
    assert scans.calls <= 1 + math.ceil(DELETIONS * len(brain_prefixes(kept.id)) / MAX_SCAN_PREFIXES)
    assert removed >= len(late)
    assert adapters.records.get_many(late) == {}
    assert c.documents.repo.get(kept.id, "notes/kept.md") is not None
    assert len(list(c.erasure.settling.standing())) == DELETIONS  # within the settling time


def test_a_look_that_fails_leaves_the_other_deletions_looked_at(adapters: Adapters, tmp_path: Path) -> None:
    c = process(adapters, tmp_path)
    first, second = deleted(c, 2)
    late = {brain.id: late_write(adapters.records, brain) for brain in (first, second)}
    blobs, clock = adapters.blobs, adapters.clock
    assert isinstance(blobs, Refusing) and isinstance(clock, FakeClock)
    blobs.refused = {f"{first.id}/"}
    clock.advance(SETTLE_S + 1)

    c.erasure.settle()  # the first deletion's look fails: the second's still runs, its last

    assert [s.brain_id for s in c.erasure.settling.standing()] == [first.id]
    assert adapters.records.get_many(late[second.id]) == {}
    blobs.refused = set()
    c.erasure.settle()  # the next sweep looks at the first again
    assert list(c.erasure.settling.standing()) == []
    assert adapters.records.get_many(late[first.id]) == {}
