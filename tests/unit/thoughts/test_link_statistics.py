"""A memory's row counts exactly the waypoint links it has (services/thoughtmcp/waypoints.py): new
content drops its links from both ends' statistics before it is linked again, and a hard forget
leaves the other end counting none of its links."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.services.documents.inputs import BatchOp
from cairn.services.thoughtmcp.models import NewMemory
from tests.fakes.container import fake_container

TEXT = "The billing service deploys every Tuesday after the payments regression suite passes"


def test_each_row_counts_the_links_it_has_after_new_content_and_a_forget(tmp_path: Path) -> None:
    c = fake_container(tmp_path)
    brain = c.brains.create("thoughts")
    a = c.thoughts.remember(brain, NewMemory(TEXT, "alice", "s1", "semantic"))["memoryId"]
    b = c.thoughts.remember(brain, NewMemory(TEXT + " on staging", "alice", "s1", "semantic"))["memoryId"]

    c.thoughts.update(brain, b, "alice", content=TEXT + " on staging now")

    links = c.thoughts.links.outgoing(brain.id, b)
    assert [link.target_id for link in links] == [a]
    rows = c.thoughts.rows.get(brain.id, "alice", [a, b])
    assert {m: (r.link_count, r.link_sum) for m, r in rows.items()} == {
        a: (2, pytest.approx(2 * links[0].weight)),
        b: (2, pytest.approx(2 * links[0].weight)),
    }

    c.thoughts.forget(brain, b, "alice")

    row = c.thoughts.rows.get(brain.id, "alice", [a])[a]
    assert (row.link_count, row.link_sum) == (0, 0.0)
    assert c.thoughts.links.outgoing(brain.id, a) == []


@pytest.mark.parametrize("removal", ["delete", "batch delete", "erase"])
def test_a_memory_removed_through_another_surface_takes_its_links_from_the_other_end(
    tmp_path: Path, removal: str
) -> None:
    c = fake_container(tmp_path)
    brain = c.brains.create("thoughts")
    a = c.thoughts.remember(brain, NewMemory(TEXT, "alice", "s1", "semantic"))["memoryId"]
    b = c.thoughts.remember(brain, NewMemory(TEXT + " on staging", "alice", "s1", "semantic"))["memoryId"]
    assert c.thoughts.rows.get(brain.id, "alice", [a])[a].link_count == 2
    path = c.documents.repo.get_by_id(b).path  # type: ignore[union-attr]

    if removal == "delete":  # REST's DELETE, the web UI's
        c.documents.delete(brain, path)
    elif removal == "batch delete":
        c.documents.batch(brain, [BatchOp(type="delete", path=path)])
    else:
        c.documents.erase(brain, path)

    row = c.thoughts.rows.get(brain.id, "alice", [a])[a]
    assert (row.link_count, row.link_sum) == (0, 0.0)
    assert c.thoughts.links.outgoing(brain.id, a) == [] and c.thoughts.links.outgoing(brain.id, b) == []
