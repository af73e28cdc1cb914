"""A rename keeps the document, one at a time or in a batch, on every shape (fakes, SQLite and
files, DynamoDB + S3 + the OpenSearch fake): its id, creation time, title, tags, metadata and
memory record go with it. A batch rename wrote the bytes at the new path as a new document and
deleted the old one (a typed memory became a plain note), and a single rename replaced a typed
memory that a write over it is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.auth.principal import READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain, Document, MemoryType
from cairn.services.documents.inputs import BatchOp, DocumentInput
from cairn.services.events import ChangeEvent
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.models import NewMemory
from tests.support.shapes import adapters_for, process


@pytest.fixture(params=("fakes", "embedded", "aws"))
def container(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with adapters_for(request.param, request, tmp_path) as adapters:
        yield process(adapters, tmp_path)


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Notes", slug="notes")


def test_a_batch_rename_keeps_the_document_as_a_single_rename_does(
    container: Container, brain: Brain
) -> None:
    """It wrote the bytes at the new path as a new document (new id, creation time, a title from
    the path, no tags or metadata) and deleted the old one; a typed memory became a plain note."""
    docs = container.documents
    info = DocumentInput(title="My Sailing", tags=["boats"], metadata={"source": "log"})
    sailing = docs.write(brain, "notes/sail.md", b"Dinghy on Sundays.", info).document
    swap_a = docs.write(brain, "notes/a.md", b"alpha").document
    swap_b = docs.write(brain, "notes/b.md", b"bravo").document
    docs.write(brain, "notes/over.md", b"to be replaced")

    docs.batch(
        brain,
        [
            BatchOp("rename", "notes/sail.md", to="boats/sail.md"),
            BatchOp("append", "boats/sail.md", b" And Wednesdays."),
            BatchOp("rename", "notes/a.md", to="notes/tmp.md"),  # a swap through a third path
            BatchOp("rename", "notes/b.md", to="notes/a.md"),
            BatchOp("rename", "notes/tmp.md", to="notes/b.md"),
            BatchOp("write", "notes/sail.md", b"a new note where the old one was"),
        ],
    )

    moved = docs.get(brain, "boats/sail.md")
    assert (moved.id, moved.created_at, moved.title) == (sailing.id, sailing.created_at, "My Sailing")
    assert (moved.tags, moved.metadata["source"]) == (["boats"], "log")
    assert docs.read(brain, "boats/sail.md") == b"Dinghy on Sundays. And Wednesdays."
    assert container.documents.repo.get_by_id(sailing.id).path == "boats/sail.md"  # type: ignore[union-attr]
    assert docs.get(brain, "notes/a.md").id == swap_b.id and docs.get(brain, "notes/b.md").id == swap_a.id
    assert docs.read(brain, "notes/a.md") == b"bravo" and not docs.exists(brain, "notes/tmp.md")
    fresh = docs.get(brain, "notes/sail.md")
    assert fresh.id not in (sailing.id, swap_a.id, swap_b.id)
    assert [h.path for h in container.search.search(brain, "dinghy wednesdays", tags=["boats"]).hits] == [
        "boats/sail.md"
    ]


def test_no_rename_replaces_a_typed_memory(container: Container, brain: Brain) -> None:
    docs = container.documents
    memory = container.memories.store(
        brain, MemoryInput(MemoryType.fact, "Sigma uses SQS.", key="sigma")
    ).memory
    docs.write(brain, "tmp/plain.md", b"plain text")
    for rename in (
        lambda: docs.rename(brain, "tmp/plain.md", memory.path),
        lambda: docs.batch(brain, [BatchOp("rename", "tmp/plain.md", to=memory.path)]),
    ):
        with pytest.raises(InvalidInput, match="is a typed memory"):
            rename()
    assert docs.get(brain, memory.path).id == memory.id and docs.read(brain, "tmp/plain.md") == b"plain text"
    with pytest.raises(
        InvalidInput, match="is a typed memory"
    ):  # moved, its text changes through zengram only
        docs.batch(
            brain,
            [BatchOp("rename", memory.path, to="facts/sigma.md"), BatchOp("append", "facts/sigma.md", b"!")],
        )
    docs.batch(brain, [BatchOp("rename", memory.path, to="facts/sigma.md")])  # moved whole, it stays itself
    assert container.documents.repo.get_by_id(memory.id).path == "facts/sigma.md"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "ops",
    [
        [BatchOp("rename", "notes/a.md", to="notes/b.md")],
        [BatchOp("delete", "notes/b.md"), BatchOp("rename", "notes/a.md", to="notes/b.md")],
    ],
    ids=["over", "delete-then-over"],
)
def test_a_batch_rename_over_a_document_takes_its_text_out_of_search(
    container: Container, brain: Brain, ops: list[BatchOp]
) -> None:
    """The replaced document's chunks stayed in the index under the new path, no index intent
    named them, and the index check told the operator to restore the records from a backup."""
    docs = container.documents
    docs.write(brain, "notes/a.md", b"Zebras graze on the savanna.")
    replaced = docs.write(brain, "notes/b.md", b"Penguins huddle in winter.").document

    docs.batch(brain, ops)

    assert docs.read(brain, "notes/b.md") == b"Zebras graze on the savanna."
    assert docs.indexer.index.get_chunks(brain.id, replaced.id) == []
    hits = container.search.search(brain, "penguins huddle", count_access=False).hits
    assert [h.content for h in hits] == ["Zebras graze on the savanna."]
    assert container.repair.check(brain, repair=False).sound


def test_every_event_of_a_batch_names_the_owner_of_the_item_it_moves(
    container: Container, brain: Brain
) -> None:
    """After the first hop a renamed memory's events carried no owner, and another user of the
    brain was told of a user's ThoughtMCP memory's paths."""
    memory_id = container.thoughts.remember(
        brain, NewMemory("The kettle is descaled every Sunday.", "u1", "s", "semantic")
    )["memoryId"]
    path = container.documents.repo.get_by_id(memory_id).path  # type: ignore[union-attr]
    folder = path.rsplit("/", 1)[0]
    seen: list[ChangeEvent] = []
    container.events.listen(lambda _brain, events: seen.extend(events))

    container.documents.batch(
        brain,
        [
            BatchOp("rename", path, to=f"{folder}/x.md"),
            BatchOp("rename", f"{folder}/x.md", to=f"{folder}/y.md"),
            BatchOp("delete", f"{folder}/y.md"),
        ],
    )

    assert [(e.kind, e.owner) for e in seen] == [("renamed", "u1"), ("renamed", "u1"), ("deleted", "u1")]
    other = Principal(
        tenant=brain.owner_tenant, subject="u2", scopes=frozenset({READ, WRITE}), via=Via.api_key
    )
    with access.acting_as(other):
        sees = access.seer(brain)
    assert not any(sees(e.owner) for e in seen)


def test_a_batch_append_keeps_what_the_document_says_of_itself(container: Container, brain: Brain) -> None:
    """As a single append does; a batch append (alone, or between a rename away and back) wrote the
    document with the title its path gives, no tags and no metadata. A write replaces them, as a
    single write does."""
    docs = container.documents
    info = DocumentInput(title="My Sailing", tags=["boats"], metadata={"source": "log"})
    for path in ("x/1.md", "x/2.md", "x/3.md"):
        docs.write(brain, path, b"Dinghy on Sundays.", info)

    docs.batch(brain, [BatchOp("append", "x/1.md", b" And Wednesdays.")])
    docs.batch(
        brain,
        [
            BatchOp("rename", "x/2.md", to="y/2.md"),
            BatchOp("append", "y/2.md", b" And Wednesdays."),
            BatchOp("rename", "y/2.md", to="x/2.md"),
        ],
    )
    docs.batch(brain, [BatchOp("append", "x/3.md", b"!"), BatchOp("write", "x/3.md", b"Rewritten.")])

    for path in ("x/1.md", "x/2.md"):
        kept = docs.get(brain, path)
        assert (kept.title, kept.tags, kept.metadata.get("source")) == ("My Sailing", ["boats"], "log")
        assert docs.read(brain, path) == b"Dinghy on Sundays. And Wednesdays."
    rewritten = docs.get(brain, "x/3.md")
    assert (rewritten.tags, rewritten.metadata.get("source")) == ([], None)


def test_a_batch_judges_what_a_path_holds_at_its_op_not_before_the_batch(
    container: Container, brain: Brain
) -> None:
    """A typed memory moved away, or deleted, by an earlier op of the batch no longer stands in the
    way of what comes to its path, as one op at a time it does not: both were refused as "a typed
    memory … or delete it first"."""
    docs = container.documents

    def memory(key: str) -> Document:
        return container.memories.store(
            brain, MemoryInput(MemoryType.fact, f"{key} uses SQS.", key=key)
        ).memory

    moved, deleted, renamed_over = memory("sigma"), memory("tau"), memory("upsilon")
    docs.write(brain, "notes/p.md", b"plain p")
    docs.write(brain, "notes/q.md", b"plain q")

    docs.batch(
        brain,
        [
            BatchOp("rename", moved.path, to="facts/sigma.md"),
            BatchOp("rename", "notes/p.md", to=moved.path),
            BatchOp("delete", deleted.path),
            BatchOp("write", deleted.path, b"a plain note where tau was"),
            BatchOp("delete", renamed_over.path),
            BatchOp("rename", "notes/q.md", to=renamed_over.path),
        ],
    )

    assert docs.get(brain, "facts/sigma.md").id == moved.id and docs.read(brain, moved.path) == b"plain p"
    for gone, text in ((deleted, b"a plain note where tau was"), (renamed_over, b"plain q")):
        assert docs.read(brain, gone.path) == text
        assert docs.get(brain, gone.path).memory is None and docs.repo.get_by_id(gone.id) is None
    found = container.search.search(brain, "tau upsilon uses SQS", count_access=False).hits
    assert {h.content for h in found}.isdisjoint({"tau uses SQS.", "upsilon uses SQS."})
    with pytest.raises(InvalidInput, match="is a typed memory"):  # one still there is not replaced
        docs.batch(brain, [BatchOp("write", "facts/sigma.md", b"over it")])


