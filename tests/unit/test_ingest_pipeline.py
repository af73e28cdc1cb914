"""write_many's pipeline (services/documents/service.py) under IngestService.ingest_files: a step's chunks
are embedded on a background thread while the steps before it are committed and linked, and the
stored result is exactly the one of ingesting the files one by one; errors stay per file, and an
interrupt leaves only whole documents."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import CairnError, InvalidInput
from cairn.domain.models import Brain
from cairn.ports.embedder import Vectors
from cairn.services.documents import bulk as documents_module
from cairn.services.documents.inputs import DeferredWrite, DocumentInput, WriteOutcome
from cairn.services.ingest.inputs import IngestResult, LocalFilePolicy
from tests.fakes.container import fake_container
from tests.unit.services.test_bulk_writes import PROSE, _corpus, _state

POLICY = LocalFilePolicy(root=None, max_bytes=1 << 20)


class Recorder:
    """The container's embedder and the stores' writers, noting calls, threads and order."""

    def __init__(self, container: Container) -> None:
        self.inner = container.documents.indexer.embedder
        self.events: list[tuple[str, str]] = []  # (what, thread name)
        self.lock = threading.Lock()
        self.gate: threading.Event | None = None  # the second embed() waits for it when set
        self.gate_opened: bool | None = None
        self.fail_on_call: int | None = None
        self.calls = 0
        container.documents.indexer.embedder = self
        index = container.documents.indexer.index
        upsert, transact = index.upsert, container.documents.repo.records.transact

        def noted_upsert(*args: Any, **kwargs: Any) -> Any:
            self._note("upsert")
            return upsert(*args, **kwargs)

        def noted_transact(*args: Any, **kwargs: Any) -> Any:
            self._note("transact")
            return transact(*args, **kwargs)

        index.upsert = noted_upsert  # type: ignore[method-assign]
        container.documents.repo.records.transact = noted_transact  # type: ignore[method-assign]
        link = container.ingest.link_concepts

        def noted_link(*args: Any, **kwargs: Any) -> None:
            self._note("link")
            link(*args, **kwargs)
            if self.gate is not None:
                self.gate.set()

        container.ingest.link_concepts = noted_link  # type: ignore[method-assign]

    def _note(self, what: str) -> None:
        with self.lock:
            self.events.append((what, threading.current_thread().name))

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self._note("embed")
        if self.fail_on_call == self.calls:
            raise RuntimeError("the embedder broke")
        if self.gate is not None and self.calls == 2:
            self.gate_opened = self.gate.wait(timeout=10)
        return self.inner.embed(texts)


def _one_by_one(root: Path, files: list[tuple[str, str]]) -> tuple[Container, Brain, list[Any]]:
    container = fake_container(root)
    brain = container.brains.create("Test brain", slug="test")
    results: list[IngestResult | CairnError] = []
    for file, target in files:
        try:
            results.append(container.ingest.ingest_file(brain, file, POLICY, target=target, queue=False))
        except CairnError as exc:
            results.append(exc)
    return container, brain, results


def _summary(results: Sequence[IngestResult | CairnError]) -> list[Any]:
    return [
        (r.path, r.chunk_count, r.embedded_count, r.reused) if isinstance(r, IngestResult) else r.code
        for r in results
    ]


@pytest.mark.parametrize("step_chunks", [1, 3, 10_000])
def test_pipelined_ingest_stores_what_one_by_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step_chunks: int
) -> None:
    files = _corpus(tmp_path / "files")
    for n in range(6):  # enough documents for several steps, some failing mid-step
        extra = tmp_path / "files" / "more" / f"m{n}.md"
        extra.parent.mkdir(exist_ok=True)
        extra.write_text(f"# More {n}\n\n" + PROSE * (n + 2))
        files.append((str(extra), f"ingest/more/m{n}.md"))
    files.insert(8, (str(tmp_path / "files" / "missing.md"), "ingest/missing.md"))
    single, single_brain, expected = _one_by_one(tmp_path / "single", files)

    monkeypatch.setattr(documents_module, "STEP_CHUNKS", step_chunks)
    bulk = fake_container(tmp_path / "bulk")
    bulk_brain = bulk.brains.create("Test brain", slug="test")
    recorder = Recorder(bulk)
    got = bulk.ingest.ingest_files(bulk_brain, files, POLICY)

    assert _summary(got) == _summary(expected)
    assert [r.code for r in got if isinstance(r, CairnError)] == ["unsupported_content", "not_found"]
    want, have = _state(single, single_brain), _state(bulk, bulk_brain)
    assert list(have) == list(want)
    for path, doc in want.items():
        assert have[path]["record"] == doc["record"], path
        assert have[path]["chunks"] == doc["chunks"], path
        np.testing.assert_allclose(have[path]["vectors"], doc["vectors"], atol=1e-6)
    # Embedding happens off the calling thread; every store write stays on it.
    embeds = [thread for what, thread in recorder.events if what == "embed"]
    assert embeds and all(thread != "MainThread" for thread in embeds)
    assert all(thread == "MainThread" for what, thread in recorder.events if what != "embed")
    if step_chunks == 1:  # one step per document: the linking of early ones overlaps later embedding
        order = [what for what, _ in recorder.events if what in ("embed", "link")]
        assert order.index("link") < len(order) - 1 - order[::-1].index("embed")


def test_a_step_is_embedded_while_the_one_before_is_linked(tmp_path: Path) -> None:
    files = []
    for n in range(3):
        file = tmp_path / f"d{n}.md"
        file.write_text(f"# Doc {n}\n\n" + PROSE * 3)
        files.append((str(file), f"ingest/d{n}.md"))
    container = fake_container(tmp_path / "store")
    brain = container.brains.create("Test brain", slug="test")
    recorder = Recorder(container)
    recorder.gate = threading.Event()
    results = container.documents.write_many(
        brain,
        [(target, Path(file).read_bytes(), DocumentInput()) for file, target in files],
        step_chunks=1,
        done=lambda n, outcome: (
            container.ingest.link_concepts(brain.id, outcome.document.id, "text", fresh=True)
            if isinstance(outcome, WriteOutcome)
            else None
        ),
    )
    assert all(isinstance(r, WriteOutcome) for r in results)
    # The second step's embedding waited for the first document to be linked, and got it.
    assert recorder.gate_opened is True


def test_the_next_step_is_embedded_while_the_one_before_still_is(tmp_path: Path) -> None:
    """Two steps embed at once: the next one is tokenized and its runs queued behind the runs of
    the one before, so the embedder's workers never wait between steps."""
    container = fake_container(tmp_path)
    brain = container.brains.create("Test brain", slug="test")
    inner = container.documents.indexer.embedder
    second_started = threading.Event()
    overlapped: list[bool] = []
    calls = iter(range(1, 1000))
    lock = threading.Lock()

    class Overlapping:
        model_id = inner.model_id
        dimension = inner.dimension

        def embed(self, texts: Sequence[str]) -> Vectors:
            with lock:
                call = next(calls)
            if call == 1:  # waits for the second step's embedding to begin
                overlapped.append(second_started.wait(timeout=10))
            elif call == 2:
                second_started.set()
            return inner.embed(texts)

    container.documents.indexer.embedder = Overlapping()
    items = [(f"p/{n}.md", (PROSE * 2).encode(), DocumentInput()) for n in range(4)]
    results = container.documents.write_many(brain, items, step_chunks=1)
    assert overlapped == [True]
    assert _whole(container, brain) == [f"p/{n}.md" for n in range(4)]
    assert all(isinstance(r, WriteOutcome) for r in results)


