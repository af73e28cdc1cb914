"""Rewrites of a document embed only the chunks whose text changed, and leave the chunk index
exactly as a full re-index of the final text would (on the in-memory fake and on SQLite)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Chunk, Document
from cairn.ingest import chunking
from cairn.ingest.chunking import Chunked
from cairn.ports.chunks import ChunkFilter, ChunkHit, ChunkQuery
from cairn.ports.embedder import Vectors
from cairn.services.documents import indexing
from cairn.services.documents.chunk_ids import chunk_id, parse_chunk_id, staged_chunk_id
from cairn.services.documents.indexing import REMEMBERED_FROM_CHARS, DocumentIndexer
from cairn.services.documents.inputs import BatchOp, DocumentInput, keep_info
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.container import fake_adapters
from tests.fakes.embedder import HashingEmbedder
from tests.support.documents import a_document
from tests.support.threads import run_together

DOC_ID = "doc_rewritten"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "we", "zu", "bra", "cho", "dri", "fle"]


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, remembering every text it was asked to embed."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        return super().embed(texts)

    def taken(self) -> int:
        count, self.texts = len(self.texts), []
        return count


SETTINGS_OF: dict[int, Settings] = {}  # what each container was built with, to build it again


def build(tmp_path: Path, kind: str, name: str) -> tuple[Container, CountingEmbedder]:
    adapters = fake_adapters()
    embedder = CountingEmbedder(adapters.embedder.dimension)
    adapters.embedder = embedder
    if kind == "sqlite":
        adapters.chunks = SqliteChunkIndex(tmp_path / f"{name}.db", tmp_path / f"{name}-vectors", 64)
    settings = Settings(data_dir=tmp_path / name, chunk_target_chars=300, chunk_overlap_chars=60)
    container = build_container(settings, adapters)
    SETTINGS_OF[id(container)] = settings
    return container, embedder


def words(rng: random.Random, n: int) -> str:
    return " ".join("".join(rng.choices(SYLLABLES, k=rng.randint(1, 3))) for _ in range(n))


def notes(rng: random.Random, paragraphs: int) -> str:
    parts = ["# Field notes"]
    for i in range(paragraphs):
        if i % 6 == 0:
            parts.append(f"## Part {i // 6}")
        parts.append(
            ". ".join(words(rng, rng.randint(4, 14)).capitalize() for _ in range(rng.randint(1, 4))) + "."
        )
    return "\n\n".join(parts) + "\n"


def appended(rng: random.Random) -> str:
    """A line, a paragraph, a new section, or a word carried on without a break."""
    return rng.choice(
        [
            f"- {words(rng, 6)}\n",
            f"\n{words(rng, 25).capitalize()}.\n",
            f"\n## Later {words(rng, 2)}\n\n{words(rng, 12)}.\n",
            words(rng, 3),
        ]
    )


def hits(container: Container, brain: Brain, text: str) -> list[ChunkHit]:
    vector = container.adapters.embedder.embed([text])[0].tolist()
    query = ChunkQuery(
        text=text, vector=vector, filter=ChunkFilter((brain.id,)), top_k=200, candidate_pool=200
    )
    return container.adapters.chunks.search(query)


def assert_same_index(a: Container, brain_a: Brain, b: Container, brain_b: Brain, queries: list[str]) -> None:
    def chunks(container: Container, brain: Brain) -> list[Chunk]:
        found = container.adapters.chunks.get_chunks(brain.id, DOC_ID)
        return [c.model_copy(update={"brain_id": "", "fingerprint": ""}) for c in found]  # brains differ

    assert chunks(a, brain_a) == chunks(b, brain_b)
    for text in queries:
        got, want = hits(a, brain_a, text), hits(b, brain_b, text)
        assert [(h.chunk.id, h.bm25_rank, h.vector_rank) for h in got] == [
            (h.chunk.id, h.bm25_rank, h.vector_rank) for h in want
        ]
        assert [(h.score, h.bm25_score, h.vector_similarity) for h in got] == [
            pytest.approx((h.score, h.bm25_score, h.vector_similarity)) for h in want
        ]


@pytest.mark.parametrize("restart", [False, True], ids=["warm", "restarted"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_search_after_appends_equals_search_after_a_full_reindex(
    tmp_path: Path, kind: str, restart: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    reused = spy_on_chunking(monkeypatch)
    rng = random.Random(11)
    # Given a document (25 KB: its chunking is kept in memory) appended to 16 times, with a
    # restart halfway that forgets that chunking
    a, _ = build(tmp_path, kind, "appended")
    brain_a = a.brains.create("Notes", slug="notes")
    others = {f"notes/other-{i}.md": notes(rng, 8).encode() for i in range(2)}
    for i, (path, data) in enumerate(others.items()):
        a.documents.write(brain_a, path, data, DocumentInput(doc_id=f"doc_other{i}"))
    text = notes(rng, 250)
    assert len(text) > REMEMBERED_FROM_CHARS
    a.documents.write(brain_a, "notes/log.md", text.encode(), DocumentInput(doc_id=DOC_ID))
    reused.clear()
    for i in range(16):
        if restart and i == 8:
            a = build_container(SETTINGS_OF[id(a)], a.adapters)
        line = appended(rng)
        a.documents.append(brain_a, "notes/log.md", line.encode())
        text += line
    assert sum(1 for n in reused if n > 0) == (15 if restart else 16)  # appends that extended a chunking
    # When the final text is written once into a fresh store
    b, _ = build(tmp_path, kind, "fresh")
    brain_b = b.brains.create("Notes", slug="notes")
    for i, (path, data) in enumerate(others.items()):
        b.documents.write(brain_b, path, data, DocumentInput(doc_id=f"doc_other{i}"))
    b.documents.write(brain_b, "notes/log.md", text.encode(), DocumentInput(doc_id=DOC_ID))
    # Then both hold the same chunks and answer every search with the same hits and scores
    assert a.documents.read(brain_a, "notes/log.md") == text.encode()
    queries = [words(random.Random(q), 3) for q in range(12)] + ["later part field notes"]
    assert_same_index(a, brain_a, b, brain_b, queries)


def spy_on_chunking(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many spans each chunking the indexer does takes from the previous one."""
    reused: list[int] = []

    def spied(*args: Any, **kwargs: Any) -> Chunked:
        chunked = chunking.chunk(*args, **kwargs)
        reused.append(chunked.reused)
        return chunked

    monkeypatch.setattr(indexing, "chunk", spied)
    return reused


