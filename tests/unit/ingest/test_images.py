"""Image items: the text an image file carries, and the alt texts and captions documents give it.

One file past 500 lines: the image files its cases read are built byte by byte here (PNG chunks,
EXIF blocks, XMP packets), and the reference syntaxes are one table of cases (from line 348)."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image, ImageFile, PngImagePlugin, WebPImagePlugin

from cairn.ingest.image_metadata import walk_png
from cairn.ingest.images import (
    MAX_FIELD_CHARS,
    ImageFacts,
    ImageReference,
    describe_image,
    filename_words,
    find_image_references,
    image_text,
)

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"


def xmp_packet(body: str, *, prologue: str = "") -> bytes:
    return (
        f'{prologue}<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>'
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
        f'<rdf:RDF xmlns:rdf="{RDF}"><rdf:Description rdf:about=""'
        ' xmlns:dc="http://purl.org/dc/elements/1.1/"'
        ' xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"'
        ' xmlns:Iptc4xmpCore="http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/">'
        f"{body}</rdf:Description></rdf:RDF></x:xmpmeta>"
        '<?xpacket end="w"?>'
    ).encode()


def utf16(text: str) -> bytes:
    return text.encode("utf-16-le") + b"\x00\x00"


def exif_block(**tags: object) -> Image.Exif:
    exif = Image.Exif()
    names = {
        "description": 0x010E,
        "artist": 0x013B,
        "xp_title": 0x9C9B,
        "xp_comment": 0x9C9C,
        "xp_keywords": 0x9C9E,
        "xp_subject": 0x9C9F,
    }
    for name, value in tags.items():
        if name == "user_comment":
            exif.get_ifd(0x8769)[0x9286] = value
        else:
            exif[names[name]] = value
    return exif


def image_bytes(fmt: str, size: tuple[int, int] = (64, 48), **save: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 80, 40)).save(buffer, fmt, **save)
    return buffer.getvalue()


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def insert_before_iend(png: bytes, chunk: bytes) -> bytes:
    iend = png.rindex(b"IEND") - 4
    return png[:iend] + chunk + png[iend:]


def with_ihdr_size(png: bytes, width: int, height: int) -> bytes:
    """The same PNG, declaring another size in its IHDR (valid CRC)."""
    body = struct.pack(">II", width, height) + png[24:29]
    return png[:8] + png_chunk(b"IHDR", body) + png[33:]


class TestPng:
    def test_text_chunks_of_every_kind_before_and_after_the_image_data(self) -> None:
        info = PngImagePlugin.PngInfo()
        info.add_text("Title", "Harbour at dawn")
        info.add_itxt("Description", "Fishing boats in Hamburg’s harbour, mist", lang="en", zip=True)
        info.add_text("Author", "Ada Lovelace")
        info.add_text("Keywords", "harbour, boats;  mist ")
        info.add_text("Software", "not read")
        data = image_bytes("PNG", pnginfo=info)
        # Pillow reads the chunks after IDAT only by decoding the pixels; the walk reads them anyway.
        data = insert_before_iend(
            data, png_chunk(b"zTXt", b"Comment\x00\x00" + zlib.compress(b"Taken from the pier"))
        )

        facts = describe_image(data, "harbour_dawn.png")

        assert facts == ImageFacts(
            image_type="png",
            width=64,
            height=48,
            title="Harbour at dawn",
            description="Fishing boats in Hamburg’s harbour, mist\nTaken from the pier",
            keywords=("harbour", "boats", "mist"),
            creator="Ada Lovelace",
            filename_words="harbour dawn",
            sources=(
                "png:tEXt:Title",
                "png:iTXt:Description",
                "png:tEXt:Author",
                "png:tEXt:Keywords",
                "png:zTXt:Comment",
                "filename",
            ),
        )

    def test_xmp_in_an_itxt_chunk_comes_before_the_png_text(self) -> None:
        info = PngImagePlugin.PngInfo()
        info.add_itxt(
            "XML:com.adobe.xmp",
            xmp_packet("<dc:title><rdf:Alt><rdf:li>XMP title</rdf:li></rdf:Alt></dc:title>").decode(),
        )
        info.add_text("Title", "PNG title")
        facts = describe_image(image_bytes("PNG", pnginfo=info), "a.png")
        assert facts is not None
        assert facts.title == "XMP title\nPNG title"
        assert facts.sources == ("xmp:dc:title", "png:tEXt:Title", "filename")

    def test_a_zip_bomb_in_a_text_chunk_is_cut_not_expanded(self) -> None:
        bomb = zlib.compress(b"a" * (64 << 20), 9)  # 64 MiB of text in ~64 KiB
        data = insert_before_iend(image_bytes("PNG"), png_chunk(b"zTXt", b"Comment\x00\x00" + bomb))
        facts = describe_image(data, "x.png")
        assert facts is not None and facts.description is not None
        assert len(facts.description) == MAX_FIELD_CHARS

    def test_the_text_chunks_give_a_mebibyte_of_text_in_all(self) -> None:
        commas = zlib.compress(b"," * (1 << 20), 9)  # a million empty keywords in 1 KB
        bombs = png_chunk(b"zTXt", b"Keywords\x00\x00" + commas) * 8
        title = png_chunk(b"tEXt", b"Title\x00Harbour")
        kept = walk_png(insert_before_iend(image_bytes("PNG"), title + bombs + title))
        assert kept is not None
        # 8 million values before (256 such chunks: 67 s and 2 GB for a 272 KB file)
        assert sum(len(values) for _field, _source, values in kept.candidates) == 1 + (1 << 20) - 6
        assert kept.candidates[0] == ("title", "png:tEXt:Title", ["Harbour"])
        facts = describe_image(insert_before_iend(image_bytes("PNG"), title + bombs), "x.png")
        assert facts is not None and facts.title == "Harbour" and facts.keywords == ()


class TestJpeg:
    def test_exif_and_xmp_fields(self) -> None:
        exif = exif_block(
            description="A red kite over the Chiltern hills",
            xp_title=utf16("Red kite"),
            xp_keywords=utf16("kite;bird; Chilterns"),
            xp_comment=utf16("Seen from Coombe Hill"),
            artist="J. Smith",
            user_comment=b"UNICODE\x00" + "Wingspan about 1.7 m".encode("utf-16-be"),  # MM: big-endian
        )
        xmp = xmp_packet(
            '<dc:description><rdf:Alt><rdf:li xml:lang="de">Ein Rotmilan</rdf:li>'
            '<rdf:li xml:lang="x-default">A red kite over the Chiltern hills.</rdf:li>'
            "</rdf:Alt></dc:description>"
            "<dc:subject><rdf:Bag><rdf:li>Kite</rdf:li><rdf:li>raptor</rdf:li></rdf:Bag></dc:subject>"
            "<dc:creator><rdf:Seq><rdf:li>Jane Smith</rdf:li></rdf:Seq></dc:creator>"
            "<photoshop:Headline>Kite season</photoshop:Headline>"
            '<Iptc4xmpCore:AltTextAccessibility><rdf:Alt><rdf:li xml:lang="x-default">A bird of prey with a'
            " forked tail</rdf:li></rdf:Alt></Iptc4xmpCore:AltTextAccessibility>"
        )
        facts = describe_image(image_bytes("JPEG", exif=exif.tobytes(), xmp=xmp), "IMG_2041.JPG")

        assert facts is not None
        assert (facts.image_type, facts.width, facts.height) == ("jpeg", 64, 48)
        assert facts.title == "Kite season\nRed kite"
        assert facts.description == (
            "A red kite over the Chiltern hills.\nEin Rotmilan\nA bird of prey with a forked tail\n"
            "A red kite over the Chiltern hills\nSeen from Coombe Hill\nWingspan about 1.7 m"
        )
        assert facts.keywords == ("Kite", "raptor", "bird", "Chilterns")  # "kite" once, case aside
        assert facts.creator == "Jane Smith; J. Smith"
        assert facts.filename_words == "IMG 2041"
        assert facts.sources == (
            "xmp:photoshop:Headline",
            "xmp:dc:description",
            "xmp:Iptc4xmpCore:AltTextAccessibility",
            "xmp:dc:subject",
            "xmp:dc:creator",
            "exif:XPTitle",
            "exif:ImageDescription",
            "exif:XPComment",
            "exif:UserComment",
            "exif:XPKeywords",
            "exif:Artist",
            "filename",
        )

    @pytest.mark.parametrize(
        ("user_comment", "expected"),
        [
            (b"ASCII\x00\x00\x00Low tide", "Low tide"),
            (b"UNICODE\x00\xff\xfe" + "Ebbe".encode("utf-16-le"), "Ebbe"),  # a byte order mark wins
            (b"\x00" * 8 + "Marée basse".encode(), "Marée basse"),  # undefined: UTF-8 when it decodes
            (b"\x00" * 8 + "Marée".encode("latin-1"), "Marée"),
            (b"ASCII\x00\x00\x00" + b"\x00" * 20, None),  # padding only
        ],
    )
    def test_user_comment_character_codes(self, user_comment: bytes, expected: str | None) -> None:
        data = image_bytes("JPEG", exif=exif_block(user_comment=user_comment).tobytes())
        facts = describe_image(data, "x.jpg")
        assert facts is not None
        assert facts.description == expected

    def test_utf8_in_an_ascii_tag_and_control_characters(self) -> None:
        exif = exif_block(description="Caf\u00e9\x07 on the\t\n corner\x00".encode())
        facts = describe_image(image_bytes("JPEG", exif=exif.tobytes()), "x.jpg")
        assert facts is not None
        assert facts.description == "Café on the corner"

    def test_each_field_is_capped(self) -> None:
        exif = exif_block(description="word" * 1000)
        facts = describe_image(image_bytes("JPEG", exif=exif.tobytes()), "x.jpg")
        assert facts is not None and facts.description is not None
        assert len(facts.description) == MAX_FIELD_CHARS

    @pytest.mark.parametrize(
        "default", ["OLYMPUS DIGITAL CAMERA         ", "SONY DSC", "default", "  ----  "]
    )
    def test_camera_default_descriptions_are_dropped(self, default: str) -> None:
        exif = exif_block(description=default, artist="Kim")
        facts = describe_image(image_bytes("JPEG", exif=exif.tobytes()), "beach.jpg")
        assert facts is not None
        assert facts.description is None
        assert facts.sources == ("exif:Artist", "filename")

    def test_pixels_are_never_decoded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def refuse(self: object) -> None:
            raise AssertionError("load() was called")

        exif = exif_block(description="Still read").tobytes()
        files = {fmt: image_bytes(fmt, exif=exif) for fmt in ("JPEG", "PNG", "WEBP")}
        for cls in (Image.Image, ImageFile.ImageFile, WebPImagePlugin.WebPImageFile):
            monkeypatch.setattr(cls, "load", refuse)
        for fmt, data in files.items():
            facts = describe_image(data, "x")
            assert facts is not None and facts.description == "Still read", fmt


class TestWebp:
    def test_exif_and_xmp_chunks(self) -> None:
        exif = exif_block(description="Lighthouse at Hook Head", xp_keywords=utf16("lighthouse"))
        xmp = xmp_packet(
            '<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Hook Head</rdf:li></rdf:Alt></dc:title>'
        )
        facts = describe_image(image_bytes("WEBP", exif=exif.tobytes(), xmp=xmp), "hook-head.webp")
        assert facts == ImageFacts(
            image_type="webp",
            width=64,
            height=48,
            title="Hook Head",
            description="Lighthouse at Hook Head",
            keywords=("lighthouse",),
            creator=None,
            filename_words="hook head",
            sources=("xmp:dc:title", "exif:ImageDescription", "exif:XPKeywords", "filename"),
        )


class TestNotAnImage:
    def test_a_text_file_named_png(self) -> None:
        assert describe_image(b"just some notes\n", "x.png") is None

    def test_the_file_name_is_not_trusted_either_way(self) -> None:
        facts = describe_image(image_bytes("PNG"), "photo.jpg")
        assert facts is not None and facts.image_type == "png"

    @pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
    @pytest.mark.parametrize("keep", [0.5, 0.97])
    def test_truncated_files(self, fmt: str, keep: float) -> None:
        data = image_bytes(fmt, exif=exif_block(description="x").tobytes())
        assert describe_image(data[: int(len(data) * keep)], "x") is None

    @pytest.mark.parametrize(
        "data",
        [
            b"\x89PNG\r\n\x1a\n" + b"\x00" * 40,
            b"\xff\xd8\xff\xe0" + b"\xff" * 64,
            b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8,
            b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", b"\x00" * 13) + png_chunk(b"IEND", b""),
        ],
    )
    def test_corrupt_files(self, data: bytes) -> None:
        assert describe_image(data, "x") is None


class TestXmpSafety:
    def test_a_billion_laughs_packet_is_refused_quickly(self) -> None:
        entities = '<!ENTITY lol "lol">' + "".join(
            f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10 if n > 1 else "&lol;" * 10}">' for n in range(1, 10)
        )
        xmp = xmp_packet("<dc:description>&lol9;</dc:description>", prologue=f"<!DOCTYPE x [{entities}]>")
        exif = exif_block(description="EXIF still counts")
        facts = describe_image(image_bytes("JPEG", exif=exif.tobytes(), xmp=xmp), "x.jpg")
        assert facts is not None
        assert facts.description == "EXIF still counts"
        assert facts.sources == ("exif:ImageDescription", "filename")

    def test_any_doctype_refuses_the_packet(self) -> None:
        xmp = xmp_packet("<dc:description>harmless</dc:description>", prologue="<!DOCTYPE x>")
        facts = describe_image(image_bytes("JPEG", xmp=xmp), "x.jpg")
        assert facts is not None and facts.description is None

    def test_a_malformed_packet_costs_only_the_xmp(self) -> None:
        xmp = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF></x:xmpmeta>'
        facts = describe_image(image_bytes("JPEG", xmp=xmp), "kept_name.jpg")
        assert facts is not None and facts.sources == ("filename",)

    @pytest.mark.timeout(10)  # 80 s when each value rebuilt the set of those kept before it
    def test_a_packet_of_many_distinct_values_costs_one_look_up_each(self) -> None:
        items = "".join(f"<rdf:li>d{n}</rdf:li>" for n in range(45_000))  # 1 MB of XMP
        info = PngImagePlugin.PngInfo()
        info.add_itxt(
            "XML:com.adobe.xmp",
            xmp_packet(
                f"<dc:description><rdf:Alt><rdf:li>First</rdf:li><rdf:li>FIRST</rdf:li>{items}"
                "<rdf:li>D1</rdf:li></rdf:Alt></dc:description>"
            ).decode(),
        )
        info.add_text("Description", "first")
        facts = describe_image(image_bytes("PNG", pnginfo=info), "x.png")
        assert facts is not None and facts.description is not None
        lines = facts.description.split("\n")
        assert lines[:3] == ["First", "d0", "d1"]  # a value equal but for case is kept once
        assert len(facts.description) <= MAX_FIELD_CHARS
        assert facts.sources == ("xmp:dc:description", "filename")


class TestDecompressionBomb:
    @pytest.mark.parametrize("side", [10_000, 100_000])  # over the limit; over twice the limit
    def test_an_oversized_declared_size_leaves_only_the_file_name(self, side: int) -> None:
        info = PngImagePlugin.PngInfo()
        info.add_text("Title", "not read")
        data = with_ihdr_size(image_bytes("PNG", pnginfo=info), side, side)
        assert side * side > Image.MAX_IMAGE_PIXELS  # type: ignore[operator]
        facts = describe_image(data, "big_map.png")
        assert facts == ImageFacts("png", None, None, None, None, (), None, "big map", ("filename",))

    def test_just_under_the_limit_is_described(self) -> None:
        data = with_ihdr_size(image_bytes("PNG"), 9000, 9000)
        facts = describe_image(data, "x.png")
        assert facts is not None and (facts.width, facts.height) == (9000, 9000)


@pytest.mark.parametrize(
    ("filename", "words"),
    [
        ("sunset_over-Berlin_2024.jpg", "sunset over Berlin 2024"),
        ("photos/2024/IMG_0042.JPG", "IMG 0042"),
        ("C:\\Users\\kim\\Köln Dom (2).webp", "Köln Dom 2"),
        ("archive.tar.png", "archive tar"),
        (".hidden", "hidden"),
        ("___.png", ""),
    ],
)
def test_filename_words(filename: str, words: str) -> None:
    assert filename_words(filename) == words


def ref(
    target: str,
    alt: str | None = None,
    title: str | None = None,
    caption: str | None = None,
    external: bool = False,
) -> ImageReference:
    return ImageReference(target, alt, title, caption, external)


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        pytest.param(
            '![A kite](kite.jpg "Red kite")',
            "birds/notes.md",
            [ref("birds/kite.jpg", "A kite", "Red kite")],
            id="markdown inline",
        ),
        pytest.param(
            "![A *red* `kite` [link](x)](<my kite.jpg>)",
            "a.md",
            [ref("my kite.jpg", "A red kite link")],
            id="markdown alt markup and angle destination",
        ),
        pytest.param(
            "See ![Kite][k1] and ![kite] and ![Kite][]\n\n[k1]: img/k.png 'One'\n[Kite]: img/kite.png\n",
            "a/b.md",
            [ref("a/img/k.png", "Kite", "One"), ref("a/img/kite.png", "kite"), ref("a/img/kite.png", "Kite")],
            id="markdown reference full, shortcut, collapsed",
        ),
        pytest.param("![nothing][undefined] ![no def]", "a.md", [], id="reference without a definition"),
        pytest.param(
            '[k]:\n  pics/k.png\n  "Title below"\n\n![K][k]',
            "a.md",
            [ref("pics/k.png", "K", "Title below")],
            id="definition over three lines",
        ),
        pytest.param(
            '<p>Hi <IMG SRC="../img/a.png" alt="An &amp; B" title=T>',
            "docs/x/page.html",
            [ref("docs/img/a.png", "An & B", "T")],
            id="html img",
        ),
        pytest.param(
            '<div><img alt="lazy" data-src="l.png"><img srcset="s.png 1x, s2.png 2x"><img alt=none>',
            "p.html",
            [ref("l.png", "lazy"), ref("s.png")],
            id="html lazy and srcset, no src",
        ),
        pytest.param(
            '<figure><img src="f.png" alt="Chart"><figcaption>Figure 1: <b>Sales</b>\n by year'
            "</figcaption></figure><img src=g.png>",
            "r/p.htm",
            [ref("r/f.png", "Chart", caption="Figure 1: Sales by year"), ref("r/g.png")],
            id="figure and figcaption",
        ),
        pytest.param(
            "<figure><figcaption>Caption first</figcaption><p><img src=a.png><img src=b.png>",
            "p.html",
            [ref("a.png", caption="Caption first"), ref("b.png", caption="Caption first")],
            id="unclosed figure, caption first",
        ),
        pytest.param(
            "<div <img src=x.png alt='<<'>>< p>&nbsp;<img src='y.png'><img src='z.png",
            "p.html",
            [ref("y.png")],
            id="messy html",
        ),
        pytest.param(
            "Intro\n\n![Map of the route](route.png)\n*Figure 3: The route, day two*\n\nText",
            "trip/log.md",
            [ref("trip/route.png", "Map of the route", caption="Figure 3: The route, day two")],
            id="emphasised caption line",
        ),
        pytest.param(
            "[![Logo](logo.png)](https://example.org)\n\n_The project logo_",
            "a.md",
            [ref("logo.png", "Logo", caption="The project logo")],
            id="underscore caption after a blank line",
        ),
        pytest.param(
            '<img src="a.png" alt="A">\n**Figure 2.**',
            "a.md",
            [ref("a.png", "A", caption="Figure 2.")],
            id="caption below an html img in markdown",
        ),
        pytest.param(
            "Text ![inline](a.png) text\n*Not a caption*",
            "a.md",
            [ref("a.png", "inline")],
            id="image inside a sentence has no caption",
        ),
        pytest.param("![a](a.png)\n\n\n*too far*", "a.md", [ref("a.png", "a")], id="caption too far"),
        pytest.param(
            "![a](a.png)\n*one* and *two*", "a.md", [ref("a.png", "a")], id="partly emphasised line"
        ),
        pytest.param(
            "![up](../../../img/x.png) ![dot](./y/./z.png)",
            "a/b/c.md",
            [ref("img/x.png", "up"), ref("a/b/y/z.png", "dot")],
            id="relative paths with ..",
        ),
        pytest.param("![r](/assets/r.png)", "deep/doc.md", [ref("assets/r.png", "r")], id="root-relative"),
        pytest.param(
            "![e](Caf%C3%A9%20menu.png?v=2#top)",
            "m/d.md",
            [ref("m/Café menu.png", "e")],
            id="url-encoded name, query and fragment dropped",
        ),
        pytest.param(
            "![w](https://example.org/a%20b.png?x=1) ![d](data:image/png;base64,iVBORw0K) "
            "![p](//cdn.example.org/c.png)",
            "a/d.md",
            [
                ref("https://example.org/a%20b.png?x=1", "w", external=True),
                ref("data:image/png;base64,iVBORw0K", "d", external=True),
                ref("//cdn.example.org/c.png", "p", external=True),
            ],
            id="external urls kept as written",
        ),
        pytest.param(
            "```\n![code](no.png)\n```\n`![span](no.png)` <!-- ![c](no.png) -->\n\\![esc](no.png)",
            "a.md",
            [],
            id="code, comments and escapes are not images",
        ),
        pytest.param(
            "A stray ` backtick\n\n![kept](k.png) `code`\n\n![not an\n\nimage](x.png)",
            "a.md",
            [ref("k.png", "kept")],
            id="code spans and alt text stop at a blank line",
        ),
        pytest.param(
            "![a](f(1).png) ![b]() ![](#only-fragment)",
            "a.md",
            [ref("f(1).png", "a")],
            id="parentheses in a destination, empty targets",
        ),
        pytest.param(
            "<img src=a.png alt=one>\n![two](b.png)",
            "a.md",
            [ref("a.png", "one"), ref("b.png", "two")],
            id="html and markdown in document order",
        ),
    ],
)
def test_find_image_references(text: str, path: str, expected: list[ImageReference]) -> None:
    assert find_image_references(text, path) == expected


def test_markdown_syntax_in_an_html_document_is_plain_text() -> None:
    assert find_image_references("<p>![not](an image.png)</p>", "page.html") == []


def facts(**fields: object) -> ImageFacts:
    base: dict[str, object] = {
        "image_type": "jpeg",
        "width": 10,
        "height": 10,
        "title": None,
        "description": None,
        "keywords": (),
        "creator": None,
        "filename_words": "",
        "sources": (),
    }
    return ImageFacts(**{**base, **fields})  # type: ignore[arg-type]


class TestImageText:
    def test_fixed_order(self) -> None:
        text = image_text(
            facts(
                title="Harbour at dawn",
                description="Boats in the mist\nTaken from the pier",
                keywords=("harbour", "boats"),
                creator="Ada",
                filename_words="IMG 0042",
            ),
            [ref("h.jpg", "Boats at anchor", "Tooltip", "Figure 1: Hamburg"), ref("h.jpg", "Second alt")],
        )
        assert text.split("\n") == [
            "Harbour at dawn",
            "Boats in the mist",
            "Taken from the pier",
            "Boats at anchor",
            "Figure 1: Hamburg",
            "Tooltip",
            "Second alt",
            "harbour, boats",
            "Ada",
            "IMG 0042",
        ]

    def test_duplicates_are_dropped_case_and_punctuation_aside(self) -> None:
        text = image_text(
            facts(
                title="Red kite",
                description="A red kite.",
                keywords=("Red Kite", "bird"),
                filename_words="red kite",
            ),
            [ref("k.jpg", "a  RED kite", caption="Red kite!"), ref("k.jpg", "A bird of prey")],
        )
        assert text == "Red kite\nA red kite.\nA bird of prey\nbird"

    def test_nothing_known_is_empty(self) -> None:
        assert image_text(facts()) == ""

    def test_from_a_real_file_and_document(self) -> None:
        exif = exif_block(description="Lighthouse at Hook Head")
        described = describe_image(image_bytes("JPEG", exif=exif.tobytes()), "hook_head.jpg")
        assert described is not None
        references = find_image_references("![The lighthouse](hook_head.jpg)\n*Figure 1: Hook Head*", "a.md")
        assert image_text(described, references) == (
            "Lighthouse at Hook Head\nThe lighthouse\nFigure 1: Hook Head\nhook head"
        )
