"""A write's chunks are as durable as its records: a process that dies between the commit and the
index writes (or between those and finishing the intent) leaves an intent that the next process
settles, on the fakes, the embedded store and the AWS adapters; two writers of one document in
different processes never leave the index one write behind."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cairn import faults
from cairn.bootstrap import Adapters, Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain, MemoryType
from cairn.faults import InjectedFault
from cairn.services.documents.index_intents import Intent
from cairn.services.documents.inputs import BatchOp, DocumentInput
from cairn.services.memory.memory_model import MemoryInput
from tests.support.index_check import index_problems
from tests.support.shapes import adapters_for, process

SHAPES = ("fakes", "embedded", "aws")
LONG = "\n\n".join(f"Paragraph {i} about the lighthouse keeper's log, entry {i}. " * 6 for i in range(12))


@pytest.fixture(params=SHAPES)
def adapters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapters]:
    with adapters_for(request.param, request, tmp_path) as built:
        yield built


@pytest.fixture
def first(adapters: Adapters, tmp_path: Path) -> Container:
    return process(adapters, tmp_path)


@pytest.fixture
def brain(first: Container) -> Brain:
    brain = first.brains.create("Crash test", slug="crash")
    first.documents.write(brain, "notes/keep.md", b"# Keep\n\nA note that stays as it is.")
    first.documents.write(brain, "notes/old.md", LONG.encode())
    first.documents.write(brain, "notes/target.md", b"# Target\n\nThe file a rename replaces.")
    return brain


Operation = Callable[[Container, Brain], object]

OPERATIONS: dict[str, Operation] = {
    "create": lambda c, b: c.documents.write(b, "notes/new.md", b"# New\n\nThe heron waits by the weir."),
    "rewrite": lambda c, b: c.documents.write(b, "notes/old.md", (LONG + "\n\nA new closing line.").encode()),
    "shrink": lambda c, b: c.documents.write(b, "notes/old.md", b"# Old\n\nNow one short paragraph."),
    "append": lambda c, b: c.documents.append(b, "notes/old.md", b"\n\nAppended: the lamp was lit at six."),
    "retire": lambda c, b: c.documents.delete(b, "notes/old.md"),
    "erase": lambda c, b: c.documents.erase(b, "notes/old.md"),
    "rename": lambda c, b: c.documents.rename(b, "notes/old.md", "notes/target.md"),
    "write_many": lambda c, b: c.documents.write_many(
        b,
        [
            (f"bulk/{i}.md", f"# Bulk {i}\n\nItem {i} of the bulk load.".encode(), DocumentInput())
            for i in range(5)
        ],
    ),
    "supersede": lambda c, b: [
        c.memories.store(b, MemoryInput(MemoryType.fact, f"The boat is painted {colour}.", key="boat-colour"))
        for colour in ("blue", "green")
    ],
}


@contextmanager
def stalled_after_commit(work: Callable[[], object]) -> Iterator[None]:
    """Run `work` on a thread of its own, stopped just after its commit (before its index writes)
    while the block runs; then let it finish, and fail if it raised."""
    paused, resume = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def stall() -> None:
        paused.set()
        assert resume.wait(30)

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            errors.append(exc)

    with faults.armed("documents.committed", action=stall):
        writer = threading.Thread(target=run)
        writer.start()
        assert paused.wait(30)
    try:
        yield
    finally:
        resume.set()
        writer.join(30)
    assert not errors, errors


@pytest.mark.parametrize("point", ["documents.committed", "documents.indexed"])
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_write_cut_short_is_settled_by_the_next_process(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path, operation: str, point: str
) -> None:
    at = 3 if operation == "write_many" else 2 if operation == "supersede" else 1
    with faults.armed(point, at=at), pytest.raises(InjectedFault):
        OPERATIONS[operation](first, brain)
    restarted = process(adapters, tmp_path)
    assert list(restarted.documents.repo.intents.pending()), "the cut-short write left no intent"
    assert restarted.documents.settle_pending() >= 1
    assert index_problems(restarted) == []


@pytest.mark.parametrize("point", ["batch.committed", "batch.indexed"])
def test_a_batch_cut_short_is_settled_by_the_next_process(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path, point: str
) -> None:
    ops = [
        *(
            BatchOp("write", f"batch/{i}.md", f"# Batch {i}\n\nThe tide table for day {i}.".encode())
            for i in range(6)
        ),
        BatchOp("delete", "notes/keep.md"),
        BatchOp("rename", "notes/old.md", to="notes/moved.md"),
    ]
    with faults.armed(point), pytest.raises(InjectedFault):
        first.documents.batch(brain, ops)
    restarted = process(adapters, tmp_path)
    assert restarted.documents.settle_pending() >= 1
    assert index_problems(restarted) == []
    assert restarted.documents.exists(brain, "batch/5.md") and not restarted.documents.exists(
        brain, "notes/keep.md"
    )


def test_resending_what_a_crash_cut_short_repairs_it(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path
) -> None:
    body = b"# Sent twice\n\nThe ferry leaves at nine."
    with faults.armed("documents.committed"), pytest.raises(InjectedFault):
        first.documents.write(brain, "notes/twice.md", body)
    restarted = process(adapters, tmp_path)  # no settling: the client just sends it again
    again = restarted.documents.write(brain, "notes/twice.md", body)
    assert not again.changed
    assert index_problems(restarted) == []
    assert restarted.search.search(brain, "when does the ferry leave").hits[0].path == "notes/twice.md"


def test_settling_twice_and_settling_nothing_change_nothing(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path
) -> None:
    assert first.documents.settle_pending() == 0
    with faults.armed("documents.committed"), pytest.raises(InjectedFault):
        first.documents.write(brain, "notes/once.md", b"# Once\n\nThe curlew called over the saltmarsh.")
    restarted = process(adapters, tmp_path)
    assert restarted.documents.settle_pending() == 2  # the note, and the sibling it now precedes
    assert restarted.documents.settle_pending() == 0
    assert index_problems(restarted) == []


def test_an_older_write_landing_late_does_not_leave_the_index_behind(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path
) -> None:
    """Process A commits version 2, stalls before its index writes; process B commits version 3 and
    indexes it; A's index writes then land (older text over newer). A must notice and repair."""
    other = process(adapters, tmp_path)
    with stalled_after_commit(
        lambda: first.documents.write(brain, "notes/old.md", b"# Old\n\nVersion two mentions the walrus.")
    ):
        other.documents.write(brain, "notes/old.md", b"# Old\n\nVersion three mentions the narwhal.")
    assert index_problems(other) == []
    (chunk,) = other.adapters.chunks.get_chunks(brain.id, other.documents.get(brain, "notes/old.md").id)
    assert "narwhal" in chunk.text