def test_documents_past_the_memory_budget_are_cut_afresh_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    reused = spy_on_chunking(monkeypatch)
    rng = random.Random(12)
    texts = {name: notes(rng, 250) for name in ("a", "b")}
    room_for_one = len(texts["a"]) + 100
    budget = DocumentIndexer(
        MemoryChunkIndex(64),
        CountingEmbedder(),
        target_chars=300,
        overlap_chars=60,
        remembered_chars=room_for_one,
    )
    roomy = DocumentIndexer(MemoryChunkIndex(64), CountingEmbedder(), target_chars=300, overlap_chars=60)
    docs = {name: document(f"doc_{name}", f"{name}.md") for name in texts}
    for step in range(6):
        name = "ab"[step % 2]
        texts[name] += f"- line {step}\n"
        for indexer in (budget, roomy):
            indexer.apply(docs[name], indexer.prepare(docs[name], texts[name]))
    # The indexer with room for one document cut every text afresh; both indexes hold the same
    by_budget, by_roomy = reused[0::2], reused[1::2]
    assert by_budget == [0] * 6 and by_roomy[:2] == [0, 0] and min(by_roomy[2:]) > 0
    for name in texts:
        assert budget.index.get_chunks("b1", f"doc_{name}") == roomy.index.get_chunks("b1", f"doc_{name}")


def document(doc_id: str, path: str) -> Document:
    return a_document(doc_id, path, when=T0)


def test_appending_a_line_embeds_only_the_chunks_it_changed(tmp_path: Path) -> None:
    rng = random.Random(3)
    container, embedder = build(tmp_path, "memory", "store")
    brain = container.brains.create("Notes", slug="notes")
    container.documents.write(brain, "notes/log.md", notes(rng, 80).encode())
    assert embedder.taken() == container.documents.get(brain, "notes/log.md").chunk_count > 40
    for i in range(10):
        container.documents.append(brain, "notes/log.md", f"- {words(rng, 6)} {i}\n".encode())
        assert embedder.taken() <= 2
    batch = [BatchOp(type="append", path="notes/log.md", content=b"- appended by a batch\n")]
    container.documents.batch(brain, batch)
    assert embedder.taken() <= 2


