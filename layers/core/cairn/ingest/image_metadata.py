"""Readers for the text an image file embeds: PNG text chunks, EXIF and XMP, and structure checks
that tell a complete PNG, JPEG or WebP file from a truncated one. Each reader yields candidates
`(field, source, values)` for cairn.ingest.images to clean, filter and deduplicate.

Nothing here decodes pixels. PNG chunks are walked here rather than through Pillow, because Pillow
reads only the chunks before the image data on open and decodes every pixel to reach the ones after.
"""

from __future__ import annotations

import re
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

__all__ = [
    "CAMERA_DEFAULTS",
    "MAX_FIELD_CHARS",
    "PNG_SIGNATURE",
    "Candidate",
    "PngMeta",
    "clean_text",
    "exif_candidates",
    "jpeg_complete",
    "meaningful_text",
    "parse_xmp",
    "walk_png",
    "webp_complete",
    "xmp_candidates",
]

Candidate = tuple[str, str, list[str]]
"""(field: title | description | keywords | creator, source such as "exif:Artist", raw values)"""

MAX_FIELD_CHARS = 2000
CAMERA_DEFAULTS = frozenset(
    value.casefold()
    for value in (
        "OLYMPUS DIGITAL CAMERA", "SONY DSC", "DIGITAL CAMERA", "KONICA MINOLTA DIGITAL CAMERA",
        "MINOLTA DIGITAL CAMERA", "SAMSUNG CAMERA PICTURES", "LEICA DIGITAL CAMERA", "EXIF_JPEG_PICTURE",
        "Created with GIMP", "default", "untitled", "image", "picture", "photo", "DCIM",
    )
)  # fmt: skip
"""Descriptions that cameras and editors write into every file: they say nothing about the image."""

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAX_XMP_BYTES = 1 << 20
_MAX_PNG_TEXT_BYTES = 1 << 20  # per chunk, decompressed; as Pillow's own limit
_MAX_PNG_FIELD_BYTES = 1 << 20
"""Of the Title, Description, Comment, Author and Keywords chunks' text, in all: 256 chunks each
inflating 1 KB to 1 MiB of commas were 256 million empty keywords (67 s and 2 GB for 272 KB)."""
_MAX_PNG_TEXT_CHUNKS = 256
_PNG_KEYS = {"title": "title", "description": "description", "comment": "description",
             "author": "creator", "keywords": "keywords"}  # fmt: skip
_PNG_XMP_KEY = "XML:com.adobe.xmp"

# Control and invisible characters; tabs and line breaks become spaces when whitespace collapses.
_INVISIBLE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u200b\u2060\ufeff\ufffd\ud800-\udfff]")
_WORD_CHAR = re.compile(r"[^\W_]")


def clean_text(value: str) -> str | None:
    """Drop control characters, collapse whitespace, cap at MAX_FIELD_CHARS; empty → None."""
    text = " ".join(_INVISIBLE.sub("", value).split())
    return text[:MAX_FIELD_CHARS].rstrip() or None


def meaningful_text(value: str) -> str | None:
    """clean_text, and None for a camera default or a value with no letter or digit ("----")."""
    text = clean_text(value)
    if text is None or text.casefold() in CAMERA_DEFAULTS or not _WORD_CHAR.search(text):
        return None
    return text


# --- structure: truncation anywhere, not only in the headers Pillow reads -------------------------------


@dataclass(frozen=True, slots=True)
class PngMeta:
    candidates: list[Candidate]
    """From the Title, Description, Comment, Author and Keywords text chunks, in file order."""
    exif: bytes | None
    xmp: bytes | None


def walk_png(data: bytes) -> PngMeta | None:
    """The PNG's text and eXIf chunks, or None when a chunk overruns the data or IEND is missing."""
    candidates: list[Candidate] = []
    exif = xmp = None
    pos, count, budget = len(PNG_SIGNATURE), 0, _MAX_PNG_FIELD_BYTES
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        chunk_type = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            return None
        if chunk_type == b"IEND":
            return PngMeta(candidates, exif, xmp)
        body = data[pos + 8 : pos + 8 + length]
        pos = end
        if chunk_type == b"eXIf" and exif is None:
            exif = body
        elif chunk_type in (b"tEXt", b"zTXt", b"iTXt") and count < _MAX_PNG_TEXT_CHUNKS:
            count += 1
            key_bytes, sep, rest = body.partition(b"\x00")
            if not sep or not 1 <= len(key_bytes) <= 79:
                continue
            key = key_bytes.decode("latin-1")
            if key == _PNG_XMP_KEY and xmp is None:
                xmp = _png_text(chunk_type, rest, _MAX_PNG_TEXT_BYTES)
            elif key.lower() in _PNG_KEYS and budget > 0:
                raw = _png_text(chunk_type, rest, min(budget, _MAX_PNG_TEXT_BYTES))
                if raw is None:
                    continue
                budget -= len(raw)
                text = raw.decode("utf-8" if chunk_type == b"iTXt" else "latin-1", "replace")
                field = _PNG_KEYS[key.lower()]
                values = re.split(r"[;,]", text) if field == "keywords" else [text]
                candidates.append((field, f"png:{chunk_type.decode()}:{key.capitalize()}", values))
    return None


