"""ThoughtMCP's waypoint links under test on the three shapes a core capability is tested on: the
fixtures `adapters` (the fakes, the embedded store, the AWS adapters) and `c` (a process on them),
which a test module takes by importing them, and what its tests read of user `ada`'s memories and
their links."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import Adapters, Container
from cairn.domain.models import Brain
from cairn.ports.records import Delete, Put, RecordStore
from cairn.services.thoughtmcp.models import NewMemory
from tests.support.shapes import adapters_for, process

ALL_SHAPES = ("fakes", "embedded", "aws")
USER = "ada"


@pytest.fixture(params=ALL_SHAPES)
def adapters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapters]:
    with adapters_for(request.param, request, tmp_path) as built:
        yield built


@pytest.fixture
def c(adapters: Adapters, tmp_path: Path) -> Container:
    return process(adapters, tmp_path)


def remembered(c: Container, brain: Brain, text: str) -> str:
    """The id of a new memory of USER's, linked as ThoughtMCP's remember links it."""
    answer = c.thoughts.remember(
        brain, NewMemory(content=text, user_id=USER, session_id="s1", sector="semantic")
    )
    return str(answer["memoryId"])


def linked(c: Container, brain: Brain, memory_id: str) -> set[str]:
    """The memories linked to this one, either way."""
    out = {link.target_id for link in c.thoughts.links.outgoing(brain.id, memory_id)}
    return out | {link.source_id for link in c.thoughts.links.incoming(brain.id, memory_id)}


def stats(c: Container, brain: Brain, memory_id: str) -> tuple[int, float]:
    """The link statistics the memory's row keeps."""
    row = c.thoughts.rows.get(brain.id, USER, [memory_id])[memory_id]
    return row.link_count, round(row.link_sum, 6)


def counted(c: Container, brain: Brain, memory_id: str) -> tuple[int, float]:
    """What the row's statistics must say: two per link, both directions touching each end."""
    links = c.thoughts.links.outgoing(brain.id, memory_id)
    return 2 * len(links), round(sum(2 * link.weight for link in links), 6)


def commits_of(monkeypatch: pytest.MonkeyPatch, records: RecordStore) -> list[list[Put | Delete]]:
    """Every transaction the record store commits from now on, its ops in order."""
    commits: list[list[Put | Delete]] = []
    transact = records.transact

    def watched(ops: Sequence[Put | Delete]) -> Any:
        commits.append(list(ops))
        return transact(ops)

    monkeypatch.setattr(records, "transact", watched)
    return commits
