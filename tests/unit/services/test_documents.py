from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import InvalidPath, NotFound, PayloadTooLarge
from cairn.domain.models import Brain
from cairn.services.documents.indexing import MAX_CHUNKS
from cairn.services.documents.inputs import BatchOp, DocumentInput
from cairn.services.repositories import DocumentRepository
from tests.support.stored_bytes import unnamed_bytes


def test_write_read_and_version_increments(container: Container, brain: Brain) -> None:
    docs = container.documents
    first = docs.write(brain, "memory/a.md", b"# Alpha\n\nfirst")
    assert first.created and first.document.version == 1
    assert first.document.title == "Alpha"
    second = docs.write(brain, "memory/a.md", b"# Alpha\n\nsecond")
    assert not second.created and second.document.version == 2
    assert second.document.id == first.document.id
    assert docs.read(brain, "memory/a.md") == b"# Alpha\n\nsecond"


def test_identical_rewrite_changes_nothing(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "a.md", b"same")
    again = docs.write(brain, "a.md", b"same")
    assert not again.changed
    assert again.document.version == 1


@pytest.mark.parametrize(
    "bad", ["/a.md", "a/", "a//b", "../a", "a/./b", "a\\b", "a\x00b", "", " ", "\ufeff", "notes/\u3164/a.md"]
)
def test_invalid_paths_are_rejected(container: Container, brain: Brain, bad: str) -> None:
    with pytest.raises(InvalidPath):
        container.documents.write(brain, bad, b"x")
    assert container.documents.list(brain, recursive=True) == []


def test_written_documents_are_searchable_and_deleted_ones_are_not(
    container: Container, brain: Brain
) -> None:
    container.documents.write(brain, "notes/owl.md", b"The barn owl hunts at dusk over the meadow.")
    container.documents.write(brain, "notes/fish.md", b"Salmon swim upstream to spawn.")
    hits = container.search.search(brain, "owl hunting at dusk").hits
    assert hits[0].path == "notes/owl.md"
    container.documents.delete(brain, "notes/owl.md")
    assert all(h.path != "notes/owl.md" for h in container.search.search(brain, "owl dusk").hits)
    with pytest.raises(NotFound):
        container.documents.read(brain, "notes/owl.md")


def test_listing_directories_glob_and_generated(container: Container, brain: Brain) -> None:
    docs = container.documents
    for path in ["memory/a.md", "memory/b.txt", "memory/sub/c.md", "memory/_index.md", "top.md"]:
        docs.write(brain, path, b"x")
    shallow = docs.list(brain, "memory")
    assert [(i.path, i.is_dir) for i in shallow] == [
        ("memory/a.md", False),
        ("memory/b.txt", False),
        ("memory/sub", True),
    ]
    deep = docs.list(brain, "memory", recursive=True, include_generated=True)
    assert [i.path for i in deep] == ["memory/_index.md", "memory/a.md", "memory/b.txt", "memory/sub/c.md"]
    assert [i.path for i in docs.list(brain, "", recursive=True, glob="*.md")] == [
        "memory/a.md",
        "memory/sub/c.md",
        "top.md",
    ]
    assert docs.stat(brain, "memory/sub").is_dir