def _png_text(chunk_type: bytes, rest: bytes, limit: int) -> bytes | None:
    """The text of a text chunk, its key and NUL cut off, up to `limit` bytes (inflated no further)."""
    if chunk_type == b"tEXt":
        return rest[:limit]
    if chunk_type == b"zTXt":
        return _inflate(rest[1:], limit) if rest[:1] == b"\x00" else None
    if len(rest) < 2:
        return None
    compressed, method = rest[0], rest[1]
    _lang, _, rest = rest[2:].partition(b"\x00")
    _translated, _, text_bytes = rest.partition(b"\x00")
    if compressed:
        return _inflate(text_bytes, limit) if method == 0 else None
    return text_bytes[:limit]


def _inflate(data: bytes, limit: int) -> bytes | None:
    """Decompress at most `limit` bytes (a bigger text is cut there): no zip bomb expands."""
    try:
        return zlib.decompressobj().decompress(data, limit)
    except zlib.error:
        return None


def jpeg_complete(data: bytes) -> bool:
    """Walk the marker segments to the first scan; the file is complete when an EOI follows it
    (entropy-coded data byte-stuffs 0xFF, so FF D9 there is the real end of the image). Stray bytes
    between segments are skipped, as Pillow and libjpeg do."""
    pos = 2
    while pos + 4 <= len(data):
        marker = data[pos + 1]
        if data[pos] != 0xFF or marker == 0xFF:  # junk, or a fill byte before a marker
            pos += 1
            continue
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # no length
            pos += 2
            continue
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if length < 2:
            return False
        if marker == 0xDA:
            return data.find(b"\xff\xd9", pos + 2 + length) != -1
        pos += 2 + length
    return False


def webp_complete(data: bytes) -> bool:
    return 8 + int.from_bytes(data[4:8], "little") <= len(data)


# --- EXIF ---------------------------------------------------------------------------------------------

_EXIF_IFD = 0x8769
_EXIF_TEXT = (  # (tag, field, source), in priority order within each field
    (0x9C9B, "title", "exif:XPTitle"),
    (0x010E, "description", "exif:ImageDescription"),
    (0x9C9F, "description", "exif:XPSubject"),
    (0x9C9C, "description", "exif:XPComment"),
    (0x9C9E, "keywords", "exif:XPKeywords"),
    (0x013B, "creator", "exif:Artist"),
    (0x9C9D, "creator", "exif:XPAuthor"),
)
_XP_TAGS = frozenset({0x9C9B, 0x9C9C, 0x9C9D, 0x9C9E, 0x9C9F})
_USER_COMMENT = 0x9286


def exif_candidates(raw: Any) -> Iterator[Candidate]:
    """ImageDescription, Artist, the Windows XP* tags and UserComment of an EXIF block."""
    if not isinstance(raw, bytes) or not raw:
        return
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possibly corrupt EXIF data"
            exif = Image.Exif()
            exif.load(raw)
            tags = dict(exif)
            sub = dict(exif.get_ifd(_EXIF_IFD))
    except Exception:  # a damaged EXIF block costs its text, not the image
        return
    tiff = raw[6:] if raw.startswith(b"Exif\x00\x00") else raw
    big_endian = tiff[:2] == b"MM"
    user_comment = _user_comment(sub.get(_USER_COMMENT), big_endian)
    for tag, field, source in _EXIF_TEXT:
        value = _xp_text(tags.get(tag)) if tag in _XP_TAGS else _ascii_text(tags.get(tag))
        if value is not None:
            yield field, source, value.split(";") if field == "keywords" else [value]
        if tag == 0x9C9C and user_comment is not None:  # after XPComment, in description order
            yield "description", "exif:UserComment", [user_comment]


