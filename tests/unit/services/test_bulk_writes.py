"""Bulk ingest (IngestService.ingest_files, DocumentService.write_many) and batch-ops embed the
new chunks of many documents together, and end exactly as writing them one by one does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cairn.adapters.local.onnx_embedder import OnnxEmbedder
from cairn.bootstrap import Container
from cairn.domain.errors import CairnError
from cairn.domain.models import Brain
from cairn.ports.embedder import Vectors
from cairn.services.documents.indexing import embedding_key
from cairn.services.documents.inputs import BatchOp
from cairn.services.ingest.inputs import IngestResult, LocalFilePolicy
from cairn.services.mnemosyne.concepts import CONCEPT
from tests.fakes.container import fake_container
from tests.support.stored_bytes import unnamed_bytes

PROSE = (
    "Alice Walker moved the Harbor Service to Kubernetes in March. The GDPR review found that the "
    "Billing Ledger kept card numbers, so Bob Stone rewrote it in Rust before the London launch. "
)


class CountingEmbedder:
    """The container's embedder, counting its calls and keeping the texts it was given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[int] = []
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        self.texts += texts
        return self.inner.embed(texts)


def _counting(container: Container) -> CountingEmbedder:
    counting = CountingEmbedder(container.documents.indexer.embedder)
    container.documents.indexer.embedder = counting
    return counting


def _corpus(root: Path) -> list[tuple[str, str]]:
    """Files to ingest with their document paths: siblings in one folder, a long document, a file
    that fails, and a path written twice (the later file wins, as one by one)."""
    (root / "notes").mkdir(parents=True)
    files: list[tuple[str, str]] = []
    for n in range(5):
        file = root / "notes" / f"n{n}.md"
        file.write_text(f"# Note {n}\n\n" + PROSE * (n * 4 + 1))
        files.append((str(file), f"ingest/notes/n{n}.md"))
    (root / "broken.bin").write_bytes(b"\x00\x01\x02binary")
    files.insert(2, (str(root / "broken.bin"), "ingest/broken.bin"))
    (root / "again.md").write_text("# Again\n\nThe second version of note one, about Rust.")
    files.append((str(root / "again.md"), "ingest/notes/n1.md"))
    return files


def _state(container: Container, brain: Brain) -> dict[str, Any]:
    """Documents, chunks (by path and ordinal: ids embed the random document id), vectors and
    concept links, comparable across containers."""
    state: dict[str, Any] = {}
    chunks, links = container.documents.indexer.index, container.concepts.links
    for doc in container.documents.documents(brain):
        rows = chunks.get_chunks(brain.id, doc.id)
        vectors = chunks.get_vectors(brain.id, [c.id for c in rows])
        state[doc.path] = {
            "record": (doc.title, doc.checksum_sha256, doc.chunk_count, doc.content_type, doc.metadata),
            "chunks": [
                (
                    c.id.removeprefix(f"chk_{doc.id.removeprefix('doc_')}"),
                    c.text,
                    c.title,
                    embedding_key(c.fingerprint),  # the rest digests the random document id
                    c.context,
                    sorted(link.target_id for link in links.outgoing(brain.id, c.id, CONCEPT)),
                )
                for c in rows
            ],
            "vectors": np.stack([vectors[c.id] for c in rows]),
        }
    return state


