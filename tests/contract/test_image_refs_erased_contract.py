"""No caption of an erased or deleted document outlives it, on every record store, however its
ingest interleaves with the erasure (services/mnemosyne/image_items.py).

An ingest records the image references a document shows after its write commits, with nothing
the erase's commit could check. So the erasure (or a plain delete) can run to its end, its
`follow` included, between the ingest's commit and its record (the fault point `ingest.written`):
the references recorded then name a document that is gone, and hold its alt text and caption. The
recorder reads the document before writing and back after, and removes them when it no longer
stands as written. Each test reads every record the store holds afterwards and looks for the
caption's words (test_image_refs_races_contract.py: two ingests racing)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from cairn import faults
from cairn.auth import access
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from cairn.ports.records import RecordStore
from cairn.services.documents.inputs import DocumentInput
from cairn.services.mnemosyne.image_items import Prepared
from cairn.services.mnemosyne.image_refs import by_document, by_image, image_refs_prefix
from tests.fakes.container import fake_adapters
from tests.support.store_words import words_held

AGENT = "ada"
REPORT = f"memory/agent/{AGENT}/report.md"
IMAGE = "ingest/img/heron.jpg"  # outside the agent's scope: it outlives the erasure
WORDS = ("globex", "quillmarsh")


def shown(alt: str) -> bytes:
    return f"# Report\n\n![{alt}](/{IMAGE})\n".encode()


SECRET = shown("Figure 1: secret merger with Globex")
EARLIER = shown("Figure 1: the Quillmarsh plan")


def jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), (90, 90, 90)).save(buffer, "JPEG")
    return buffer.getvalue()


def shore(c: Container) -> Brain:
    with access.as_system():
        brain = c.brains.create("Shore", slug="shore")
        ingest(c, brain, IMAGE, jpeg())
    return brain


def ingest(c: Container, brain: Brain, path: str, data: bytes) -> None:
    with access.as_system():
        c.ingest.ingest_bytes(brain, data, name=path.rsplit("/", 1)[-1], path=path, queue=False)


def erased(c: Container, brain: Brain) -> Callable[[], None]:
    def erase() -> None:
        with access.as_system():
            receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
        assert receipt.removed["documents"] == 1

    return erase


def deleted(c: Container, brain: Brain) -> Callable[[], None]:
    def delete() -> None:
        with access.as_system():
            c.documents.delete(brain, REPORT)

    return delete


def words_kept(records: RecordStore) -> set[str]:
    """The captions' words any record of the store still holds (every partition read)."""
    return words_held(records, WORDS)


def refs_kept(records: RecordStore, brain: Brain) -> list[tuple[str, str]]:
    page = records.scan([image_refs_prefix(brain.id)])
    return [(item.pk, item.sk) for item in page.items]


def captions(c: Container, brain: Brain) -> list[str]:
    with access.as_system():
        return list(json.loads(str(c.documents.get(brain, IMAGE).metadata["image_captions"])))


def image_text(c: Container, brain: Brain) -> str:
    with access.as_system():
        doc = c.documents.get(brain, IMAGE)
    return "\n".join(chunk.text for chunk in c.adapters.chunks.get_chunks(brain.id, doc.id)).lower()


def test_the_references_are_in_the_store_before_the_erasure(c: Container) -> None:
    brain = shore(c)
    ingest(c, brain, REPORT, SECRET)
    assert words_kept(c.adapters.records) == {"globex"}
    assert captions(c, brain) == ["Figure 1: secret merger with Globex"]


@pytest.mark.parametrize("how", [erased, deleted])
def test_references_recorded_after_the_erasure_and_its_follow_are_taken_back(
    c: Container, how: Callable[[Container, Brain], Callable[[], None]]
) -> None:
    """The ingest's write commits; the erasure (or a delete) runs to its end, its `follow` included,
    before the ingest records what the document shows. Without the recorder's read back, the
    references held the erased alt text, and a document written later at the same path (not by an
    ingest: no follow takes them) made them the image's caption again."""
    brain = shore(c)
    with faults.armed("ingest.written", action=how(c, brain)):
        ingest(c, brain, REPORT, SECRET)

    assert refs_kept(c.adapters.records, brain) == []
    assert words_kept(c.adapters.records) == set()
    assert captions(c, brain) == [] and "globex" not in image_text(c, brain)
    with access.as_system():
        c.documents.write(brain, REPORT, b"# Report\n\nA new note at the same path.\n")
    ingest(c, brain, IMAGE, jpeg())  # the image's captions read again
    assert captions(c, brain) == [] and words_kept(c.adapters.records) == set()


