"""The images a Markdown or HTML document shows, with the alt text, title and caption it gives them.

Markdown: inline (`![alt](src "title")`) and reference-style (`![alt][ref]`, `![alt][]`, `![alt]`
with `[ref]: src "title"`) images, raw `<img>` tags among the text, and the common caption
convention of a wholly emphasised line (`*Figure 3: …*`, `_…_`) directly below a line that shows
only the image (one blank line between allowed). Fenced code, code spans and HTML comments are
skipped. HTML (documents named .html, .htm or .xhtml): `<img>` tags, read with lxml's tolerant HTML
parser, and `<figure>`: its `<figcaption>` text captions every `<img>` inside it.
"""

from __future__ import annotations

import bisect
import html
import posixpath
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from cairn.ingest.image_metadata import clean_text
from cairn.ingest.markdown import iter_lines
from cairn.ingest.marked_sections import readable

__all__ = ["ImageReference", "find_image_references"]


@dataclass(frozen=True, slots=True)
class ImageReference:
    """One place a document shows an image. `target` is a brain path resolved against the document's
    folder, or, when `external`, the URL (http(s), data:, any scheme, or //host) exactly as written."""

    target: str
    alt: str | None
    title: str | None
    caption: str | None
    external: bool = False


_HTML_SUFFIXES = (".html", ".htm", ".xhtml")
# Bracketed text with one level of nested brackets; like every inline, it never crosses a blank line.
_ALT_CHAR = r"(?:[^\[\]\\\n]|\n(?![ \t]*\r?\n)|\\.)"
_ALT = r"((?:" + _ALT_CHAR + r"|\[" + _ALT_CHAR + r"*\])*)"
_DEST = r"(<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))+)"
_TITLE = r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|\(((?:[^()\\]|\\.)*)\))"""
_INLINE = re.compile(r"(?<!\\)!\[" + _ALT + r"\]\(\s*" + _DEST + r"(?:\s+" + _TITLE + r")?\s*\)", re.S)
# Full (`![alt][ref]`), collapsed (`![alt][]`) or shortcut (`![alt]`, not followed by `[` or `(`).
_REFERENCE = re.compile(r"(?<!\\)!\[" + _ALT + r"\](?:\[((?:[^\[\]\\]|\\.)*)\]|(?![\[(]))", re.S)
_DEFINITION = re.compile(
    r"^ {0,3}\[((?:[^\[\]\\]|\\.)+)\]:[ \t]*\n?[ \t]*"
    + _DEST
    + r"(?:(?:[ \t]+|[ \t]*\n[ \t]*)"
    + _TITLE
    + r")?[ \t]*$",
    re.M,
)
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(?:(?!\n[ \t]*\r?\n).)+?(?<!`)\1(?!`)", re.S)
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_EMPHASIS = re.compile(r"(\*{1,3}|(?<!\w)_{1,3})(?=\S)(.+?)(?<=\S)\1(?!\w)")
_ALT_LINK = re.compile(r"\[([^\[\]]*)\]\([^()]*\)")
_CAPTION = re.compile(r" {0,3}(\*{1,2}|_{1,2})(?=\S)(.+?)(?<=\S)\1[ \t]*")
_LINK_WRAPPER = re.compile(r"\[\s*\]\([^()\s]*(?:\s+\"[^\"]*\")?\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+:")


@dataclass(slots=True)
class _Found:
    start: int
    end: int
    src: str
    alt: str | None
    title: str | None
    caption: str | None = None
    markdown_line: bool = True
    """Whether an emphasised line below may caption it (not in HTML documents or inside <figure>)."""


def find_image_references(text: str, document_path: str) -> list[ImageReference]:
    """Every image the document shows, in document order (see the module docstring for what is read).
    A document is HTML when its path ends in .html, .htm or .xhtml, else Markdown."""
    normalized = document_path.replace("\\", "/").strip("/")
    folder = posixpath.dirname(normalized)
    if normalized.lower().endswith(_HTML_SUFFIXES):
        found = _html_images(text, markdown=False)
    else:
        source = _blank_code(text)
        found = _markdown_images(text, source) + _html_images(source, markdown=True)
        found.sort(key=lambda item: item.start)
        crowded = _crowded_lines(source, found)
        for item, line in zip(found, crowded, strict=True):
            if item.caption is None and item.markdown_line and not line:
                item.caption = _caption_below(text, source, item)
    references = []
    for item in found:
        resolved = _resolve(item.src, folder)
        if resolved is not None:
            target, external = resolved
            alt, title, caption = (clean_text(v) if v else None for v in (item.alt, item.title, item.caption))
            references.append(ImageReference(target, alt, title, caption, external))
    return references


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _blank_code(text: str) -> str:
    """Fenced code blocks, code spans and HTML comments become spaces (offsets and lines kept)."""
    parts, copied = [], 0
    for offset, line, is_code in iter_lines(text):
        if is_code:
            parts += [text[copied:offset], " " * len(line)]
            copied = offset + len(line)
    parts.append(text[copied:])
    return _blank_comments(_CODE_SPAN.sub(_blank, "".join(parts)))


def _blank_comments(text: str) -> str:
    """Each `<!-- ... -->` blanked (`_blank`); an unclosed one is left as it is. A scan rather than
    a lazy regex, which read from every unclosed `<!--` to the end (80 KB of them took 9 s)."""
    parts, copied = [], 0
    while (start := text.find("<!--", copied)) != -1:
        end = text.find("-->", start + 4)
        if end == -1:
            break  # no comment closes after this one, nor after any later one
        end += 3
        parts += [text[copied:start], re.sub(r"[^\n]", " ", text[start:end])]
        copied = end
    parts.append(text[copied:])
    return "".join(parts)


def _unescape(value: str) -> str:
    return html.unescape(_ESCAPE.sub(r"\1", value))


def _plain_alt(value: str) -> str:
    """Alt text (or a caption) as CommonMark renders it: markup gone, link text kept."""
    value = _ALT_LINK.sub(r"\1", value)
    for _ in range(3):  # nested emphasis
        value = _EMPHASIS.sub(r"\2", value)
    return _unescape(value.replace("`", ""))


def _destination(value: str) -> str:
    return value[1:-1] if value.startswith("<") and value.endswith(">") else value


def _label(value: str) -> str:
    return " ".join(value.casefold().split())


def _markdown_images(text: str, source: str) -> list[_Found]:
    """Matches run on `source` (code blanked); the values are read from `text` at the same offsets."""

    def value(match: re.Match[str], *groups: int) -> str | None:
        for group in groups:
            if match.start(group) != -1:
                return text[match.start(group) : match.end(group)]
        return None

    def title(match: re.Match[str]) -> str | None:
        raw = value(match, 3, 4, 5)
        return _unescape(raw) if raw else None

    found = [
        _Found(
            m.start(),
            m.end(),
            _unescape(_destination(value(m, 2) or "")),
            _plain_alt(value(m, 1) or ""),
            title(m),
        )
        for m in _INLINE.finditer(source)
    ]
    definitions: dict[str, tuple[str, str | None]] = {}
    for match in _DEFINITION.finditer(source):
        label = _label(value(match, 1) or "")
        definitions.setdefault(label, (_unescape(_destination(value(match, 2) or "")), title(match)))
    taken = [(item.start, item.end) for item in found]
    for match in _REFERENCE.finditer(source):
        if any(start <= match.start() < end for start, end in taken):
            continue
        alt = value(match, 1) or ""
        definition = definitions.get(_label(value(match, 2) or alt))
        if definition is not None:
            found.append(_Found(match.start(), match.end(), definition[0], _plain_alt(alt), definition[1]))
    return found


class _ImageTarget:
    """lxml parser target: `<img>` tags at the offsets their marks give (`_html_images`);
    `<figcaption>` text goes to the images of its `<figure>`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: list[_Found] = []
        self.figures: list[tuple[list[_Found], list[str], list[int]]] = []
        """Open <figure>s: their images, caption text and [open figcaption count]."""
        self.raw_text = 0  # inside <script> or <style>

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        if tag in ("script", "style"):
            self.raw_text += 1
        elif tag == "figure":
            self.figures.append(([], [], [0]))
        elif tag == "figcaption" and self.figures:
            self.figures[-1][2][0] += 1
        elif tag == "img":
            self._image(attrib)

    def end(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.raw_text = max(0, self.raw_text - 1)
        elif tag == "figcaption" and self.figures:
            depth = self.figures[-1][2]
            depth[0] = max(0, depth[0] - 1)
        elif tag == "figure" and self.figures:
            self._close_figure()

    def data(self, data: str) -> None:
        if self.figures and self.figures[-1][2][0] and not self.raw_text:
            self.figures[-1][1].append(data)

    def close(self) -> None:
        while self.figures:
            self._close_figure()

    def _image(self, attrs: Mapping[str, str]) -> None:
        srcset = (attrs.get("srcset") or "").strip()
        src = attrs.get("src") or attrs.get("data-src") or (srcset.split()[0] if srcset else "")
        mark = attrs.get(_MARK, "")
        if not src or not mark.isdigit():  # no mark: not a tag of the text (none is known)
            return
        start = int(mark)
        item = _Found(start, _tag_end(self.text, start), src, attrs.get("alt"), attrs.get("title"))
        self.found.append(item)
        if self.figures:
            item.markdown_line = False
            self.figures[-1][0].append(item)

    def _close_figure(self) -> None:
        images, caption, _depth = self.figures.pop()
        text = clean_text("".join(caption))
        for item in images:
            item.caption = text


_IMG_TAG = re.compile(r"<img(?![^\t\n\r\f />\x00])", re.I)
"""An `<img` an HTML parser reads as an img tag (its tag names end at whitespace, `/`, `>` or NUL)."""
_MARK = "data-cairn-offset"
"""The attribute each `<img` of the text is given before parsing: its offset in the text. Unquoted,
so that an `<img` inside a quoted attribute value, a comment or a script stays text."""
_SPACE = " \t\n\r\f"


def _tag_end(text: str, start: int) -> int:
    """The end of the tag opened at `start`: its first `>` outside a quoted attribute value."""
    at, close = start, -1
    while True:
        if close < at:
            close = text.find(">", at)
            if close == -1:
                return len(text)
        equals = text.find("=", at, close)
        if equals == -1:
            return close + 1
        at = equals + 1
        while at < len(text) and text[at] in _SPACE:
            at += 1
        if text[at : at + 1] in ("'", '"'):
            at = text.find(text[at], at + 1) + 1
            if at == 0:
                return len(text)


def _html_images(text: str, *, markdown: bool) -> list[_Found]:
    # Only an img tag is found: without one there is nothing to parse.
    if _IMG_TAG.search(text) is None:
        return []
    from lxml import etree  # only for a document that shows an img tag

    marked = _IMG_TAG.sub(lambda tag: f"{tag.group()} {_MARK}={tag.start()} ", readable(text))
    target = _ImageTarget(text)
    parser = etree.HTMLParser(target=target, recover=True, no_network=True, encoding="utf-8")
    parser.feed(marked.encode("utf-8", "replace"))  # a lone surrogate is no UTF-8
    parser.close()
    if not markdown:
        for item in target.found:
            item.markdown_line = False
    return target.found


CROWDED: Final = 32
"""A line showing more images than this captions none of them: a gallery row, not a figure (each
image's check reads its whole line, so 50,000 images on one line took 295 s)."""


def _crowded_lines(source: str, found: list[_Found]) -> list[bool]:
    """For each of `found` (in order), whether its line shows more than CROWDED images."""
    breaks = [m.start() for m in re.finditer("\n", source)]
    lines = [bisect.bisect_left(breaks, item.start) for item in found]
    counts = Counter(lines)
    return [counts[line] > CROWDED for line in lines]


def _line_bounds(source: str, start: int, end: int) -> tuple[int, int]:
    line_start = source.rfind("\n", 0, start) + 1
    line_end = source.find("\n", end)
    return line_start, len(source) if line_end == -1 else line_end


def _caption_below(text: str, source: str, item: _Found) -> str | None:
    """The wholly emphasised line (`*Figure 3: …*`, `_…_`) below a line that shows only this image,
    with one blank line between at most. `source` is `text` with code blanked, offsets unchanged."""
    line_start, line_end = _line_bounds(source, item.start, item.end)
    rest = source[line_start : item.start] + source[item.end : line_end]
    if _HTML_TAG.sub("", _LINK_WRAPPER.sub("", rest)).strip():  # only a link around it may share the line
        return None
    for _ in range(2):
        if line_end >= len(source):
            return None
        line_start, line_end = _line_bounds(source, line_end + 1, line_end + 1)
        if source[line_start:line_end].strip():
            break
    else:
        return None
    match = _CAPTION.fullmatch(text[line_start:line_end].rstrip("\r"))
    if match is None or match.group(1)[0] in match.group(2) or "![" in match.group(2):
        return None
    return _plain_alt(match.group(2))


def _resolve(src: str, folder: str) -> tuple[str, bool] | None:
    """(target, external). Relative sources resolve against `folder` (a leading `/` means the brain
    root); query and fragment are dropped, %-escapes decoded, `..` above the root ignored."""
    src = src.strip()
    if not src:
        return None
    if src.startswith("//") or _SCHEME.match(src):
        return src, True
    path = unquote(re.split(r"[?#]", src, maxsplit=1)[0]).replace("\\", "/")
    if not path:
        return None
    parts: list[str] = []
    for segment in ((folder if not path.startswith("/") else "") + "/" + path).split("/"):
        if segment == "..":
            if parts:
                parts.pop()
        elif segment not in ("", "."):
            parts.append(segment)
    return ("/".join(parts), False) if parts else None
