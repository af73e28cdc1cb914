"""A ThoughtMCP memory's waypoint links, and the statistics of the memories at their other ends,
are removed after the commit that removes the memory (a hard forget, a delete or erasure of its
document through another surface, a batch). That commit marks them (kind UNLINKS): a store that
refuses them afterwards, or a process that stops between, leaves the mark, and the sweep removes
what is left, so no memory keeps a link to one that is gone, nor its weight. On the fakes, SQLite
and DynamoDB under moto."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cairn import faults
from cairn.bootstrap import Adapters, Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain
from cairn.entrypoints.cli.check import settle
from cairn.faults import InjectedFault
from cairn.ports.records import Delete, Put
from cairn.services.documents.inputs import BatchOp
from cairn.services.links.pending import Finished
from tests.support.shapes import process
from tests.support.thought_links import adapters, c, commits_of, counted, linked, remembered, stats
from tests.unit.services.test_links_after_commit import refused, sweeper

__all__ = ["adapters", "c"]  # fixtures

TEXT = "The lighthouse keeper logged the lamp lit at six and the fog horn tested at seven."
UNLINKS = "unlinks"  # the kind of a removal's mark (services/thoughtmcp/removal.py)
REMOVALS = ("forget", "erase path", "delete path", "batch delete")


@pytest.fixture
def brain(c: Container) -> Brain:
    return c.brains.create("Thoughts", slug="thoughts")


def remove(c: Container, brain: Brain, memory_id: str, removal: str) -> None:
    doc = c.documents.repo.get_by_id(memory_id)
    assert doc is not None
    if removal == "forget":
        answer = c.thoughts.forget(brain, memory_id, "ada")
        assert answer["deletionType"] == "hard"  # answered as done: it is, and the mark finishes it
    elif removal == "erase path":
        c.documents.erase(brain, doc.path)
    elif removal == "delete path":
        c.documents.delete(brain, doc.path)
    else:
        c.documents.batch(brain, [BatchOp("delete", doc.path)])


def three(c: Container, brain: Brain) -> tuple[str, str, str]:
    kept = remembered(c, brain, TEXT)
    gone = remembered(c, brain, TEXT + " Again.")
    third = remembered(c, brain, TEXT + " Once more, at dusk.")
    assert gone in linked(c, brain, kept)
    return kept, gone, third


def assert_unlinked(c: Container, brain: Brain, gone: str, survivors: Sequence[str]) -> None:
    assert linked(c, brain, gone) == set()
    for survivor in survivors:
        assert gone not in linked(c, brain, survivor)
        assert stats(c, brain, survivor) == counted(c, brain, survivor)
    assert list(c.pending_links.pending()) == []


@pytest.mark.parametrize("removal", REMOVALS)
def test_links_of_a_removal_whose_unlinking_is_refused_are_removed_by_one_sweeper_tick(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch, removal: str
) -> None:
    kept, gone, third = three(c, brain)
    calls = refused(monkeypatch, c)  # the links' transactions, after the removal's own commit
    remove(c, brain, gone, removal)
    monkeypatch.undo()

    assert calls, "the unlinking was tried and refused"
    assert c.thoughts.rows.get(brain.id, "ada", [gone]) == {}
    assert gone in linked(c, brain, kept)  # left by the refusal, marked
    assert [(m.memory_id, m.kind) for m in c.pending_links.pending()] == [(gone, UNLINKS)]

    assert sweeper(c).tick() == 1

    assert_unlinked(c, brain, gone, [kept, third])
    assert linked(c, brain, kept) == {third}  # the survivors' own link stays


def test_links_of_a_removal_whose_process_stopped_after_its_commit_are_removed_by_the_next_process(
    adapters: Adapters, c: Container, brain: Brain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept, gone, third = three(c, brain)
    doc = c.documents.repo.get_by_id(gone)
    assert doc is not None
    with faults.armed("documents.committed"), pytest.raises(InjectedFault):
        c.documents.delete(brain, doc.path)  # committed, then stopped: nothing unlinked
    assert gone in linked(c, brain, kept)

    later = process(adapters, tmp_path)  # the next process opening the data
    capsys.readouterr()
    settle(later)

    assert_unlinked(later, brain, gone, [kept, third])
    said = capsys.readouterr().err
    assert "removed the links left of 1 memories a stopped process had removed" in said
    assert "linked" not in said.replace("unlinked", "") and "dropped" not in said


def test_the_mark_goes_with_the_last_link_and_names_no_user(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mark is written by the removal's own transaction and deleted by the last unlinking one:
    no transaction of its own. The erase's mark (before its bytes go) is the forget's one
    transaction more, and the erase's commit deletes it."""
    kept, gone, third = three(c, brain)
    commits = commits_of(monkeypatch, c.adapters.records)
    c.thoughts.forget(brain, gone, "ada")
    monkeypatch.undo()

    def marks(ops: list[Put | Delete], kind: str) -> list[Put | Delete]:
        return [
            op
            for op in ops
            if (op.item.pk if isinstance(op, Put) else op.pk).startswith("links_pending#")
            and (op.item.sk if isinstance(op, Put) else op.sk).endswith(f"#{kind}")
        ]

    def puts_and_deletes(kind: str) -> tuple[tuple[int, Put], tuple[int, Delete]]:
        puts = [(n, op) for n, ops in enumerate(commits) for op in marks(ops, kind) if isinstance(op, Put)]
        deletes = [
            (n, op) for n, ops in enumerate(commits) for op in marks(ops, kind) if isinstance(op, Delete)
        ]
        assert len(puts) == 1 and len(deletes) == 1
        return puts[0], deletes[0]

    (put_at, put), (delete_at, delete) = puts_and_deletes("unlinks")
    assert put_at < delete_at and (put.item.pk, put.item.sk) == (delete.pk, delete.sk)
    assert put.item.sk.startswith(f"{gone}#")
    assert "ada" not in repr(put.item)
    assert len(commits[put_at]) > 1 and len(commits[delete_at]) > 1  # each rides another commit
    (erasing_at, erasing), (erased_at, _) = puts_and_deletes("erases")
    assert len(commits[erasing_at]) == 1 and erased_at == put_at  # deleted by the erase's commit
    assert "ada" not in repr(erasing.item)
    assert_unlinked(c, brain, gone, [kept, third])