def test_rewrites_reuse_the_vectors_of_unchanged_text(tmp_path: Path) -> None:
    rng = random.Random(4)
    container, embedder = build(tmp_path, "memory", "store")
    docs = container.documents
    brain = container.brains.create("Notes", slug="notes")
    text = notes(rng, 40)
    docs.write(brain, "notes/a.md", text.encode())
    embedder.taken()
    # An edit near the start shifts every later chunk's offsets but not its text
    paragraph = text.split("\n\n")[2]
    docs.write(brain, "notes/a.md", text.replace(paragraph, paragraph + " Inserted words.", 1).encode())
    # (only chunks of the edited section can change)
    assert 1 <= embedder.taken() <= 6 < docs.get(brain, "notes/a.md").chunk_count // 4
    # A rename, new tags, a memory facet change: no text changes, nothing is embedded
    docs.rename(brain, "notes/a.md", "notes/b.md")
    assert embedder.taken() == 0
    docs.modify(brain, "notes/b.md", lambda doc, data: (data or b"", replace(keep_info(doc), tags=["kept"])))
    assert embedder.taken() == 0
    chunks = container.adapters.chunks.get_chunks(brain.id, docs.get(brain, "notes/b.md").id)
    assert {c.path for c in chunks} == {"notes/b.md"} and all(c.tags == ["kept"] for c in chunks)
    assert container.search.search(brain, "inserted words", tags=["kept"]).hits[0].path == "notes/b.md"


def test_an_index_that_lost_a_write_is_repaired_by_the_next_append(tmp_path: Path) -> None:
    rng = random.Random(5)
    container, _ = build(tmp_path, "memory", "store")
    brain = container.brains.create("Notes", slug="notes")
    text = notes(rng, 20)
    container.documents.write(brain, "notes/log.md", text.encode(), DocumentInput(doc_id=DOC_ID))
    index = container.adapters.chunks
    # Given an index that missed part of a write: a stale chunk and a missing one
    stale = index.get_chunks(brain.id, DOC_ID)[1].model_copy(
        update={"text": "stale words", "fingerprint": ""}
    )
    index.upsert([stale], np.ones((1, 64), np.float32))
    index.delete_chunks(brain.id, [chunk_id(DOC_ID, 3)])
    # When a line is appended
    container.documents.append(brain, "notes/log.md", b"- one more line\n")
    # Then the index is what a full re-index of the text gives
    fresh, _ = build(tmp_path, "memory", "fresh")
    fresh_brain = fresh.brains.create("Notes", slug="notes")
    fresh.documents.write(
        fresh_brain, "notes/log.md", (text + "- one more line\n").encode(), DocumentInput(doc_id=DOC_ID)
    )
    assert_same_index(container, brain, fresh, fresh_brain, ["stale words", words(rng, 3)])


def test_chunks_indexed_without_fingerprints_are_embedded_again_once(tmp_path: Path) -> None:
    rng = random.Random(6)
    container, embedder = build(tmp_path, "memory", "store")
    brain = container.brains.create("Notes", slug="notes")
    container.documents.write(brain, "notes/log.md", notes(rng, 20).encode())
    doc = container.documents.get(brain, "notes/log.md")
    index = container.adapters.chunks
    # Given chunks as an earlier version indexed them: no fingerprints
    old = [c.model_copy(update={"fingerprint": ""}) for c in index.get_chunks(brain.id, doc.id)]
    vectors = index.get_vectors(brain.id, [c.id for c in old])
    index.upsert(old, np.stack([vectors[c.id] for c in old]))
    embedder.taken()
    # When lines are appended / Then the first append embeds the document again, the next ones don't
    container.documents.append(brain, "notes/log.md", b"- first\n")
    assert embedder.taken() == container.documents.get(brain, "notes/log.md").chunk_count
    container.documents.append(brain, "notes/log.md", b"- second\n")
    assert embedder.taken() <= 2


