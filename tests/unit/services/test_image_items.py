"""Image items through IngestService: stored as images, captioned by the documents that show them
whichever is ingested first, re-captioned when a document changes, and counted."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from cairn.bootstrap import Container
from cairn.domain.errors import NotFound, UnsupportedContent
from cairn.domain.models import Brain, Document
from cairn.services.documents.inputs import BatchOp, lock_key
from cairn.services.mnemosyne.image_items import MAX_CAPTION_CHARS, MAX_CAPTIONS
from cairn.services.mnemosyne.image_refs import MARK_SK, Held
from tests.fakes.container import fake_container

IMAGE = "ingest/img/heron.jpg"


def jpeg(description: str | None = None) -> bytes:
    exif = Image.Exif()
    if description:
        exif[0x010E] = description
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), (90, 90, 90)).save(buffer, "JPEG", exif=exif)
    return buffer.getvalue()


def ingest(c: Container, brain: Brain, path: str, data: bytes) -> Document:
    result = c.ingest.ingest_bytes(brain, data, name=path.rsplit("/", 1)[-1], path=path)
    assert result.document is not None
    return result.document


def chunk_text(c: Container, doc: Document) -> str:
    return "\n".join(chunk.text for chunk in c.adapters.chunks.get_chunks(doc.brain_id, doc.id))


def captions(c: Container, brain: Brain, path: str = IMAGE) -> list[str]:
    return json.loads(str(c.documents.get(brain, path).metadata["image_captions"]))


def test_an_image_is_stored_as_itself_with_its_type_and_text(container: Container, brain: Brain) -> None:
    data = jpeg("Mist over the river")

    doc = ingest(container, brain, IMAGE, data)

    assert container.documents.blobs.get(doc.blob_key) == data
    assert (doc.content_type, doc.title) == ("image/jpeg", "heron")
    assert doc.metadata["image_count"] == 1 and captions(container, brain) == []
    assert chunk_text(container, doc).splitlines() == ["Mist over the river", "heron"]


def test_a_document_shown_after_the_image_captions_it(container: Container, brain: Brain) -> None:
    ingest(container, brain, IMAGE, jpeg())

    page = ingest(container, brain, "ingest/birds.md", b"# Birds\n\n![A heron on the weir](img/heron.jpg)\n")

    assert page.metadata["image_count"] == 1
    assert captions(container, brain) == ["A heron on the weir"]
    image = container.documents.get(brain, IMAGE)
    assert "A heron on the weir" in chunk_text(container, image)


def test_an_image_ingested_after_the_document_reads_its_references(
    container: Container, brain: Brain
) -> None:
    ingest(
        container,
        brain,
        "ingest/birds.md",
        b'![A heron on the weir](img/heron.jpg "Grey heron")\n\n*Figure 1: the old mill*\n',
    )

    image = ingest(container, brain, IMAGE, jpeg())

    assert captions(container, brain) == ["A heron on the weir", "Figure 1: the old mill", "Grey heron"]
    assert chunk_text(container, image).splitlines() == [
        "A heron on the weir",
        "Figure 1: the old mill",
        "Grey heron",
        "heron",
    ]


def test_re_indexing_from_the_blob_keeps_the_captions(container: Container, brain: Brain) -> None:
    ingest(container, brain, "ingest/birds.md", b"![A heron on the weir](img/heron.jpg)\n")
    ingest(container, brain, IMAGE, jpeg())
    image = container.documents.get(brain, IMAGE)
    before = chunk_text(container, image)

    container.documents.reindex(image)
    moved = container.documents.rename(brain, IMAGE, "ingest/img/heron-2.jpg")

    assert "A heron on the weir" in before
    assert "A heron on the weir" in chunk_text(container, moved)


def test_re_ingesting_the_document_without_the_image_removes_its_caption(
    container: Container, brain: Brain
) -> None:
    ingest(container, brain, IMAGE, jpeg())
    ingest(container, brain, "ingest/birds.md", b"![A heron on the weir](img/heron.jpg)\n")
    ingest(container, brain, "ingest/more.md", b"![Heron in flight](img/heron.jpg)\n")

    page = ingest(container, brain, "ingest/birds.md", b"# Birds\n\nNo pictures today.\n")

    assert page.metadata["image_count"] == 0
    assert captions(container, brain) == ["Heron in flight"]
    assert "weir" not in chunk_text(container, container.documents.get(brain, IMAGE))
    records = container.adapters.records
    assert records.query(f"imgref#{brain.id}#from#ingest/birds.md").items == []
    assert [i.sk for i in records.query(f"imgref#{brain.id}#to#{IMAGE}").items] == ["ingest/more.md"]


def test_a_changed_alt_text_replaces_the_old_one(container: Container, brain: Brain) -> None:
    ingest(container, brain, IMAGE, jpeg())
    ingest(container, brain, "ingest/birds.md", b"![A heron on the weir](img/heron.jpg)\n")

    ingest(container, brain, "ingest/birds.md", b"![A heron at dusk](img/heron.jpg)\n")

    assert captions(container, brain) == ["A heron at dusk"]


def test_html_figures_and_counts_of_distinct_local_images(container: Container, brain: Brain) -> None:
    ingest(container, brain, IMAGE, jpeg())
    html = (
        b"<html><body><figure><img src='img/heron.jpg' alt='Heron'>"
        b"<figcaption>Grey heron at the weir</figcaption></figure>"
        b"<img src='img/heron.jpg?size=2'><img src='/logo.png'>"
        b"<img src='https://example.org/x.png' alt='External'><img src='data:image/png;base64,AA=='>"
        b"</body></html>"
    )

    page = ingest(container, brain, "ingest/birds.html", html)

    assert page.metadata["image_count"] == 2  # heron.jpg (twice) and logo.png; external ones ignored
    assert captions(container, brain) == ["Heron", "Grey heron at the weir"]
    targets = [
        i.sk for i in container.adapters.records.query(f"imgref#{brain.id}#from#ingest/birds.html").items
    ]
    assert targets == [MARK_SK, IMAGE, "logo.png"]  # the mark first: whose references they are


def test_a_document_that_is_not_an_image_is_not_touched(container: Container, brain: Brain) -> None:
    notes = ingest(container, brain, "ingest/notes.md", b"# Notes\n")

    ingest(container, brain, "ingest/index.md", b"![Notes as a picture](notes.md)\n")

    assert container.documents.get(brain, "ingest/notes.md").version == notes.version


def test_a_deleted_document_no_longer_captions_an_image_ingested_later(
    container: Container, brain: Brain
) -> None:
    ingest(container, brain, "ingest/birds.md", b"![A heron on the weir](img/heron.jpg)\n")
    container.documents.delete(brain, "ingest/birds.md")

    ingest(container, brain, IMAGE, jpeg())

    assert captions(container, brain) == []


MERGER = b"# Report\n\n![Figure 1: secret merger with Globex](img/heron.jpg)\n"


def test_a_deleted_document_no_longer_captions_an_image_ingested_before(
    container: Container, brain: Brain
) -> None:
    ingest(container, brain, IMAGE, jpeg())
    ingest(container, brain, "ingest/report.md", MERGER)
    assert captions(container, brain) == ["Figure 1: secret merger with Globex"]
    assert "Globex" in chunk_text(container, container.documents.get(brain, IMAGE))

    container.documents.delete(brain, "ingest/report.md")

    assert captions(container, brain) == []
    assert "Globex" not in chunk_text(container, container.documents.get(brain, IMAGE))


@pytest.mark.parametrize("how", ["written over", "in a batch"])
def test_a_document_written_over_without_an_ingest_no_longer_captions_it(
    container: Container, brain: Brain, how: str
) -> None:
    ingest(container, brain, IMAGE, jpeg())
    ingest(container, brain, "ingest/report.md", MERGER)

    if how == "written over":
        container.documents.write(brain, "ingest/report.md", b"# Report\n\nNothing to see here.\n")
    else:
        container.documents.batch(brain, [BatchOp(type="delete", path="ingest/report.md")])

    assert captions(container, brain) == []
    assert "Globex" not in chunk_text(container, container.documents.get(brain, IMAGE))


def test_a_renamed_document_still_captions_the_image_from_its_new_path(
    container: Container, brain: Brain
) -> None:
    ingest(container, brain, IMAGE, jpeg())
    ingest(container, brain, "ingest/report.md", MERGER)

    container.documents.rename(brain, "ingest/report.md", "archive/report.md")

    assert captions(container, brain) == ["Figure 1: secret merger with Globex"]
    images = container.ingest.images
    assert images is not None and images.refs.held(brain.id, "ingest/report.md") == Held()  # no mark left
    moved = container.documents.get(brain, "archive/report.md")
    assert images.refs.held(brain.id, "archive/report.md").owner == (moved.id, moved.version)
    container.documents.delete(brain, "archive/report.md")
    assert captions(container, brain) == []


def test_a_change_whose_image_shares_its_lock_stripe_does_not_wait_on_itself(
    container: Container, brain: Brain
) -> None:
    stripe = container.documents.locks._index(lock_key(brain, IMAGE))
    shown_by = next(  # a document path whose lock is the image's
        path
        for path in (f"notes/p{n}.md" for n in range(100_000))
        if container.documents.locks._index(lock_key(brain, path)) == stripe
    )
    ingest(container, brain, IMAGE, jpeg())
    ingest(container, brain, shown_by, MERGER.replace(b"img/heron.jpg", b"../ingest/img/heron.jpg"))
    assert captions(container, brain) == ["Figure 1: secret merger with Globex"]

    container.documents.delete(brain, shown_by)  # would wait forever if the refresh ran under its lock

    assert captions(container, brain) == []


def test_captions_are_capped_in_number_and_length(container: Container, brain: Brain) -> None:
    lines = [f"![Heron number {n} {'x' * 600}](img/heron.jpg)" for n in range(MAX_CAPTIONS + 10)]
    ingest(container, brain, "ingest/many.md", "\n\n".join(lines).encode())

    ingest(container, brain, IMAGE, jpeg())

    kept = captions(container, brain)
    assert len(kept) == MAX_CAPTIONS
    assert all(len(text) <= MAX_CAPTION_CHARS for text in kept)
    assert kept[0].startswith("Heron number 0 xxx")


def test_a_fake_image_is_refused_and_nothing_is_stored(container: Container, brain: Brain) -> None:
    with pytest.raises(UnsupportedContent, match="not a readable PNG, JPEG or WebP image"):
        container.ingest.ingest_bytes(brain, b"# I am text\n", name="fake.png", path="ingest/fake.png")

    with pytest.raises(NotFound):
        container.documents.get(brain, "ingest/fake.png")


def test_re_ingesting_the_same_image_changes_nothing(container: Container, brain: Brain) -> None:
    ingest(container, brain, "ingest/birds.md", b"![A heron on the weir](img/heron.jpg)\n")
    first = container.ingest.ingest_bytes(brain, jpeg(), name="heron.jpg", path=IMAGE)

    again = container.ingest.ingest_bytes(brain, jpeg(), name="heron.jpg", path=IMAGE)

    assert not first.reused and again.reused


def test_a_queued_image_is_ingested_as_an_image_item_by_its_job(tmp_path: Path) -> None:
    c = fake_container(tmp_path, ingest_queue_bytes=100)
    brain = c.brains.create("Queued", slug="queued")
    c.ingest.ingest_bytes(
        brain, b"![A heron on the weir](img/heron.jpg)\n", name="birds.md", path="ingest/birds.md"
    )
    data = jpeg("Mist over the river")
    queued = c.ingest.ingest_bytes(brain, data, name="heron.jpg", path=IMAGE)
    assert queued.status == "queued"

    assert c.jobs.run_pending() == 1

    image = c.documents.get(brain, IMAGE)
    assert image.id == queued.document_id and image.content_type == "image/jpeg"
    assert c.documents.blobs.get(image.blob_key) == data
    assert chunk_text(c, image).splitlines() == ["Mist over the river", "A heron on the weir", "heron"]
