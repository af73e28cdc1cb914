"""Images judged by their own relevance: the vector leg ranks every image of a library for any query,
so each image found is scored by the calibrated relevance of its own similarity to the query, and an
image that only the vector leg reached is returned only from the relevance floor up. Through the
official MCP client, with the embedded MiniLM model (fake storage) and with the fakes."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cairn.adapters.local.onnx_embedder import OnnxEmbedder
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.services.mnemosyne.libraries import Library
from cairn.services.search.relevance import GOOD_MATCH
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.container import fake_adapters
from tests.integration.mcp.conftest import LiveServer, serving
from tests.integration.mnemosyne.conftest import body, mnemosyne

pytestmark = pytest.mark.anyio
TOKEN = "sekret-owner-token"
PHOTOS = {
    "photos/kingfisher.jpg": "A kingfisher diving into the millpond at noon",
    "photos/alps.png": "Snow-covered mountain peaks at sunrise",
    "photos/car.jpg": "A red vintage car parked on a city street",
}


def picture(path: str, description: str) -> bytes:
    exif = Image.Exif()
    exif[0x010E] = description  # ImageDescription
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (60, 140, 90)).save(
        buffer, "PNG" if path.endswith(".png") else "JPEG", exif=exif
    )
    return buffer.getvalue()


def shelve(c: Container) -> Library:
    lib = c.libraries.describe(c.brains.create("Field photos", slug="photos").id, library_type="art")
    for path, description in PHOTOS.items():
        c.ingest.ingest_bytes(lib.brain, picture(path, description), name=path.rsplit("/", 1)[1], path=path)
    return lib


def serve(tmp_path: Path, container: Container) -> Iterator[LiveServer]:
    yield from serving(container, tmp_path, tmp_path / "data")


@pytest.fixture
def minilm(tmp_path: Path) -> Iterator[LiveServer]:
    """A live server whose embedder is the embedded MiniLM model, over fake storage."""
    adapters = replace(fake_adapters(), embedder=OnnxEmbedder(), chunks=MemoryChunkIndex(384))
    yield from serve(tmp_path, build_container(Settings(data_dir=tmp_path / "data", token=TOKEN), adapters))


async def images(live: LiveServer, lib: Library, query: str, **args: Any) -> list[tuple[str, float]]:
    """(item title, score) of each image the search tool returns."""
    async with mnemosyne(live, TOKEN) as m:
        found = body(
            await m.call_tool("search", {"query": query, "library_uid": lib.uid, "rerank": False, **args})
        )
    return [(image["item_title"], image["score"]) for image in found["images"]]


async def test_an_unrelated_query_returns_no_image_and_a_related_one_the_right_image_first(
    minilm: LiveServer,
) -> None:
    lib = shelve(minilm.container)

    unrelated = [
        await images(minilm, lib, q) for q in ("quarterly tax return deadline", "bake sourdough bread")
    ]
    bird = await images(minilm, lib, "kingfisher bird")
    peaks = await images(minilm, lib, "mountains in the snow")
    automobile = await images(minilm, lib, "old red automobile")  # no word in common: by meaning alone
    vehicle = await images(minilm, lib, "vehicle", search_types=["vector"])

    assert unrelated == [[], []]
    assert [title for title, _ in bird] == ["kingfisher"] and bird[0][1] >= GOOD_MATCH
    assert [title for title, _ in peaks] == ["alps"] and peaks[0][1] >= GOOD_MATCH
    assert [title for title, _ in automobile] == ["car"] and automobile[0][1] >= GOOD_MATCH
    assert [title for title, _ in vehicle] == ["car"]


async def test_an_image_only_the_vector_leg_reaches_needs_the_floor_and_words_find_one_below_it(
    live: LiveServer,
) -> None:
    lib = shelve(live.container)  # the fakes' hashing embedder: similarity is shared words only

    by_word = await images(live, lib, "millpond")
    unrelated = await images(live, lib, "quarterly tax return deadline")
    vector_only = await images(live, lib, "quarterly tax return deadline", search_types=["vector"])
    shared = await images(live, lib, "red car street")

    assert [title for title, _ in by_word] == ["kingfisher"] and 0 < by_word[0][1] < GOOD_MATCH
    assert unrelated == [] and vector_only == []
    assert shared[0][0] == "car" and all(score <= shared[0][1] for _, score in shared)
