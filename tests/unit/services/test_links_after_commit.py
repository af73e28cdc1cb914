"""A memory's links are written after its own commit (ThoughtMCP's waypoint links, the entity
links of a typed memory), which marks them pending (services/links/pending.py). When the record
store refuses them (another process holding its writer lock past the wait: Unavailable) or the
writer stops between, the memory is stored and answered as stored, never as "nothing was
changed: try again", and the sweep finishes its links: one tick of a running server's sweeper,
or the next process opening the data. On the fakes, SQLite and DynamoDB."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cairn import faults
from cairn.bootstrap import Adapters, Container, index_sweeper
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain, Link, MemoryType
from cairn.entrypoints.cli.check import settle
from cairn.faults import InjectedFault
from cairn.ports.records import Delete, Put, RecordStore
from cairn.services.documents.index_sweeper import IndexSweeper
from cairn.services.links.pending import Finished
from cairn.services.memory.entities import MENTIONS
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.models import NewMemory
from tests.support.shapes import process
from tests.support.thought_links import adapters, c, commits_of

__all__ = ["adapters", "c"]  # fixtures

TEXT = "The lighthouse keeper logged the lamp lit at six and the fog horn tested at seven."
LATER = "We moved the billing service to PostgreSQL and Redis over the weekend."


class Locked:
    """The record store as another process holding its writer lock leaves it: reads answer,
    every transaction is refused."""

    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def transact(self, ops: Sequence[Put | Delete]) -> None:
        raise Unavailable("the record store was kept busy by another writer", retry_after_s=1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.records, name)


@pytest.fixture
def brain(c: Container) -> Brain:
    return c.brains.create("Links", slug="links")


def sweeper(c: Container) -> IndexSweeper:
    """The running server's sweeper, as the composition root builds it, with no grace."""
    built = index_sweeper(c)
    built.grace_s = 0.0
    return built


def refused(monkeypatch: pytest.MonkeyPatch, c: Container) -> list[int]:
    """Refuse the commits of ThoughtMCP's links and rows (those after a memory's own commit)."""
    calls: list[int] = []

    def locked(ops: Sequence[Put | Delete]) -> None:
        calls.append(len(ops))
        raise Unavailable("the record store was kept busy by another writer", retry_after_s=1)

    monkeypatch.setattr(c.thoughts.rows, "commit", locked)
    return calls


def waypoints(c: Container, brain: Brain, memory_id: str) -> dict[str, float]:
    """The memory's waypoint links, target -> weight, checked both ways."""
    out = {link.target_id: link.weight for link in c.thoughts.links.outgoing(brain.id, memory_id)}
    back = {link.source_id for link in c.thoughts.links.incoming(brain.id, memory_id)}
    assert set(out) == back
    return out


def row_stats(c: Container, brain: Brain, memory_id: str) -> tuple[int, float]:
    row = c.thoughts._rows(brain.id, "ada", [memory_id])[memory_id]
    return row.link_count, round(row.link_sum, 6)


def counted(c: Container, brain: Brain, memory_id: str) -> tuple[int, float]:
    """What a row's statistics should say: two per link, both directions touching each end."""
    links = waypoints(c, brain, memory_id)
    return 2 * len(links), round(sum(2 * w for w in links.values()), 6)


def remember(c: Container, brain: Brain, text: str) -> dict[str, Any]:
    return c.thoughts.remember(
        brain, NewMemory(content=text, user_id="ada", session_id="s1", sector="semantic")
    )