def test_context_stays_with_a_rewritten_first_chunk(tmp_path: Path) -> None:
    container, _ = build(tmp_path, "memory", "store")
    docs = container.documents
    brain = container.brains.create("Chat", slug="chat")
    docs.write(brain, "chat/1.md", b"Alice: how is the marathon training going?")
    docs.write(brain, "chat/2.md", b"Bob: great, my knees finally stopped hurting")
    doc = docs.get(brain, "chat/2.md")

    def context() -> str:
        return container.adapters.chunks.get_chunks(brain.id, doc.id)[0].context

    assert context() == "Alice: how is the marathon training going?"
    docs.append(brain, "chat/2.md", b" Thanks for asking.")  # one chunk: the first is rewritten
    assert context() == "Alice: how is the marathon training going?"
    docs.write(brain, "chat/2.md", b"Bob: " + b"All good here. " * 60)  # many chunks now
    docs.append(brain, "chat/2.md", b"\nSee you Sunday.")  # the first chunk is left alone
    assert context() == "Alice: how is the marathon training going?"


def staged_ids(container: Container, doc: Document) -> list[str]:
    return [c.id for c in container.adapters.chunks.get_chunks(doc.brain_id, doc.id)]


def test_an_append_after_a_staged_ingest_reuses_its_vectors(tmp_path: Path) -> None:
    from tests.unit.test_staged_ingest import queued, run_steps

    adapters = fake_adapters()
    embedder = CountingEmbedder(adapters.embedder.dimension)
    adapters.embedder = embedder
    settings = Settings(data_dir=tmp_path / "data", ingest_queue_bytes=64, chunk_target_chars=200)
    container = build_container(settings, adapters)
    job, staged = queued(container)
    result = run_steps(staged, job)
    brain = container.brains.get(job.brain_id or "")
    doc = container.documents.record_by_id(brain, result["document_id"])
    embedder.taken()
    (stage,) = {ref.stage for ref in map(parse_chunk_id, staged_ids(container, doc)) if ref}
    assert stage  # the activated version's chunks keep their staged ids
    # When a line is appended to the staged version / Then its chunks keep the staged ids (what is
    # keyed by them stays theirs), and only the chunks whose text changed are embedded
    container.documents.append(brain, doc.path, b"\nRadiator valve 6 is new.\n")
    chunks = container.adapters.chunks.get_chunks(brain.id, doc.id)
    assert [c.id for c in chunks] == [staged_chunk_id(doc.id, stage, i) for i in range(len(chunks))]
    assert all(c.active for c in chunks)
    assert embedder.taken() <= 2


def test_a_metadata_change_leaves_the_chunks_untouched(tmp_path: Path) -> None:
    container, embedder = build(tmp_path, "memory", "store")
    brain = container.brains.create("Notes", slug="notes")
    docs = container.documents
    docs.write(brain, "notes/a.md", notes(random.Random(7), 10).encode())
    index = container.adapters.chunks
    assert isinstance(index, MemoryChunkIndex)
    written = {key: item.seq for key, item in index.items.items()}  # a write gives a chunk a new seq
    embedder.taken()
    # When only metadata that chunks do not copy changes
    docs.modify(brain, "notes/a.md", lambda doc, data: (data or b"", keep_info(doc, metadata={"k": "v"})))
    # Then the record changed, and no chunk was embedded or written
    assert docs.get(brain, "notes/a.md").metadata == {"k": "v"}
    assert embedder.taken() == 0
    assert {key: item.seq for key, item in index.items.items()} == written


def test_concurrent_appenders_lose_no_line_and_leave_a_full_reindex(tmp_path: Path) -> None:
    rng = random.Random(13)
    a, _ = build(tmp_path, "sqlite", "appended")
    brain = a.brains.create("Notes", slug="notes")
    text = notes(rng, 250)
    a.documents.write(brain, "notes/log.md", text.encode(), DocumentInput(doc_id=DOC_ID))
    errors: list[BaseException] = []

    def appender(writer: int) -> None:
        try:
            for i in range(8):
                a.documents.append(brain, "notes/log.md", f"- writer {writer} line {i}\n".encode())
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    run_together(appender, range(4))
    assert errors == []
    final = a.documents.read(brain, "notes/log.md").decode()
    assert sorted(final[len(text) :].splitlines()) == sorted(
        f"- writer {w} line {i}" for w in range(4) for i in range(8)
    )
    b, _ = build(tmp_path, "sqlite", "fresh")
    fresh = b.brains.create("Notes", slug="notes")
    b.documents.write(fresh, "notes/log.md", final.encode(), DocumentInput(doc_id=DOC_ID))
    assert_same_index(a, brain, b, fresh, [words(rng, 3) for _ in range(4)])