def test_an_older_write_whose_intent_the_store_refuses_to_finish_still_does_not_leave_the_index_behind(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, and the record store refuses A's intent delete (another process holds its lock):
    A's write is stored and answered, not refused, and A still sees that B moved the intent and
    writes the index from B's record; an intent still standing as A wrote it is left to the sweeper."""
    other = process(adapters, tmp_path)

    def refused(intents: object) -> list[Intent]:
        raise Unavailable("the record store was kept busy by another writer", retry_after_s=1)

    monkeypatch.setattr(first.documents.repo.intents, "finish", refused)
    with stalled_after_commit(
        lambda: first.documents.write(brain, "notes/old.md", b"# Old\n\nVersion two mentions the walrus.")
    ):
        other.documents.write(brain, "notes/old.md", b"# Old\n\nVersion three mentions the narwhal.")
    assert index_problems(other) == []
    (chunk,) = other.adapters.chunks.get_chunks(brain.id, other.documents.get(brain, "notes/old.md").id)
    assert "narwhal" in chunk.text
    first.documents.write(brain, "notes/new.md", b"# New\n\nThe heron waits by the weir.")
    assert first.documents.repo.intents.get(first.documents.get(brain, "notes/new.md").id) is not None
    assert other.documents.settle_pending() >= 1
    assert index_problems(other) == []


def test_a_reconcile_of_an_erased_document_leaves_no_ghost(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path
) -> None:
    doc = first.documents.get(brain, "notes/old.md")
    with faults.armed("documents.committed"), pytest.raises(InjectedFault):
        first.documents.erase(brain, "notes/old.md")
    assert first.adapters.chunks.get_chunks(brain.id, doc.id), "the crash came before the chunks went"
    restarted = process(adapters, tmp_path)
    restarted.documents.settle_pending()
    assert restarted.adapters.chunks.get_chunks(brain.id, doc.id) == []
    assert index_problems(restarted) == []


def test_a_superseded_record_retired_before_its_reconcile_leaves_no_chunk(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path
) -> None:
    """A superseding store hands the index the superseded memory's record as its commit wrote it,
    unread. Another process retires that memory between the commit and the reconcile: the chunks
    written from the handed record are stale, finishing the intent finds it moved, and the
    reconcile reads again and takes them out."""
    other = process(adapters, tmp_path)
    old = first.memories.store(
        brain, MemoryInput(MemoryType.fact, "The boat is painted blue.", key="boat-colour")
    )
    assert first.adapters.chunks.get_chunks(brain.id, old.memory.id)
    green = MemoryInput(MemoryType.fact, "The boat is painted green.", key="boat-colour")
    with stalled_after_commit(lambda: first.memories.store(brain, green)):
        other.documents.delete(brain, old.memory.path)
    assert other.adapters.chunks.get_chunks(brain.id, old.memory.id) == []
    assert index_problems(other) == []


def test_a_stop_asked_while_settling_ends_it_before_the_next_document_and_the_next_settle_finishes(
    adapters: Adapters, first: Container, brain: Brain, tmp_path: Path
) -> None:
    """The index sweep settles the intents inside a tick; a process stopping (its manager allows
    30 s in all) must not wait out a long list of them: those left stand for the next start."""
    for n in range(4):
        with faults.armed("documents.committed"), pytest.raises(InjectedFault):
            first.documents.write(
                brain, f"kept/{n}.md", f"# Kept {n}\n\nThe tern {n} nests on shingle.".encode()
            )
    restarted = process(adapters, tmp_path)
    asked: list[int] = []

    def stop() -> bool:  # asked before each document: the stop comes after the first
        asked.append(1)
        return len(asked) > 1

    assert restarted.documents.settle_pending(stop=stop) == 1
    assert len(asked) == 2
    assert index_problems(restarted) != []  # the rest left standing
    assert restarted.documents.settle_pending() >= 3
    assert index_problems(restarted) == []