def test_bulk_ingest_ends_as_one_by_one_and_embeds_once_per_group(tmp_path: Path) -> None:
    files = _corpus(tmp_path / "files")
    policy = LocalFilePolicy(root=None, max_bytes=1 << 20)

    single = fake_container(tmp_path / "single")
    single_brain = single.brains.create("Test brain", slug="test")
    one_by_one: list[IngestResult | CairnError] = []
    for file, target in files:
        try:
            one_by_one.append(
                single.ingest.ingest_file(single_brain, file, policy, target=target, queue=False)
            )
        except CairnError as exc:
            one_by_one.append(exc)

    bulk = fake_container(tmp_path / "bulk")
    bulk_brain = bulk.brains.create("Test brain", slug="test")
    counting = _counting(bulk)
    together = bulk.ingest.ingest_files(bulk_brain, files, policy)

    assert [type(r) for r in together] == [type(r) for r in one_by_one]
    assert isinstance(together[2], CairnError) and "broken.bin" not in _state(bulk, bulk_brain)
    assert [(r.path, r.chunk_count, r.reused) for r in together if isinstance(r, IngestResult)] == [
        (r.path, r.chunk_count, r.reused) for r in one_by_one if isinstance(r, IngestResult)
    ]
    # The repeated path splits the files in two groups: two embedding calls, not one per document,
    # and a text the notes repeat (PROSE) is embedded once.
    assert len(counting.calls) == 2 and len(counting.texts) == len(set(counting.texts))
    assert sum(counting.calls) < sum(r.embedded_count for r in together if isinstance(r, IngestResult))

    expected, got = _state(single, single_brain), _state(bulk, bulk_brain)
    assert got.keys() == expected.keys()
    assert "Rust" in " ".join(c[1] for c in got["ingest/notes/n1.md"]["chunks"])  # the later file won
    assert any(c[4] for doc in got.values() for c in doc["chunks"])  # sibling context was given
    assert any(c[5] for doc in got.values() for c in doc["chunks"])  # concepts were linked
    for path, doc in expected.items():
        assert got[path]["record"] == doc["record"], path
        assert got[path]["chunks"] == doc["chunks"], path
        np.testing.assert_allclose(got[path]["vectors"], doc["vectors"], atol=1e-6)


def test_ingest_files_reports_each_file_as_it_is_settled(tmp_path: Path) -> None:
    files = _corpus(tmp_path / "files")
    bulk = fake_container(tmp_path / "bulk")
    brain = bulk.brains.create("Test brain", slug="test")
    seen: list[tuple[int, IngestResult | CairnError]] = []
    got = bulk.ingest.ingest_files(
        brain, files, LocalFilePolicy(root=None, max_bytes=1 << 20), lambda n, r: seen.append((n, r))
    )
    assert sorted(n for n, _ in seen) == list(range(len(files)))  # each file once
    assert [r for _, r in sorted(seen, key=lambda pair: pair[0])] == got
    assert seen[0][0] == 2  # the unreadable file is settled first, before any document commits


def test_write_many_reports_a_failing_document_and_writes_the_others(
    container: Container, brain: Brain
) -> None:
    from cairn.services.documents.inputs import DocumentInput, WriteOutcome

    items = [
        ("a.md", b"alpha", DocumentInput()),
        ("../escape.md", b"no", DocumentInput()),
        ("b.md", b"beta", DocumentInput()),
    ]
    outcomes = container.documents.write_many(brain, items)
    assert isinstance(outcomes[0], WriteOutcome) and isinstance(outcomes[2], WriteOutcome)
    assert isinstance(outcomes[1], CairnError)
    assert [d.path for d in container.documents.documents(brain)] == ["a.md", "b.md"]


