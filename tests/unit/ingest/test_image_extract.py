"""The `image` extraction kind: which files are images, their text and title, and the captions
documents give them in an image document's indexable text."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image, PngImagePlugin

from cairn.domain.errors import UnsupportedContent
from cairn.ingest.extract import extract_image, extract_text, infer_kind
from cairn.services.documents.document_text import CAPTIONS_KEY, document_text, image_captions


def image_bytes(fmt: str, **save: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), (30, 120, 200)).save(buffer, fmt, **save)
    return buffer.getvalue()


def titled_png(title: str, description: str) -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Title", title)
    info.add_text("Description", description)
    return image_bytes("PNG", pnginfo=info)


def described_jpeg(description: str) -> bytes:
    exif = Image.Exif()
    exif[0x010E] = description  # ImageDescription
    return image_bytes("JPEG", exif=exif)


class TestKind:
    @pytest.mark.parametrize("name", ["heron.png", "heron.jpg", "Heron.JPEG", "heron.webp"])
    def test_image_extensions(self, name: str) -> None:
        assert infer_kind(name, None) == "image"

    @pytest.mark.parametrize("media", ["image/png", "image/jpeg", "image/webp; q=1"])
    def test_image_media_types(self, media: str) -> None:
        assert infer_kind("upload.bin", media) == "image"

    @pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
    def test_sniffed_image_bytes(self, fmt: str) -> None:
        assert infer_kind("upload", None, image_bytes(fmt)) == "image"
        assert infer_kind(None, "application/octet-stream", image_bytes(fmt)) == "image"

    def test_other_binary_is_still_refused(self) -> None:
        with pytest.raises(UnsupportedContent, match="binary"):
            infer_kind("upload", None, b"GIF89a\x00\x01\x00")


class TestExtract:
    def test_png_text_title_and_content_type(self) -> None:
        data = titled_png("Grey heron", "A heron fishing below the weir")

        extracted = extract_text(data, "image", "birds/grey_heron-2024.png")

        assert extracted.content_type == "image/png"
        assert extracted.title == "Grey heron"
        assert extracted.text.splitlines() == [
            "Grey heron",
            "A heron fishing below the weir",
            "grey heron 2024",
        ]

    def test_without_a_title_the_file_name_words_are_the_title(self) -> None:
        extracted = extract_text(described_jpeg("Mist over the river"), "image", "river_at-dawn.jpg")

        assert extracted.content_type == "image/jpeg"
        assert extracted.title == "river at dawn"
        assert extracted.text.splitlines() == ["Mist over the river", "river at dawn"]

    def test_the_sniffed_type_decides_the_content_type(self) -> None:
        assert extract_text(image_bytes("WEBP"), "image", "named.png").content_type == "image/webp"

    @pytest.mark.parametrize("data", [b"# not an image\n", image_bytes("PNG")[:-20], b""])
    def test_not_a_readable_image_is_unsupported(self, data: bytes) -> None:
        with pytest.raises(UnsupportedContent, match="not a readable PNG, JPEG or WebP image"):
            extract_text(data, infer_kind("fake.png", None, data), "fake.png")

    def test_captions_come_after_the_image_s_own_text(self) -> None:
        data = titled_png("Grey heron", "A heron fishing")

        text = extract_image(data, "heron.png", ["A heron on the weir", "grey heron", "Figure 2"]).text

        assert text.splitlines() == [
            "Grey heron",
            "A heron fishing",
            "A heron on the weir",
            "Figure 2",
            "heron",
        ]


class TestDocumentText:
    def test_an_image_document_s_text_includes_its_captions(self) -> None:
        data = described_jpeg("Mist over the river")

        bare = document_text("ingest/img/heron.jpg", "image/jpeg", data)
        captioned = document_text("ingest/img/heron.jpg", "image/jpeg", data, ["A heron on the weir"])

        assert bare.splitlines() == ["Mist over the river", "heron"]
        assert captioned.splitlines() == ["Mist over the river", "A heron on the weir", "heron"]

    def test_the_name_comes_from_the_path(self) -> None:
        assert document_text("x/kingfisher_nest.webp", "image/webp", image_bytes("WEBP")) == "kingfisher nest"

    def test_an_unreadable_image_is_stored_but_not_indexed(self) -> None:
        assert document_text("x/broken.png", "image/png", b"not a png", ["caption"]) == ""

    def test_captions_are_ignored_for_text(self) -> None:
        assert document_text("notes.md", "text/markdown", b"# Notes", ["A heron"]) == "# Notes"

    def test_captions_from_metadata(self) -> None:
        assert image_captions({CAPTIONS_KEY: json.dumps(["a", "b"])}) == ["a", "b"]
        assert image_captions({CAPTIONS_KEY: json.dumps(["a", 3, None])}) == ["a"]
        assert image_captions({CAPTIONS_KEY: "not json"}) == []
        assert image_captions({CAPTIONS_KEY: json.dumps({"a": 1})}) == []
        assert image_captions({}) == []
