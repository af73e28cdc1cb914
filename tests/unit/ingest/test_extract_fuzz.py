"""Damaged files of every kind Cairn extracts, fuzzed: a valid file of each kind (a PNG with text
chunks, compressed ones too, a JPEG and a WebP with EXIF and XMP, a PDF, HTML, JSON, JSON lines and
Markdown with front matter) truncated, with bytes flipped, inserted or repeated by Hypothesis, and
given to extraction as its own kind and as another. Whatever the bytes, extraction gives text or
refuses them with Cairn's own error (invalid input, unsupported or damaged content): never another
exception, which a surface would answer as a crash.

CAIRN_FUZZ_EXAMPLES sets the examples per kind (default 15; here 20 times that, each is cheap)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image, PngImagePlugin

from cairn.domain.errors import CairnError
from cairn.ingest.extract import KINDS, extract_image, extract_text, infer_kind
from tests.support.fuzzing import EXAMPLES, fixed
from tests.unit.ingest.pdfs import make_pdf

XMP = (
    b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
    b'<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title><rdf:Alt>'
    b'<rdf:li xml:lang="x-default">Heron at the weir</rdf:li></rdf:Alt></dc:title></rdf:Description>'
    b"</rdf:RDF></x:xmpmeta>"
)


def _image(fmt: str, **save: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), (30, 120, 200)).save(buffer, fmt, **save)
    return buffer.getvalue()


def _exif() -> Image.Exif:
    exif = Image.Exif()
    exif[0x010E] = "A heron fishing below the weir"  # ImageDescription
    exif[0x9C9B] = "Heron".encode("utf-16-le")  # XPTitle
    exif[0x8769] = {0x9286: b"UNICODE\x00" + "by the mill".encode("utf-16-be")}  # UserComment
    return exif


def _png() -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Title", "Grey heron")
    info.add_text("Description", "A heron fishing below the weir " * 8, zip=True)
    info.add_itxt("Comment", "Héron cendré", lang="fr", tkey="Kommentar", zip=True)
    return _image("PNG", pnginfo=info)


SEEDS: dict[str, Callable[[], bytes]] = {
    "png": _png,
    "jpeg": lambda: _image("JPEG", exif=_exif()),
    "webp": lambda: _image("WEBP", exif=_exif(), xmp=XMP),
    "pdf": lambda: make_pdf([["Backups are kept 14 days.", "Restores are tested monthly."]], title="Runbook"),
    "html": lambda: (
        b"<html><head><title>Runbook</title></head><body><nav>x</nav><main><h1>Backups</h1>"
        b"<p>Kept 14 days &amp; tested.</p><img alt='a heron' src='h.png'></main></body></html>"
    ),
    "json": lambda: b'{"title": "Runbook", "steps": [{"do": "back up", "days": 14}, null, true, 1.5e3]}',
    "jsonl": lambda: b'{"a": 1}\n{"b": [2, 3]}\n"text"\n',
    "markdown": lambda: b"---\ntitle: Runbook\ntags: [ops]\n---\n# Backups\n\nKept **14** days.\n",
}
KIND_OF = {"png": "image", "jpeg": "image", "webp": "image", "jsonl": "json"}


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    for _ in range(draw(st.integers(1, 3), label="changes")):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1), label="at")
        how = draw(st.sampled_from(("truncate", "flip", "insert", "repeat", "delete")), label="how")
        if how == "truncate":
            data = data[:at]
        elif how == "flip":
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255), label="mask")]) + data[at + 1 :]
        elif how == "insert":
            data = data[:at] + draw(st.binary(min_size=1, max_size=16), label="bytes") + data[at:]
        elif how == "repeat":
            data = data[:at] + data[at : at + draw(st.integers(1, 64), label="span")] * 2 + data[at:]
        else:
            data = data[:at] + data[at + draw(st.integers(1, 64), label="span") :]
    return data


@pytest.mark.filterwarnings("ignore::UserWarning:PIL")  # Pillow warns of the EXIF it skips
@pytest.mark.parametrize("seed", list(SEEDS))
def test_a_damaged_file_is_read_or_refused_in_cairns_words(seed: str) -> None:
    original = SEEDS[seed]()
    kind = KIND_OF.get(seed, seed)
    assert extract_text(original, kind, f"heron.{seed}").text  # the undamaged file reads

    @fixed(EXAMPLES * 20)
    @given(damaged(original), st.sampled_from((kind, kind, kind, *KINDS)))
    def read(data: bytes, as_kind: str) -> None:
        with contextlib.suppress(CairnError):  # refused in Cairn's words: the surface says why
            extract_text(data, as_kind, f"heron.{seed}")
        with contextlib.suppress(CairnError):
            infer_kind(f"upload.{seed}", None, data)
            if as_kind == "image":
                extract_image(data, "heron", captions=("a heron",))

    read()


def test_a_reader_that_raises_its_own_error_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.ingest import html

    original, read = SEEDS["html"](), html.html_to_text

    def fragile(data: bytes) -> tuple[str, str | None]:
        if data != original:  # reads the undamaged file, breaks on a damaged one
            raise IndexError("a reader's own error")
        return read(data)

    monkeypatch.setattr(html, "html_to_text", fragile)
    with pytest.raises(IndexError):
        test_a_damaged_file_is_read_or_refused_in_cairns_words("html")