def test_concurrent_appends_lose_nothing(container: Container, brain: Brain) -> None:
    def append(n: int) -> None:
        for i in range(10):
            container.documents.append(brain, "log.md", f"[{n}:{i}]".encode())

    threads = [threading.Thread(target=append, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    content = container.documents.read(brain, "log.md").decode()
    assert sorted(content.replace("]", "]\n").split()) == sorted(
        f"[{n}:{i}]" for n in range(8) for i in range(10)
    )
    assert container.documents.get(brain, "log.md").version == 80


def test_rename_moves_content_and_index(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "raw/old.md", b"kingfisher by the river")
    docs.write(brain, "raw/new.md", b"to be overwritten")
    moved = docs.rename(brain, "raw/old.md", "raw/new.md")
    assert docs.read(brain, "raw/new.md") == b"kingfisher by the river"
    assert not docs.exists(brain, "raw/old.md")
    assert [h.path for h in container.search.search(brain, "kingfisher").hits] == ["raw/new.md"]
    assert moved.path == "raw/new.md"
    with pytest.raises(NotFound):
        docs.rename(brain, "raw/old.md", "raw/x.md")


def test_batch_applies_all_ops_in_order(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "old.md", b"old")
    committed = docs.batch(
        brain,
        [
            BatchOp("write", "a.md", b"alpha"),
            BatchOp("append", "a.md", b"+beta"),
            BatchOp("rename", "old.md", to="moved.md"),
            BatchOp("write", "tmp.md", b"t"),
            BatchOp("delete", "tmp.md"),
        ],
    )
    assert committed == 5
    assert docs.read(brain, "a.md") == b"alpha+beta"
    assert docs.read(brain, "moved.md") == b"old"
    assert not docs.exists(brain, "old.md")
    assert not docs.exists(brain, "tmp.md")


def test_batch_with_a_failing_op_changes_nothing(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "keep.md", b"keep")
    with pytest.raises(NotFound):
        docs.batch(
            brain,
            [
                BatchOp("write", "new.md", b"heron"),
                BatchOp("write", "keep.md", b"changed"),
                BatchOp("delete", "missing.md"),
            ],
        )
    assert not docs.exists(brain, "new.md")
    assert docs.read(brain, "keep.md") == b"keep"
    assert [h.path for h in container.search.search(brain, "heron").hits] == ["keep.md"]


def test_batch_limits(container: Container, brain: Brain) -> None:
    docs = container.documents
    with pytest.raises(PayloadTooLarge):
        docs.batch(brain, [BatchOp("write", f"f{i}.md", b"x") for i in range(1025)])
    with pytest.raises(InvalidPath):
        docs.batch(brain, [BatchOp("write", "ok.md", b"x"), BatchOp("write", "/bad.md", b"x")])
    assert docs.list(brain, recursive=True) == []


def test_a_text_of_more_chunks_than_a_document_holds_is_refused_and_changes_nothing(
    container: Container, brain: Brain
) -> None:
    """20,001 tiny sections, one chunk each: 240 KB that the AWS shape could not index (an
    ingest's state machine past its history, an activation past the index's id limit)."""
    sections = "".join(f"## {n}\n\nok\n\n" for n in range(MAX_CHUNKS + 1))
    container.documents.write(brain, "big.md", b"# Small\n\nThe earlier text.")
    with pytest.raises(PayloadTooLarge, match="at most 20000"):
        container.documents.write(brain, "big.md", sections.encode())
    with pytest.raises(PayloadTooLarge):
        container.documents.batch(brain, [BatchOp("write", "other.md", sections.encode())])
    assert container.documents.read(brain, "big.md") == b"# Small\n\nThe earlier text."
    assert [e.path for e in container.documents.list(brain, recursive=True)] == ["big.md"]
    fewer = "".join(f"## {n}\n\nok\n\n" for n in range(MAX_CHUNKS))
    assert container.documents.write(brain, "big.md", fewer.encode()).document.chunk_count == MAX_CHUNKS


def test_tags_and_metadata_are_kept(container: Container, brain: Brain) -> None:
    out = container.documents.write(
        brain, "t.md", b"hello", DocumentInput(title="Greeting", tags=["a", "b"], metadata={"k": 1})
    )
    assert out.document.metadata == {"k": 1, "tags": "a,b"}
    assert out.document.tags == ["a", "b"]
    assert out.document.title == "Greeting"


def count_path_reads(
    repo: DocumentRepository, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], Callable[[str, str], object]]:
    """Every path the repository's `stored` reads from now on (a write's, delete's or rename's
    reads of its documents), and the counting stand-in put in its place."""
    reads: list[str] = []
    stored = repo.stored

    def counted(brain_id: str, path: str) -> object:
        reads.append(path)
        return stored(brain_id, path)

    monkeypatch.setattr(repo, "stored", counted)
    return reads, counted


def another_process_writes_first(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch, path: str, data: bytes
) -> list[int]:
    """Makes the next commit lose to another process's write of `path` (done behind the path
    lock's back, between the read and the commit; its reads are not counted). Call after
    `count_path_reads`. The list it returns holds one item once that write happened."""
    docs = container.documents
    repo = docs.repo
    counted, commit = repo.stored, repo.commit
    raced: list[int] = []

    def first(*args: object, **kwargs: object) -> object:
        if not raced:
            raced.append(1)
            monkeypatch.setattr(repo, "commit", commit)
            monkeypatch.delattr(repo, "stored")  # the class's own read, uncounted
            docs._write_locked(brain, path, data, DocumentInput(), repo.stored(brain.id, path))
            monkeypatch.setattr(repo, "stored", counted)
            monkeypatch.setattr(repo, "commit", first)
        return commit(*args, **kwargs)

    monkeypatch.setattr(repo, "commit", first)
    return raced


def test_a_write_reads_its_document_once_and_goes_again_after_losing_to_another_writer(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_again` hands the attempt the documents it read, so a write reads its path once (a
    GetItem on DynamoDB). A commit that loses to another process's write of the path (done here
    behind the path lock's back, between the read and the commit) is read and made again."""
    docs = container.documents
    docs.write(brain, "notes/a.md", b"one")
    reads, _ = count_path_reads(docs.repo, monkeypatch)
    assert docs.write(brain, "notes/a.md", b"two").document.version == 2
    assert reads == ["notes/a.md"]

    raced = another_process_writes_first(container, brain, monkeypatch, "notes/a.md", b"three")
    reads.clear()
    outcome = docs.write(brain, "notes/a.md", b"four")
    assert raced and outcome.document.version == 4
    assert reads == ["notes/a.md"] * 3  # read, read again after the lost commit, read for the retry
    assert docs.read(brain, "notes/a.md") == b"four"


def test_a_commit_that_loses_leaves_none_of_its_bytes(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = container.documents
    docs.write(brain, "notes/a.md", b"one")
    count_path_reads(docs.repo, monkeypatch)
    raced = another_process_writes_first(container, brain, monkeypatch, "notes/a.md", b"theirs")
    docs.write(brain, "notes/a.md", b"mine")  # its first commit loses, the second lands

    assert raced and unnamed_bytes(container, brain, ["notes/a.md"]) == set()  # not mine's lost attempt


def test_a_delete_reads_its_document_once_and_finds_nothing_to_delete_twice(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = container.documents
    docs.write(brain, "notes/a.md", b"one")
    reads, _ = count_path_reads(docs.repo, monkeypatch)
    docs.delete(brain, "notes/a.md")
    assert reads == ["notes/a.md"]
    with pytest.raises(NotFound):
        docs.delete(brain, "notes/a.md")
    with pytest.raises(NotFound):
        docs.delete(brain, "notes/never.md")


def test_a_rename_reads_each_of_its_paths_once(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = container.documents
    docs.write(brain, "notes/a.md", b"one")
    reads, _ = count_path_reads(docs.repo, monkeypatch)
    assert docs.rename(brain, "notes/a.md", "notes/b.md").path == "notes/b.md"
    assert sorted(reads) == ["notes/a.md", "notes/b.md"]
    with pytest.raises(NotFound):
        docs.rename(brain, "notes/a.md", "notes/c.md")


def test_a_batch_reads_each_of_its_paths_once_and_goes_again_after_losing_to_another_writer(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch stages over the documents `_again` read (it read every path a second time
    before). A commit that loses to another process's write of one of its paths is read and made
    again, over what that writer left."""
    docs = container.documents
    docs.write(brain, "notes/a.md", b"one")
    docs.write(brain, "notes/b.md", b"bee")
    reads, _ = count_path_reads(docs.repo, monkeypatch)
    ops = [
        BatchOp("append", "notes/a.md", b"+two"),
        BatchOp("delete", "notes/b.md"),
        BatchOp("write", "notes/c.md", b"sea"),
    ]
    assert docs.batch(brain, ops) == 3
    assert sorted(reads) == ["notes/a.md", "notes/b.md", "notes/c.md"]
    assert docs.read(brain, "notes/a.md") == b"one+two"

    raced = another_process_writes_first(container, brain, monkeypatch, "notes/a.md", b"theirs")
    reads.clear()
    mine = [BatchOp("append", "notes/a.md", b"+mine"), BatchOp("write", "notes/d.md", b"d")]
    assert docs.batch(brain, mine) == 2
    assert raced
    assert sorted(reads) == sorted(["notes/a.md", "notes/d.md"] * 3)  # read, compared, read again
    assert docs.read(brain, "notes/a.md") == b"theirs+mine"
    assert unnamed_bytes(container, brain, [f"notes/{n}.md" for n in "abcd"]) == set()


def test_an_append_is_refused_on_a_memory_with_a_record_and_taken_by_an_extracted_fact(
    container: Container, brain: Brain
) -> None:
    from cairn.domain.errors import InvalidInput
    from cairn.domain.models import MemoryFacet, MemoryType
    from cairn.services.documents.inputs import BatchOp
    from cairn.services.memory.memory_model import MemoryInput

    stored = container.memories.store(
        brain, MemoryInput(type=MemoryType.fact, content="The staging database is db-stage-1.")
    )
    path = stored.memory.path
    with pytest.raises(InvalidInput, match="typed memory"):
        container.documents.append(brain, path, b"\nAnd db-stage-2.")
    with pytest.raises(InvalidInput, match="typed memory"):  # a plain write would drop its record
        container.documents.write(brain, path, b"The staging database is db-stage-2.")
    with pytest.raises(InvalidInput, match="typed memory"):
        container.documents.batch(brain, [BatchOp(type="write", path=path, content=b"db-stage-3")])
    assert container.documents.read(brain, path) == b"The staging database is db-stage-1."
    kept = container.documents.get(brain, path)
    assert kept.memory is not None and kept.memory.type is MemoryType.fact and kept.memory.content_hash

    # What extraction writes: a fact's facet, no record holding its text's hash.
    extracted = DocumentInput(memory=MemoryFacet(type=MemoryType.fact, sector="semantic"))
    container.documents.write(brain, "memory/agent/x.md", b"Sam prefers tea.", extracted)
    container.documents.append(brain, "memory/agent/x.md", b" Green, at 80 degrees.")
    assert container.documents.read(brain, "memory/agent/x.md") == (b"Sam prefers tea. Green, at 80 degrees.")


def test_a_metadata_update_of_a_plain_note_keeps_its_bytes(container: Container, brain: Brain) -> None:
    import io

    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 30, 30)).save(picture, format="PNG")
    png = picture.getvalue()
    written = container.documents.write(
        brain, "pictures/red.png", png, DocumentInput(content_type="image/png", metadata={"a": "1"})
    ).document

    updated = container.memories.update(brain, written.id, metadata={"b": "2"})

    assert updated.fields == ["metadata"]
    assert container.documents.read(brain, "pictures/red.png") == png
    assert updated.memory.metadata["a"] == "1" and updated.memory.metadata["b"] == "2"


def test_an_update_tried_again_after_a_lost_commit_names_each_field_once(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.domain.models import MemoryType
    from cairn.services.memory.memory_model import MemoryInput

    stored = container.memories.store(brain, MemoryInput(type=MemoryType.fact, content="Tea at four."))
    container.documents.write(brain, "memory/global/coffee.md", b"Coffee at ten.")
    note = container.documents.repo.get(brain.id, "memory/global/coffee.md")
    assert note is not None
    modify = container.documents.modify

    def lost_once(brain: Brain, path: str, change: Callable[..., object], **kw: object) -> object:
        live = container.documents.repo.get(brain.id, path)
        change(live, container.documents.content(live))  # the attempt whose commit lost
        return modify(brain, path, change, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(container.documents, "modify", lost_once)
    typed = container.memories.update(brain, stored.memory.id, content="Tea at five.", importance=0.9)
    plain = container.memories.update(brain, note.id, content="Coffee at eleven.")

    assert typed.fields == ["content", "content_hash", "importance"]
    assert plain.fields == ["content"]
