"""Image items on a live server: PNG, JPEG and WebP files are found, as `images` and never as
candidates, by what they say about themselves (EXIF, PNG text), by the alt texts and captions of the
documents that show them (ingested before or after the image), and by their file names; a document
that stops showing an image stops captioning it; a file that only claims to be an image is refused."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from PIL import Image, PngImagePlugin

from cairn.bootstrap import Container
from cairn.domain.errors import NotFound, UnsupportedContent
from cairn.services.mnemosyne.libraries import Library
from cairn.services.mnemosyne.library_search import SEARCH_TYPES, SearchRequest
from tests.integration.mcp.conftest import LiveServer
from tests.integration.mnemosyne.conftest import body, ingest, mnemosyne

pytestmark = pytest.mark.anyio
TOKEN = "sekret-owner-token"


def picture(fmt: str, *, description: str | None = None, title: str | None = None) -> bytes:
    save: dict[str, Any] = {}
    if fmt == "PNG" and title:
        info = PngImagePlugin.PngInfo()
        info.add_text("Title", title)
        save["pnginfo"] = info
    if description:
        exif = Image.Exif()
        exif[0x010E] = description  # ImageDescription
        save["exif"] = exif
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (60, 140, 90)).save(buffer, fmt, **save)
    return buffer.getvalue()


def photos(c: Container) -> Library:
    return c.libraries.describe(c.brains.create("Field photos", slug="photos").id, library_type="art")


def image_paths(c: Container, lib: Library, query: str, types: tuple[str, ...] = SEARCH_TYPES) -> list[str]:
    """The image items library_search finds (none of them ever among the candidates)."""
    outcome = c.library_search.search(
        SearchRequest(query, [c.libraries.library(lib.uid)], search_types=types, include_images=True)
    )
    assert all(not cand.document.content_type.startswith("image/") for cand in outcome.candidates)
    return [found.document.path for found in outcome.images]


def fulltext(c: Container, lib: Library, query: str) -> list[str]:
    return image_paths(c, lib, query, ("fulltext",))


async def search(live: LiveServer, lib: Library, query: str, **args: Any) -> dict[str, Any]:
    async with mnemosyne(live) as m:
        found: dict[str, Any] = body(
            await m.call_tool("search", {"query": query, "library_uid": lib.uid, "rerank": False, **args})
        )
    return found


async def test_an_image_is_found_by_its_exif_description_and_by_its_file_name(live: LiveServer) -> None:
    c = live.container
    lib = photos(c)
    data = picture("JPEG", description="Diving into the millpond at noon")
    kingfisher = c.ingest.ingest_bytes(
        lib.brain, data, name="kingfisher.jpg", path="photos/kingfisher.jpg"
    ).document_id
    otter = c.ingest.ingest_bytes(
        lib.brain, picture("WEBP"), name="otter_holt.webp", path="photos/otter_holt.webp"
    )

    by_exif = await search(live, lib, "millpond")
    by_name = await search(live, lib, "otter holt")
    without = await search(live, lib, "millpond", include_images=False)

    assert by_exif["candidates"] == [] and by_exif["total_candidates"] == 0
    first = by_exif["images"][0]
    doc = c.documents.get(lib.brain, "photos/kingfisher.jpg")
    assert first == {
        "image_uid": first["image_uid"],
        "item_uid": kingfisher,
        "item_title": "kingfisher",
        "image_type": "jpeg",
        "description": "Diving into the millpond at noon kingfisher",
        "s3_key": doc.blob_key,
        "score": first["score"],
        "source": first["source"],
        "library_uid": lib.uid,
        "library_name": lib.name,
    }
    assert first["image_uid"].startswith("chk_") and first["score"] > 0 and first["source"] in SEARCH_TYPES
    assert by_name["images"][0]["item_uid"] == otter.document_id
    assert (
        by_name["images"][0]["image_type"] == "webp" and by_name["images"][0]["description"] == "otter holt"
    )
    assert without["images"] == []
    assert fulltext(c, lib, "millpond") == ["photos/kingfisher.jpg"]
    assert fulltext(c, lib, "holt") == ["photos/otter_holt.webp"]


async def test_alt_text_of_a_document_ingested_after_the_image_finds_it(live: LiveServer) -> None:
    c = live.container
    lib = photos(c)
    heron = c.ingest.ingest_bytes(lib.brain, picture("JPEG"), name="heron.jpg", path="notes/img/heron.jpg")
    assert fulltext(c, lib, "weir") == []

    ingest(c, lib.brain, "notes/birds.md", "# Birds by the river\n\n![A heron on the weir](img/heron.jpg)\n")
    found = await search(live, lib, "heron weir")

    assert image_paths(c, lib, "heron weir")[0] == "notes/img/heron.jpg"
    assert fulltext(c, lib, "weir") == ["notes/img/heron.jpg"]
    assert found["images"][0]["item_uid"] == heron.document_id
    assert "A heron on the weir" in found["images"][0]["description"]
    assert [cand["item_title"] for cand in found["candidates"]][:1] == ["Birds by the river"]
    assert all(cand["item_uid"] != heron.document_id for cand in found["candidates"])


async def test_alt_text_of_a_document_ingested_before_the_image_finds_it(live: LiveServer) -> None:
    c = live.container
    lib = photos(c)
    ingest(c, lib.brain, "notes/birds.md", "# Birds\n\n![A heron on the weir](img/heron.jpg)\n")
    assert fulltext(c, lib, "weir") == []  # no image item yet: the document alone is a candidate

    heron = c.ingest.ingest_bytes(lib.brain, picture("JPEG"), name="heron.jpg", path="notes/img/heron.jpg")
    found = await search(live, lib, "heron weir")

    assert fulltext(c, lib, "weir") == ["notes/img/heron.jpg"]
    assert found["images"][0]["item_uid"] == heron.document_id
    assert found["images"][0]["description"] == "A heron on the weir heron"


async def test_re_ingesting_the_document_without_the_image_removes_its_caption(live: LiveServer) -> None:
    c = live.container
    lib = photos(c)
    c.ingest.ingest_bytes(lib.brain, picture("JPEG"), name="heron.jpg", path="notes/img/heron.jpg")
    ingest(c, lib.brain, "notes/birds.md", "# Birds\n\n![A heron on the weir](img/heron.jpg)\n")
    assert fulltext(c, lib, "weir") == ["notes/img/heron.jpg"]

    ingest(c, lib.brain, "notes/birds.md", "# Birds\n\nThe weir was empty today.\n")
    found = await search(live, lib, "weir", search_types=["fulltext"])

    assert fulltext(c, lib, "weir") == []
    assert found["images"] == [] and [cand["item_title"] for cand in found["candidates"]] == ["Birds"]
    assert fulltext(c, lib, "heron") == ["notes/img/heron.jpg"]  # its file name still finds it


async def test_a_document_deleted_over_rest_takes_its_captions_with_it(live: LiveServer) -> None:
    c = live.container
    lib = photos(c)
    c.ingest.ingest_bytes(lib.brain, picture("JPEG"), name="heron.jpg", path="notes/img/heron.jpg")
    ingest(c, lib.brain, "notes/report.md", "# Report\n\n![Figure 1: the Globex merger](img/heron.jpg)\n")
    assert fulltext(c, lib, "Globex") == ["notes/img/heron.jpg"]

    async with httpx.AsyncClient(base_url=live.base, headers={"authorization": f"Bearer {TOKEN}"}) as http:
        gone = await http.delete(f"/v1/brains/{lib.brain.id}/documents", params={"path": "notes/report.md"})
    assert gone.status_code == 204, gone.text
    found = await search(live, lib, "Globex merger")

    assert fulltext(c, lib, "Globex") == [] and found["images"] == [] and found["candidates"] == []


async def test_list_items_shows_image_items_and_the_images_a_document_shows(live: LiveServer) -> None:
    c = live.container
    lib = photos(c)
    c.ingest.ingest_bytes(lib.brain, picture("PNG", title="Grey heron"), name="a.png", path="pics/a.png")
    c.ingest.ingest_bytes(lib.brain, picture("JPEG"), name="b.jpg", path="pics/b.jpg")
    c.ingest.ingest_bytes(lib.brain, picture("WEBP"), name="c.webp", path="pics/c.webp")
    ingest(
        c,
        lib.brain,
        "pics/index.md",
        "# Index\n\n![one](a.png) ![again](a.png) ![two](b.jpg)\n\n"
        "![remote](https://example.org/d.png) ![inline](data:image/png;base64,AAAA)\n",
    )

    async with mnemosyne(live) as m:
        listed = body(await m.call_tool("list_items", {"library_uid": lib.uid}))

    items = {item["title"]: item for item in listed["items"]}
    shown = {t: (i["item_type"], i["file_type"], i["image_count"]) for t, i in items.items()}
    assert shown == {
        "Grey heron": ("image", "png", 1),
        "b": ("image", "jpeg", 1),
        "c": ("image", "webp", 1),
        "Index": ("document", "md", 2),
    }
    assert all(
        item["embedding_status"] == "completed" and item["chunk_count"] >= 1 for item in items.values()
    )


async def test_a_file_that_only_claims_to_be_an_image_is_refused_and_nothing_is_stored(
    live: LiveServer,
) -> None:
    c = live.container
    lib = photos(c)
    (live.ingest_root / "fake.png").write_text("# I am text, not a picture\n")
    (live.ingest_root / "real.png").write_bytes(picture("PNG"))

    with pytest.raises(UnsupportedContent, match="not a readable PNG, JPEG or WebP image"):
        c.ingest.ingest_bytes(lib.brain, b"# text\n", name="fake.png", path="pics/fake.png")
    async with mnemosyne(live, TOKEN, path="/mcp") as canonical:
        refused = await canonical.call_tool("memory_ingest_file", {"path": "fake.png", "brain": "photos"})
        accepted = await canonical.call_tool("memory_ingest_file", {"path": "real.png", "brain": "photos"})
    async with mnemosyne(live) as m:
        listed = body(await m.call_tool("list_items", {"library_uid": lib.uid}))

    assert refused.is_error
    assert refused.content[0].type == "text"
    assert '"unsupported_content"' in refused.content[0].text
    assert "not a readable PNG, JPEG or WebP image" in refused.content[0].text
    assert not accepted.is_error
    for path in ("pics/fake.png", "ingest/fake.png"):
        with pytest.raises(NotFound):
            c.documents.get(lib.brain, path)
    assert [(i["title"], i["item_type"], i["file_type"]) for i in listed["items"]] == [
        ("real", "image", "png")
    ]
