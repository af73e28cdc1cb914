"""Removing ONE ThoughtMCP memory, whichever way (a hard forget, the store protocol's erase or
delete of its path, a subject erasure that selects only it), leaves no waypoint link naming it
and no statistics counting one on the memory at the other end (its row's link count and weight
sum, which recall's linkWeight reads). On the fakes, SQLite and DynamoDB under moto."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.thoughtmcp.models import NewMemory
from tests.support.shapes import adapters_for, process

TEXT = "The lighthouse keeper logged the lamp lit at six and the fog horn tested at seven."
REMOVALS = ("forget", "erase path", "delete path", "erase agent scope")


@pytest.fixture(params=("fakes", "embedded", "aws"))
def c(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with adapters_for(request.param, request, tmp_path) as adapters:
        yield process(adapters, tmp_path)


def remember(c: Container, brain: Brain, text: str) -> str:
    answer = c.thoughts.remember(
        brain, NewMemory(content=text, user_id="ada", session_id="s1", sector="semantic")
    )
    return str(answer["memoryId"])


def stats(c: Container, brain: Brain, memory_id: str) -> tuple[int, float]:
    row = c.thoughts.rows.get(brain.id, "ada", [memory_id])[memory_id]
    return row.link_count, round(row.link_sum, 6)


def counted(c: Container, brain: Brain, memory_id: str) -> tuple[int, float]:
    """What the row's statistics must say: two per link, both directions touching each end."""
    links = c.thoughts.links.outgoing(brain.id, memory_id)
    return 2 * len(links), round(sum(2 * link.weight for link in links), 6)


def named(c: Container, brain: Brain, memory_id: str) -> list[str]:
    """Every link naming the memory, from either end."""
    return [
        *(f"{lnk.source_id}->{lnk.target_id}" for lnk in c.thoughts.links.outgoing(brain.id, memory_id)),
        *(f"{lnk.source_id}->{lnk.target_id}" for lnk in c.thoughts.links.incoming(brain.id, memory_id)),
    ]


@pytest.mark.parametrize("removal", REMOVALS)
def test_one_memory_removed_leaves_no_link_and_no_count_on_the_other_end(c: Container, removal: str) -> None:
    brain = c.brains.create("Thoughts", slug="thoughts")
    kept = remember(c, brain, TEXT)
    gone = remember(c, brain, TEXT + " Again.")
    third = remember(c, brain, TEXT + " Once more, at dusk.")
    assert gone in {lnk.target_id for lnk in c.thoughts.links.outgoing(brain.id, kept)}
    assert stats(c, brain, kept)[0] >= 2
    doc = c.documents.repo.get_by_id(gone)
    assert doc is not None

    if removal == "forget":
        c.thoughts.forget(brain, gone, "ada")
    elif removal == "erase path":
        c.documents.erase(brain, doc.path)
    elif removal == "delete path":
        c.documents.delete(brain, doc.path)
    else:  # moved under an agent's scope through the store protocol, then that scope erased
        c.documents.rename(brain, doc.path, "memory/agent/scout/moved.md")
        receipt = c.erasure.erase("agent_scope", "scout")
        assert receipt.removed["documents"] == 1

    assert c.thoughts.rows.get(brain.id, "ada", [gone]) == {}
    assert named(c, brain, gone) == []
    for survivor in (kept, third):
        assert all(gone not in link for link in named(c, brain, survivor))
        assert stats(c, brain, survivor) == counted(c, brain, survivor)