@pytest.mark.parametrize("how", [erased, deleted])
def test_a_queued_ingest_whose_document_goes_before_its_job_records_the_references_leaves_none(
    records: RecordStore, tmp_path: Path, how: Callable[[Container, Brain], Callable[[], None]]
) -> None:
    """The same moment in a queued ingest's job: its finalize committed the document and linked its
    concepts. The job's check for an erased scope after it erases what it wrote, but finds the
    document already gone and takes nothing back; a plain delete it does not check at all."""
    adapters = replace(fake_adapters(), records=records)
    c = build_container(Settings(data_dir=tmp_path / "data", ingest_queue_bytes=40), adapters)
    brain = shore(c)
    with access.as_system():
        queued = c.ingest.ingest_bytes(brain, SECRET, name="report.md", path=REPORT)
        assert queued.status == "queued"
        with faults.armed("ingest.written", action=how(c, brain)):
            assert c.jobs.run_pending() == 1

    assert refs_kept(c.adapters.records, brain) == []
    assert captions(c, brain) == [] and "globex" not in image_text(c, brain)


def test_references_recorded_as_the_erase_commits_are_removed_by_its_follow(c: Container) -> None:
    """A record landing after the erasure removed the document's references but before its erase
    committed (its bytes gone, its record not yet): the read back still finds the document, and the
    erase's `follow`, run after its commit, finds the references and removes them."""
    brain = shore(c)
    ingest(c, brain, REPORT, SECRET)
    with access.as_system():
        doc = c.documents.get(brain, REPORT)
    images = c.ingest.images
    assert images is not None
    late = Prepared(DocumentInput(), {IMAGE: {"alt": "Figure 1: secret merger, Globex", "caption": None}})

    def recorded_meanwhile() -> None:
        images.record(brain, REPORT, late, written=doc)
        assert len(refs_kept(c.adapters.records, brain)) == 3  # both ways, and their mark

    with faults.armed("documents.bytes_erased", action=recorded_meanwhile):
        erased(c, brain)()

    assert refs_kept(c.adapters.records, brain) == []
    assert words_kept(c.adapters.records) == set()


def test_an_ingest_killed_between_its_commit_and_its_references_leaves_nothing_after_the_erasure(
    c: Container,
) -> None:
    """The process dies after the write of a new version, before its references: the earlier
    version's stay recorded until the erasure, which removes them with the document."""
    brain = shore(c)
    ingest(c, brain, REPORT, EARLIER)
    assert captions(c, brain) == ["Figure 1: the Quillmarsh plan"]
    with faults.armed("ingest.written"), pytest.raises(faults.InjectedFault):
        ingest(c, brain, REPORT, SECRET)

    erased(c, brain)()

    assert refs_kept(c.adapters.records, brain) == []
    assert words_kept(c.adapters.records) == set()
    assert captions(c, brain) == [] and "quillmarsh" not in image_text(c, brain)


def test_references_of_a_document_standing_as_written_are_kept(c: Container) -> None:
    """The read back keeps what a live document shows: an ingest that reached `ingest.written`
    with nothing else happening records its references as before."""
    brain = shore(c)
    reached: list[bool] = []
    with faults.armed("ingest.written", action=lambda: reached.append(True)):
        ingest(c, brain, REPORT, SECRET)
    assert reached == [True]
    assert captions(c, brain) == ["Figure 1: secret merger with Globex"]
    kept = refs_kept(c.adapters.records, brain)
    assert len(kept) == 3  # by image, by document, and the mark of whose they are (image_refs.py)
    assert (by_document(brain.id, REPORT), IMAGE) in kept and (by_image(brain.id, IMAGE), REPORT) in kept
    images = c.ingest.images
    assert images is not None
    with access.as_system():
        doc = c.documents.get(brain, REPORT)
    assert images.refs.held(brain.id, REPORT).owner == (doc.id, doc.version)
