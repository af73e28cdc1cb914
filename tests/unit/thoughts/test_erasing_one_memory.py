"""Removing ONE ThoughtMCP memory, whichever way (a hard forget, the store protocol's erase or
delete of its path, a subject erasure that selects only it), leaves no waypoint link naming it
and no statistics counting one on the memory at the other end (its row's link count and weight
sum, which recall's linkWeight reads). On the fakes, SQLite and DynamoDB under moto."""

from __future__ import annotations

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from tests.support.thought_links import adapters, c, counted, remembered, stats

__all__ = ["adapters", "c"]  # fixtures

TEXT = "The lighthouse keeper logged the lamp lit at six and the fog horn tested at seven."
REMOVALS = ("forget", "erase path", "delete path", "erase agent scope")


def named(c: Container, brain: Brain, memory_id: str) -> list[str]:
    """Every link naming the memory, from either end."""
    return [
        *(f"{lnk.source_id}->{lnk.target_id}" for lnk in c.thoughts.links.outgoing(brain.id, memory_id)),
        *(f"{lnk.source_id}->{lnk.target_id}" for lnk in c.thoughts.links.incoming(brain.id, memory_id)),
    ]


@pytest.mark.parametrize("removal", REMOVALS)
def test_one_memory_removed_leaves_no_link_and_no_count_on_the_other_end(c: Container, removal: str) -> None:
    brain = c.brains.create("Thoughts", slug="thoughts")
    kept = remembered(c, brain, TEXT)
    gone = remembered(c, brain, TEXT + " Again.")
    third = remembered(c, brain, TEXT + " Once more, at dusk.")
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