def test_done_is_called_in_order_outside_the_locks_and_a_write_in_between_is_not_lost(
    tmp_path: Path,
) -> None:
    container = fake_container(tmp_path)
    brain = container.brains.create("Test brain", slug="test")
    items = [(f"p/{n}.md", (PROSE * (n + 1)).encode(), DocumentInput()) for n in range(4)]
    seen: list[int] = []

    def done(n: int, outcome: WriteOutcome | CairnError) -> None:
        seen.append(n)
        if n == 0:  # p/1.md is staged by now: another writer changes it before its commit
            container.documents.write(brain, "p/1.md", b"# Other\n\nwritten in between")

    results = container.documents.write_many(brain, items, step_chunks=1, done=done)

    assert seen == [0, 1, 2, 3]
    assert all(isinstance(r, WriteOutcome) for r in results)
    doc = container.documents.get(brain, "p/1.md")
    assert doc.version == 2 and container.documents.read(brain, "p/1.md") == items[1][1]
    chunks = container.documents.indexer.index.get_chunks(brain.id, doc.id)
    assert len(chunks) == doc.chunk_count and all("in between" not in c.text for c in chunks)


def test_a_deferred_write_that_fails_is_reported_in_its_place(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    brain = container.brains.create("Test brain", slug="test")

    def broken() -> tuple[bytes, DocumentInput]:
        raise InvalidInput("cannot extract")

    items: list[tuple[str, bytes, DocumentInput] | DeferredWrite] = [
        DeferredWrite("a.md", lambda: (PROSE.encode(), DocumentInput())),
        DeferredWrite("b.md", broken),
        ("c.md", PROSE.encode(), DocumentInput()),
    ]
    results = container.documents.write_many(brain, items, step_chunks=1)
    assert isinstance(results[0], WriteOutcome) and isinstance(results[2], WriteOutcome)
    assert isinstance(results[1], InvalidInput)
    assert [d.path for d in container.documents.documents(brain)] == ["a.md", "c.md"]


def _whole(container: Container, brain: Brain) -> list[str]:
    """The stored documents' paths, checking each has all its chunks and their vectors."""
    index = container.documents.indexer.index
    paths = []
    for doc in container.documents.documents(brain):
        chunks = index.get_chunks(brain.id, doc.id)
        assert len(chunks) == doc.chunk_count > 0, doc.path
        assert len(index.get_vectors(brain.id, [c.id for c in chunks])) == doc.chunk_count, doc.path
        paths.append(doc.path)
    return paths


def test_an_interrupt_leaves_whole_documents_and_stops_embedding(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    brain = container.brains.create("Test brain", slug="test")
    recorder = Recorder(container)
    items = [(f"p/{n}.md", (PROSE * 2).encode(), DocumentInput()) for n in range(8)]

    def done(n: int, outcome: WriteOutcome | CairnError) -> None:
        if n == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        container.documents.write_many(brain, items, step_chunks=1, done=done)
    threading.Event().wait(0.2)  # a step still embedding finishes; none after it starts
    assert recorder.calls <= 5  # steps 0-2 committed, 3 embedding, 4 possibly started
    assert _whole(container, brain) == ["p/0.md", "p/1.md", "p/2.md"]
    assert not [t for t in threading.enumerate() if t.name.startswith("write-many-embed")]


def test_an_embedding_failure_keeps_the_committed_steps_whole(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    brain = container.brains.create("Test brain", slug="test")
    recorder = Recorder(container)
    recorder.fail_on_call = 3
    items = [(f"p/{n}.md", (PROSE * 2).encode(), DocumentInput()) for n in range(6)]
    with pytest.raises(RuntimeError, match="embedder broke"):
        container.documents.write_many(brain, items, step_chunks=1)
    assert _whole(container, brain) == ["p/0.md", "p/1.md"]


def test_images_between_documents_are_captioned_as_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.services.test_image_items import jpeg

    root = tmp_path / "files"
    (root / "img").mkdir(parents=True)
    (root / "a.md").write_text("# Birds\n\n![A heron on the weir](img/heron.jpg)\n\n" + PROSE)
    (root / "img" / "heron.jpg").write_bytes(jpeg("Mist over the river"))
    (root / "b.md").write_text("# More birds\n\n![The heron again](img/heron.jpg)\n\n" + PROSE * 2)
    (root / "c.md").write_text("# Herons\n\n" + PROSE * 3)
    files = [(str(root / name), f"ingest/{name}") for name in ("a.md", "img/heron.jpg", "b.md", "c.md")]
    single, single_brain, expected = _one_by_one(tmp_path / "single", files)

    monkeypatch.setattr(documents_module, "STEP_CHUNKS", 1)
    bulk = fake_container(tmp_path / "bulk")
    bulk_brain = bulk.brains.create("Test brain", slug="test")
    got = bulk.ingest.ingest_files(bulk_brain, files, POLICY)

    assert _summary(got) == _summary(expected)
    image = bulk.documents.get(bulk_brain, "ingest/img/heron.jpg")
    assert image.version == 2  # b.md, written after it, re-captioned it from within the pipeline
    assert "The heron again" in str(image.metadata["image_captions"])
    want, have = _state(single, single_brain), _state(bulk, bulk_brain)
    assert list(have) == list(want)
    for path, doc in want.items():
        assert have[path]["record"] == doc["record"], path
        assert have[path]["chunks"] == doc["chunks"], path