def _ascii_text(value: Any) -> str | None:
    """EXIF ASCII tags: Pillow decodes them as Latin-1, but most writers today store UTF-8."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str):
        return None
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def _xp_text(value: Any) -> str | None:
    """Windows XP* tags: UTF-16LE bytes, NUL-terminated, stored as BYTE (some writers give ints)."""
    if isinstance(value, tuple | list) and all(isinstance(item, int) and 0 <= item < 256 for item in value):
        value = bytes(value)
    if isinstance(value, str):
        return value.split("\x00", 1)[0]
    if not isinstance(value, bytes):
        return None
    return value[: len(value) // 2 * 2].decode("utf-16-le", "replace").split("\x00", 1)[0]


def _user_comment(value: Any, big_endian: bool) -> str | None:
    """UserComment: an 8-byte character code (ASCII, UNICODE, JIS or undefined) then the text."""
    if isinstance(value, str):
        return value
    if not isinstance(value, bytes) or len(value) < 8:
        return None
    code, body = value[:8].rstrip(b"\x00 ").upper(), value[8:]
    if code == b"UNICODE":
        if body.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = body.decode("utf-16", "replace")
        else:
            text = body[: len(body) // 2 * 2].decode("utf-16-be" if big_endian else "utf-16-le", "replace")
    elif code == b"JIS":
        text = body.decode("shift_jis", "replace")
    else:  # ASCII, or undefined: UTF-8 when it decodes, else Latin-1
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = body.decode("latin-1")
    return text.split("\x00", 1)[0]


# --- XMP ----------------------------------------------------------------------------------------------

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_DC = "http://purl.org/dc/elements/1.1/"
_PHOTOSHOP = "http://ns.adobe.com/photoshop/1.0/"
_IPTC_CORE = "http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_XMP_PROPERTIES = (  # (namespace, name, field, source), in priority order within each field
    (_DC, "title", "title", "xmp:dc:title"),
    (_PHOTOSHOP, "Headline", "title", "xmp:photoshop:Headline"),
    (_DC, "description", "description", "xmp:dc:description"),
    (_IPTC_CORE, "AltTextAccessibility", "description", "xmp:Iptc4xmpCore:AltTextAccessibility"),
    (_IPTC_CORE, "ExtDescrAccessibility", "description", "xmp:Iptc4xmpCore:ExtDescrAccessibility"),
    (_DC, "subject", "keywords", "xmp:dc:subject"),
    (_DC, "creator", "creator", "xmp:dc:creator"),
)
_CONTAINERS = frozenset(f"{{{_RDF}}}{name}" for name in ("Alt", "Bag", "Seq"))
_XMP_ROOTS = (("<x:xmpmeta", "</x:xmpmeta>"), ("<x:xapmeta", "</x:xapmeta>"), ("<rdf:RDF", "</rdf:RDF>"))


def xmp_candidates(raw: Any) -> Iterator[Candidate]:
    """dc:title, photoshop:Headline, dc:description, the IPTC accessibility texts, dc:subject and
    dc:creator of an XMP packet."""
    root = parse_xmp(raw)
    if root is None:
        return
    for namespace, name, field, source in _XMP_PROPERTIES:
        yield field, source, _xmp_values(root, f"{{{namespace}}}{name}")


def parse_xmp(raw: Any) -> ElementTree.Element | None:
    """The XMP packet's root element, or None. A packet that declares a DOCTYPE or an entity is
    refused outright (the only way to a billion-laughs expansion); ElementTree never fetches external
    entities. Only the `<x:xmpmeta>` (or bare `<rdf:RDF>`) element is parsed."""
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, bytes):
        if len(raw) > _MAX_XMP_BYTES:
            return None
        text = raw.decode("utf-16" if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8", "replace")
    else:
        return None
    if len(text) > _MAX_XMP_BYTES or "<!doctype" in text.lower() or "<!entity" in text.lower():
        return None
    for opening, closing in _XMP_ROOTS:
        start, end = text.find(opening), text.rfind(closing)
        if start != -1 and end > start:
            try:
                return ElementTree.fromstring(text[start : end + len(closing)])
            except ElementTree.ParseError:
                return None
    return None


def _xmp_values(root: ElementTree.Element, qname: str) -> list[str]:
    """A property's values from every rdf:Description: attribute form, simple element, or the items
    of an rdf:Alt (x-default first), rdf:Bag or rdf:Seq."""
    values: list[str] = []
    for description in root.iter(f"{{{_RDF}}}Description"):
        if qname in description.attrib:
            values.append(description.attrib[qname])
        for prop in description.findall(qname):
            container = next((child for child in prop if child.tag in _CONTAINERS), None)
            if container is None:
                values.append(prop.text or "")
                continue
            items = [item for item in container if item.tag == f"{{{_RDF}}}li"]
            items.sort(key=lambda item: item.get(_XML_LANG, "").lower() != "x-default")
            values.extend(item.text or "" for item in items)
    return values