def test_a_bulk_write_staged_before_another_writer_leaves_none_of_its_first_bytes(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.services.documents.inputs import DocumentInput

    docs = container.documents
    docs.write(brain, "a.md", b"alpha")
    commit_entry = docs._commit_entry

    def written_meanwhile(*args: Any, **kwargs: Any) -> Any:  # between its staging and its commit
        docs.write(brain, "a.md", b"theirs")
        return commit_entry(*args, **kwargs)

    monkeypatch.setattr(docs, "_commit_entry", written_meanwhile)
    docs.write_many(brain, [("a.md", b"mine", DocumentInput())])

    assert docs.read(brain, "a.md") == b"mine"
    assert unnamed_bytes(container, brain, ["a.md"]) == set()  # the bytes staged first went


def test_batch_ops_embed_their_documents_together_and_stay_atomic(container: Container, brain: Brain) -> None:
    counting = _counting(container)
    ops = [BatchOp("write", f"b/{n}.md", (PROSE * (n + 1)).encode()) for n in range(4)]
    assert container.documents.batch(brain, ops) == 4
    assert len(counting.calls) == 1 and counting.calls[0] >= 4

    counting.calls.clear()
    failing = [BatchOp("write", "c/new.md", PROSE.encode()), BatchOp("delete", "c/missing.md")]
    with pytest.raises(CairnError):
        container.documents.batch(brain, failing)
    assert not container.documents.exists(brain, "c/new.md") and counting.calls == []


def test_batch_ops_log_their_throughput(
    container: Container, brain: Brain, caplog: pytest.LogCaptureFixture
) -> None:
    ops = [BatchOp("write", f"t/{n}.md", (PROSE * (n + 2)).encode()) for n in range(3)]
    with caplog.at_level("INFO", logger="cairn.services.documents"):
        container.documents.batch(brain, ops)
        docs = [container.documents.get(brain, f"t/{n}.md") for n in range(3)]
        chunks = sum(len(container.adapters.chunks.get_chunks(brain.id, d.id)) for d in docs)
        container.documents.batch(brain, [BatchOp("delete", "t/0.md")])  # nothing to embed: no line
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("batch-ops")]
    assert len(lines) == 1 and chunks >= 3
    assert lines[0].startswith(f"batch-ops on {brain.slug}: 3 ops, 3 documents, {chunks} chunks prepared in ")
    assert lines[0].endswith(" chunks/s)")


def test_parallel_runs_give_the_vectors_of_one_run_at_a_time() -> None:
    texts = [PROSE[: 40 + 37 * n] for n in range(6)]
    alone = OnnxEmbedder(threads=1).embed(texts)
    parallel = OnnxEmbedder(threads=1, workers=3).embed(texts)
    np.testing.assert_allclose(parallel, alone, atol=1e-6)


def test_the_served_embedder_runs_one_thread_a_text_and_one_text_a_core_unless_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cairn.bootstrap.models import local_embedder
    from cairn.config import Settings

    monkeypatch.setattr("os.cpu_count", lambda: 4)

    def configured(settings: Settings) -> tuple[int, int]:
        embedder = local_embedder(settings)
        assert isinstance(embedder, OnnxEmbedder)
        return embedder._threads, embedder._workers

    assert configured(Settings()) == (1, 4)
    assert configured(Settings(onnx_threads=2)) == (2, 1)
    assert configured(Settings(onnx_workers=6)) == (1, 6)


def test_a_passage_many_documents_repeat_is_embedded_once(tmp_path: Path) -> None:
    """Documents that repeat a licence word for word: its chunks' text is embedded once in the
    whole pipeline (across steps too), and every document gets the vectors one by one gives."""
    from cairn.services.documents.inputs import DocumentInput

    licence = "# Licence\n\n" + "Permission is hereby granted to use this software freely. " * 30
    items = [
        (
            f"pkg{n}.md",
            (licence if n % 2 else f"# Package {n}\n\n" + PROSE * (n + 1)).encode(),
            DocumentInput(),
        )
        for n in range(6)
    ]
    single = fake_container(tmp_path / "single")
    single_brain = single.brains.create("Test brain", slug="test")
    for path, data, info in items:
        single.documents.write(single_brain, path, data, info)

    bulk = fake_container(tmp_path / "bulk")
    bulk_brain = bulk.brains.create("Test brain", slug="test")
    texts = _counting(bulk).texts
    bulk.documents.write_many(bulk_brain, items, step_chunks=1)  # a step per document

    assert len(texts) == len(set(texts))  # no text embedded twice
    want, have = _state(single, single_brain), _state(bulk, bulk_brain)
    assert list(have) == list(want)
    for path, doc in want.items():
        assert have[path]["chunks"] == doc["chunks"], path
        np.testing.assert_allclose(have[path]["vectors"], doc["vectors"], atol=1e-6)
    repeated = [text for text in texts if "Permission is hereby granted" in text]
    assert repeated and len(repeated) == len(have["pkg1.md"]["chunks"])  # embedded for pkg1 only
    np.testing.assert_array_equal(have["pkg5.md"]["vectors"], have["pkg1.md"]["vectors"])