def test_waypoint_links_refused_are_answered_as_stored_and_made_by_one_sweeper_tick(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = remember(c, brain, TEXT)["memoryId"]
    calls = refused(monkeypatch, c)
    answer = remember(c, brain, TEXT + " Again.")  # Unavailable raised without the marks
    monkeypatch.undo()

    assert calls, "the second memory was similar enough to be linked"
    second = answer["memoryId"]
    assert answer["linksCreated"] == 0 and waypoints(c, brain, second) == {}
    assert [m.memory_id for m in c.pending_links.pending()] == [second]

    assert sweeper(c).tick() == 1

    assert set(waypoints(c, brain, second)) == {first}
    assert row_stats(c, brain, second) == counted(c, brain, second)
    assert row_stats(c, brain, first) == counted(c, brain, first)
    assert list(c.pending_links.pending()) == []
    before = row_stats(c, brain, second)
    assert c.thoughts.finish_links(brain, second, False) is Finished.LINKED  # a second settler: nothing twice
    assert row_stats(c, brain, second) == before and set(waypoints(c, brain, second)) == {first}


def test_waypoint_links_of_an_update_refused_are_remade_by_the_sweeper(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = remember(c, brain, TEXT)["memoryId"]
    second = remember(c, brain, TEXT + " Again.")["memoryId"]
    assert set(waypoints(c, brain, second)) == {first}
    refused(monkeypatch, c)
    answer = c.thoughts.update(brain, second, "ada", content=LATER)  # Unavailable without the marks
    monkeypatch.undo()
    assert answer["embeddingsRegenerated"] and answer["connectionsUpdated"] == 0
    assert set(waypoints(c, brain, second)) == {first}  # the old text's link, until the sweep

    sweeper(c).tick()

    assert list(c.pending_links.pending()) == []
    relinked = waypoints(c, brain, second)
    fresh = remember(c, brain, LATER)["memoryId"]  # what a memory of the new text gets now
    assert (first in relinked) == (first in waypoints(c, brain, fresh))
    assert row_stats(c, brain, second) == counted(c, brain, second)
    assert row_stats(c, brain, first) == counted(c, brain, first)


def test_a_forgotten_memory_s_pending_waypoint_links_are_dropped(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = remember(c, brain, TEXT)["memoryId"]
    refused(monkeypatch, c)
    second = remember(c, brain, TEXT + " Again.")["memoryId"]
    monkeypatch.undo()
    c.thoughts.forget(brain, second, "ada")  # between its commit and the sweep

    assert sweeper(c).tick() == 1
    assert list(c.pending_links.pending()) == []
    assert waypoints(c, brain, first) == {} and row_stats(c, brain, first) == (0, 0.0)


def test_cairn_check_tells_the_memories_linked_from_the_marks_only_dropped(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Opening the data: one memory left unlinked is linked; the marks of a memory forgotten
    since and of one whose brain was deleted since are only dropped, and said so apart."""
    other = c.brains.create("Gone", slug="gone")
    remember(c, brain, TEXT)
    remember(c, other, TEXT)
    refused(monkeypatch, c)
    kept = remember(c, brain, TEXT + " Again.")["memoryId"]
    forgotten = remember(c, brain, TEXT + " Once more.")["memoryId"]
    remember(c, other, TEXT + " Again.")
    monkeypatch.undo()
    c.thoughts.forget(brain, forgotten, "ada")
    c.erasure.delete_brain(other.id)
    assert len(list(c.pending_links.pending())) == 3
    capsys.readouterr()

    settle(c)

    said = capsys.readouterr().err
    assert "linked 1 memories a stopped process had written but not linked" in said
    assert "dropped the pending links of 2 memories deleted" in said
    assert waypoints(c, brain, kept) and list(c.pending_links.pending()) == []


def test_a_deleted_brain_s_pending_links_are_dropped(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(c, brain, TEXT)
    refused(monkeypatch, c)
    remember(c, brain, TEXT + " Again.")
    monkeypatch.undo()
    c.erasure.delete_brain(brain.id)

    sweeper(c).tick()
    assert list(c.pending_links.pending()) == []


def test_entity_links_refused_are_answered_as_stored_and_made_by_one_sweeper_tick(
    c: Container, brain: Brain
) -> None:
    repo = c.entities.repo
    memory = MemoryInput(type=MemoryType.event, content=TEXT, client_id="harbour-trust")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(repo, "records", Locked(repo.records))  # taken after the memory's commit
        stored = c.memories.store(brain, memory)  # Unavailable raised without the marks
    assert not stored.deduplicated
    assert c.entities.links.outgoing(brain.id, stored.memory.id, MENTIONS) == []

    assert sweeper(c).tick() == 1

    linked = c.entities.links.outgoing(brain.id, stored.memory.id, MENTIONS)
    assert [link.metadata.get("role") for link in linked] == ["about"]
    assert c.entities.get(brain, "harbour-trust").mention_count == 1
    assert list(c.pending_links.pending()) == []
    assert c.memories.store(brain, memory).deduplicated  # finished: nothing more to link
    assert c.entities.get(brain, "harbour-trust").mention_count == 1


def test_entity_links_of_an_update_refused_are_remade_by_the_sweeper(c: Container, brain: Brain) -> None:
    repo = c.entities.repo
    stored = c.memories.store(
        brain, MemoryInput(type=MemoryType.event, content=TEXT, client_id="harbour-trust")
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(repo, "records", Locked(repo.records))
        updated = c.memories.update(brain, stored.memory.id, content=LATER)  # Unavailable without
    assert "content" in updated.fields

    sweeper(c).tick()

    wanted = {m.name for m in c.entities.extract(LATER, client_id="harbour-trust")}
    linked = c.entities.links.outgoing(brain.id, stored.memory.id, MENTIONS)
    names = {link.target_id: c.entities.repo.by_id(brain.id, link.target_id) for link in linked}
    assert {e.entity.name for e in names.values() if e is not None} == wanted
    assert len(wanted) > 1 and list(c.pending_links.pending()) == []


def test_a_deleted_memory_s_pending_entity_links_are_dropped(c: Container, brain: Brain) -> None:
    repo = c.entities.repo
    memory = MemoryInput(type=MemoryType.event, content=TEXT, client_id="harbour-trust")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(repo, "records", Locked(repo.records))
        stored = c.memories.store(brain, memory)
    c.memories.delete(brain, stored.memory.id)

    assert sweeper(c).tick() == 1
    assert list(c.pending_links.pending()) == []
    assert c.entities.links.outgoing(brain.id, stored.memory.id, MENTIONS) == []


def test_links_of_a_writer_stopped_after_its_commit_are_made_by_the_next_process(
    adapters: Adapters, c: Container, brain: Brain, tmp_path: Path
) -> None:
    first = remember(c, brain, TEXT)["memoryId"]
    typed = MemoryInput(type=MemoryType.event, content=TEXT, client_id="harbour-trust")
    with faults.armed("documents.indexed"), pytest.raises(InjectedFault):
        c.memories.store(brain, typed)  # committed, then stopped: no entity link yet
    with faults.armed("documents.indexed"), pytest.raises(InjectedFault):
        remember(c, brain, TEXT + " Again.")  # committed, then stopped: not indexed, not linked

    later = process(adapters, tmp_path)  # the next process opening the data
    settle(later)

    memory_id = later.memories.store(brain, typed).memory.id
    linked = later.entities.links.outgoing(brain.id, memory_id, MENTIONS)
    assert [link.metadata.get("role") for link in linked] == ["about"]
    assert later.entities.get(brain, "harbour-trust").mention_count == 1
    assert len(waypoints(later, brain, first)) == 1
    assert list(later.pending_links.pending()) == []


def test_a_resent_memory_whose_writer_stopped_is_linked_at_once(c: Container, brain: Brain) -> None:
    memory = MemoryInput(type=MemoryType.event, content=TEXT, client_id="harbour-trust")
    with faults.armed("documents.indexed"), pytest.raises(InjectedFault):
        c.memories.store(brain, memory)
    c.documents.settle_pending()

    again = c.memories.store(brain, memory)

    assert again.deduplicated
    linked = c.entities.links.outgoing(brain.id, again.memory.id, MENTIONS)
    assert [link.metadata.get("role") for link in linked] == ["about"]
    assert list(c.pending_links.pending()) == []


def test_marks_are_spread_over_shards_and_hold_no_text(c: Container, brain: Brain) -> None:
    marks = [c.pending_links.put_op(c.pending_links.mark(brain.id, f"mem{i}", "mentions")) for i in range(64)]
    assert len({op.item.pk for op in marks}) > 8
    assert all(set(op.item.data) == {"brain_id", "memory_id", "kind", "relink", "at"} for op in marks)


def test_a_mark_is_deleted_with_the_last_link_and_a_memory_with_nothing_to_link_has_none(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waypoint mark costs no transaction of its own: its delete goes with the last link. An
    entity mark's goes alone, once the memory's text is found to be the one linked."""
    first = remember(c, brain, TEXT)["memoryId"]
    commits = commits_of(monkeypatch, c.adapters.records)
    second = remember(c, brain, TEXT + " Again.")["memoryId"]
    linked = c.memories.store(
        brain, MemoryInput(type=MemoryType.event, content=TEXT, client_id="harbour-trust")
    )
    plain = c.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="the kettle was descaled twice")
    )
    monkeypatch.undo()

    def marks(ops: list[Put | Delete]) -> list[Put | Delete]:
        return [
            op for op in ops if (op.item.pk if isinstance(op, Put) else op.pk).startswith("links_pending#")
        ]

    assert first in waypoints(c, brain, second)
    assert c.entities.links.outgoing(brain.id, linked.memory.id, MENTIONS)
    assert not c.entities.links.outgoing(brain.id, plain.memory.id, MENTIONS)
    deletes = [ops for ops in commits if any(isinstance(op, Delete) for op in marks(ops))]
    assert len(deletes) == 2
    with_links, alone = deletes
    assert len(with_links) > len(marks(with_links))
    assert [op.sk.partition("#")[0] for op in marks(with_links) if isinstance(op, Delete)] == [second]
    assert len(alone) == 1 and isinstance(alone[0], Delete) and alone[0].sk.startswith(f"{linked.memory.id}#")
    puts = [op for ops in commits for op in marks(ops) if isinstance(op, Put)]
    assert sorted(op.item.sk.partition("#")[0] for op in puts) == sorted([second, linked.memory.id])
    assert list(c.pending_links.pending()) == []


def test_a_memory_erased_while_a_settler_links_it_keeps_no_entity_link(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erasure drops the memory's entity links before it erases the document: a settler that
    links it between, still finding it, must not leave links (and counts) to an erased memory."""
    repo = c.entities.repo
    memory = MemoryInput(type=MemoryType.event, content=TEXT, client_id="harbour-trust", source_agent="scout")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(repo, "records", Locked(repo.records))
        stored = c.memories.store(brain, memory)
    assert [m.memory_id for m in c.pending_links.pending()] == [stored.memory.id]
    forget = c.entities.forget
    settled: list[int] = []

    def forget_then_settle(b: Brain, memory_id: str, *, read: Sequence[Link] | None = None) -> int:
        gone = forget(b, memory_id, read=read)
        if not settled:  # the sweep of another process, between the links' removal and the erase
            settled.append(c.pending_links.settle())
        return gone

    monkeypatch.setattr(c.entities, "forget", forget_then_settle)
    c.erasure.erase("source_agent", "scout")
    monkeypatch.undo()

    assert settled == [1]
    assert c.documents.repo.get_by_id(stored.memory.id) is None
    assert c.entities.links.outgoing(brain.id, stored.memory.id, MENTIONS) == []
    assert c.entities.stats(brain).total == 0 and list(c.pending_links.pending()) == []


def linked_names(c: Container, brain: Brain, memory_id: str) -> set[str]:
    linked = c.entities.links.outgoing(brain.id, memory_id, MENTIONS)
    found = (c.entities.repo.by_id(brain.id, link.target_id) for link in linked)
    return {e.entity.name for e in found if e is not None}


def test_an_update_linking_after_a_later_update_leaves_the_links_of_the_current_text(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two updates of one memory: the first commits, the second commits and links, then the
    first links the mentions of its own text, now older than the memory's."""
    newest = "Met with Sarah Chen on acme.com about the Lead Intake workflow, then moved it to Kubernetes."
    stored = c.memories.store(brain, MemoryInput(type=MemoryType.event, content=TEXT))
    links = c.memories.mention_links
    assert links is not None
    link = links.link
    overtaken: list[str] = []

    def overtaken_first(*args: Any, **kwargs: Any) -> None:
        if not overtaken:  # the first update's writer, just before it links: the second one runs whole
            overtaken.extend(c.memories.update(brain, stored.memory.id, content=newest).fields)
        link(*args, **kwargs)

    monkeypatch.setattr(links, "link", overtaken_first)
    c.memories.update(brain, stored.memory.id, content=LATER)
    monkeypatch.undo()

    wanted = {m.name for m in c.entities.extract(newest)}
    assert (
        "content" in overtaken
        and len(wanted) > 1
        and wanted.isdisjoint(m.name for m in c.entities.extract(LATER))
    )
    assert c.memories.text(c.memories.get(brain, stored.memory.id)) == newest
    assert linked_names(c, brain, stored.memory.id) == wanted
    assert list(c.pending_links.pending()) == []