@pytest.mark.parametrize("then_write", [True, False])
def test_a_memory_moved_away_and_deleted_in_one_batch_is_gone_as_one_op_at_a_time(
    container: Container, brain: Brain, then_write: bool
) -> None:
    """[rename P->X, (write P,) delete X] was refused as "a typed memory … delete it first": the
    delete at X took the memory, which no longer stood at P."""
    docs = container.documents
    mem = container.memories.store(brain, MemoryInput(MemoryType.fact, "Sigma uses SQS.", key="sigma")).memory
    moved = [BatchOp("rename", mem.path, to="facts/x.md"), BatchOp("rename", "facts/x.md", to="facts/y.md")]
    written = [BatchOp("write", mem.path, b"a plain note where sigma was")] if then_write else []

    docs.batch(brain, [*moved, *written, BatchOp("delete", "facts/y.md")])

    assert docs.repo.get_by_id(mem.id) is None or docs.repo.get_by_id(mem.id).deleted_at is not None
    assert not docs.exists(brain, "facts/y.md") and not docs.exists(brain, "facts/x.md")
    if then_write:
        assert docs.read(brain, mem.path) == b"a plain note where sigma was"
        assert docs.get(brain, mem.path).memory is None
    else:
        assert not docs.exists(brain, mem.path)
    found = container.search.search(brain, "sigma uses SQS", count_access=False).hits
    assert "Sigma uses SQS." not in {h.content for h in found}