def test_a_finisher_for_a_memory_whose_links_are_gone_answers_done(c: Container, brain: Brain) -> None:
    kept, gone, _ = three(c, brain)
    c.thoughts.forget(brain, gone, "ada")
    before = stats(c, brain, kept)

    assert c.thoughts.finish_unlinks(brain, gone, False) is Finished.GONE
    assert c.thoughts.finish_unlinks(brain, "no-such-memory", False) is Finished.GONE
    assert stats(c, brain, kept) == before


def test_a_batch_removing_several_linked_memories_refused_after_its_commit_is_finished_by_the_sweep(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [remembered(c, brain, TEXT + f" Entry {n}.") for n in range(5)]
    kept, doomed = ids[0], ids[1:]
    paths = [doc.path for doc in (c.documents.repo.get_by_id(i) for i in doomed) if doc is not None]
    refused(monkeypatch, c)
    c.documents.batch(brain, [BatchOp("delete", path) for path in paths])
    monkeypatch.undo()
    assert sorted(m.memory_id for m in c.pending_links.pending()) == sorted(doomed)

    sweeper(c).tick()

    for gone in doomed:
        assert_unlinked(c, brain, gone, [kept])
    assert linked(c, brain, kept) == set() and stats(c, brain, kept) == (0, 0.0)


def test_a_forget_refused_while_unlinking_is_answered_as_done(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory is gone once its removal committed: the caller is not told to try again (a
    retry would answer "Memory not found")."""
    _, gone, _ = three(c, brain)

    def locked(*args: Any, **kwargs: Any) -> Any:
        raise Unavailable("the record store was kept busy by another writer", retry_after_s=1)

    monkeypatch.setattr(c.thoughts, "_unlink_all", locked)
    answer = c.thoughts.forget(brain, gone, "ada")
    assert answer == {
        "memoryId": gone,
        "deletionType": "hard",
        "message": "Memory and all related data removed",
    }


def test_a_batch_removing_memories_with_no_link_deletes_their_marks_in_one_transaction(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memories with no link left have no link transaction to carry their marks: a batch's go
    together, not one transaction each."""
    from cairn.services.thoughtmcp.models import NewMemory

    kept = [  # a user each: nothing to link to, so their removal has no link transaction
        str(c.thoughts.remember(brain, NewMemory(TEXT, f"user{n}", "s1", "semantic"))["memoryId"])
        for n in range(4)
    ]
    assert all(linked(c, brain, i) == set() for i in kept)
    paths = [doc.path for doc in (c.documents.repo.get_by_id(i) for i in kept) if doc is not None]
    commits = commits_of(monkeypatch, c.adapters.records)
    c.documents.batch(brain, [BatchOp("delete", path) for path in paths])
    monkeypatch.undo()

    deleting = [
        ops
        for ops in commits
        if any(isinstance(op, Delete) and op.pk.startswith("links_pending#") for op in ops)
    ]
    assert len(deleting) == 1 and len(deleting[0]) == len(kept)
    assert list(c.pending_links.pending()) == []


def marks_in(commits: list[list[Put | Delete]], *, erasing: bool = False) -> list[Put | Delete]:
    """The pending-links marks the commits wrote or deleted: of links, or (`erasing`) the erase's."""
    return [
        op
        for ops in commits
        for op in ops
        if (op.item.pk if isinstance(op, Put) else op.pk).startswith("links_pending#")
        and (op.item.sk if isinstance(op, Put) else op.sk).endswith("#erases") == erasing
    ]


def test_a_forget_of_a_memory_with_no_link_writes_no_mark(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read with no link before its commit, the memory has no links to mark: neither a mark in the
    removal's transaction nor a transaction to delete it."""
    alone = remembered(c, brain, TEXT)
    assert linked(c, brain, alone) == set()
    commits = commits_of(monkeypatch, c.adapters.records)
    c.thoughts.forget(brain, alone, "ada")
    monkeypatch.undo()

    assert marks_in(commits) == []
    assert [type(op) for op in marks_in(commits, erasing=True)] == [Put, Delete]  # the erase under way
    assert c.thoughts.rows.get(brain.id, "ada", [alone]) == {}
    assert c.documents.repo.get_by_id(alone) is None
    assert list(c.pending_links.pending()) == []


def test_a_forget_reads_each_kind_of_its_links_once(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forget unlinks its memory itself after its erasure, not the erasure's hook and then the
    forget again."""
    kept, gone, third = three(c, brain)
    outgoing = c.thoughts.links.outgoing
    kinds: list[str | None] = []

    def watched(brain_id: str, source: str, kind: str | None = None, **kw: Any) -> Any:
        if source == gone:
            kinds.append(kind)
        return outgoing(brain_id, source, kind, **kw)

    monkeypatch.setattr(c.thoughts.links, "outgoing", watched)
    c.thoughts.forget(brain, gone, "ada")
    monkeypatch.undo()

    assert kinds and all(kinds.count(kind) == 1 for kind in kinds)
    assert_unlinked(c, brain, gone, [kept, third])


def test_a_link_made_between_a_forgets_read_and_its_commit_is_removed_with_the_memory(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forget reads no link, another writer links the memory, then the forget commits: the
    row's version has moved, so the forget reads again and removes the link, marked as any."""
    kept, gone, third = three(c, brain)
    c.thoughts._unlink(brain, "ada", gone)  # no link left: the forget would write no mark
    assert linked(c, brain, gone) == set()
    outgoing = c.thoughts.links.outgoing
    raced: list[int] = []

    def racing(brain_id: str, source: str, kind: str | None = None, **kw: Any) -> Any:
        found = outgoing(brain_id, source, kind, **kw)
        if source == gone and not raced:
            rows = c.thoughts._rows(brain.id, "ada", [gone, kept])
            raced.append(c.thoughts._connect(brain, rows[gone], rows[kept], 0.5, "semantic", []))
        return found

    monkeypatch.setattr(c.thoughts.links, "outgoing", racing)
    c.thoughts.forget(brain, gone, "ada")
    monkeypatch.undo()

    assert raced == [2]  # linked both ways before the forget's commit
    assert c.thoughts.rows.get(brain.id, "ada", [gone]) == {}
    assert_unlinked(c, brain, gone, [kept, third])


def test_a_forget_of_a_memory_a_recall_keeps_reinforcing_removes_it_whole(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall reinforces the row between each read of the forget and its commit: the delete at
    the version read fails, and the forget removes the row whatever its version, marked as any,
    rather than giving up with its bytes gone and its record left."""
    alone = remembered(c, brain, TEXT)
    doc = c.documents.repo.get_by_id(alone)
    assert doc is not None and linked(c, brain, alone) == set()
    outgoing = c.thoughts.links.outgoing
    reinforced: list[int] = []

    def recalled(brain_id: str, source: str, kind: str | None = None, **kw: Any) -> Any:
        found = outgoing(brain_id, source, kind, **kw)
        row = c.thoughts._rows(brain.id, "ada", [alone]).get(alone)
        if source == alone and row is not None:
            c.thoughts.rows.put(brain.id, row, row.version)
            reinforced.append(row.version)
        return found

    monkeypatch.setattr(c.thoughts.links, "outgoing", recalled)
    answer = c.thoughts.forget(brain, alone, "ada")
    monkeypatch.undo()

    assert answer["deletionType"] == "hard" and reinforced
    assert c.thoughts.rows.get(brain.id, "ada", [alone]) == {}
    assert c.documents.repo.get_by_id(alone) is None
    assert list(c.pending_links.pending()) == []


def test_an_erasure_of_a_memory_with_no_link_writes_its_mark_once_and_drops_it_once(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An erasure removes a memory's links before it erases the document, and the erase's commit
    marks it: the links' removal deletes no mark (there is none yet), so the mark is touched by
    that commit and by the removal hook's delete, no transaction more."""
    kept, gone, third = three(c, brain)
    alone = remembered(c, brain, "Item 7: zq7x wv7y kp7z.")
    assert linked(c, brain, alone) == set()
    docs = {d.id: d for d in c.documents.repo.list(brain.id)}
    mark = c.pending_links.removal_mark(brain.id, alone, UNLINKS).key
    commits = commits_of(monkeypatch, c.adapters.records)

    c.erasure.eraser.erase(brain, [docs[alone]], [d for i, d in docs.items() if i != alone])

    def key(op: Put | Delete) -> tuple[str, str]:
        return (op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk)

    touching = [[op for op in ops if key(op) == mark] for ops in commits]
    assert [type(ops[0]).__name__ for ops in touching if ops] == ["Put", "Delete"]
    assert c.documents.repo.get_by_id(alone) is None and list(c.pending_links.pending()) == []
    for survivor in (kept, gone, third):
        assert stats(c, brain, survivor) == counted(c, brain, survivor)
