"""Marked sections read as Cairn has always read them: a stray `<![` (not opening a marked section
html.parser knew) is text, not the start of a bogus comment, in a Markdown note or an HTML page, its
images still found and the offsets into it unchanged; a CDATA section's content is text; a page in
UTF-16 is mended after it is decoded."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.domain.errors import CairnError
from cairn.ingest.extract import extract_text
from cairn.ingest.image_references import find_image_references
from cairn.ingest.marked_sections import cdata_as_text, readable
from tests.fakes.container import fake_container

PIECES = ["<", "!", "[", "]", "-", ">", "/", "?", " ", "a", "CDATA", "if", "endif", '"', "=", "\n"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_any_markup_made_readable_keeps_its_length_and_reads(markup: str) -> None:
    text = readable(markup + " tail")
    assert len(text) == len(markup) + 5
    assert all(a == b or (a, b) == (" ", "<") for a, b in zip(text, markup + " tail", strict=True))
    with contextlib.suppress(CairnError):
        extract_text((markup + " tail").encode(), "html", "p.html")
    find_image_references(markup + " <img src=x.png>", "notes/a.md")


def test_known_marked_sections_are_left_as_they_are() -> None:
    for section in ("<![CDATA[x]]>", "<![if !IE]>", "<![endif]>"):
        assert readable(section) == section


def test_a_stray_marked_section_is_text_in_markdown_and_html() -> None:
    note = "Compare a <![ b, see ![the chart](chart.png)"
    assert [r.target for r in find_image_references(note, "notes/a.md")] == ["notes/chart.png"]
    page = extract_text(b"<html><body><p>kept <![<![ words</p></body></html>", "html", "p.html")
    assert "kept" in page.text and "words" in page.text


def test_ingest_of_a_note_with_stray_markup_completes() -> None:
    container = fake_container()
    brain = container.brains.create("Notes", slug="notes")
    done = container.ingest.ingest_bytes(brain, b"x <![ y and more", name="a.md")
    assert done.status == "completed"


def test_a_utf16_page_is_mended_after_it_is_decoded() -> None:
    """The bytes were mended before decoding, which missed UTF-16: such a page was refused as
    damaged. Decoded first, it reads like any other page."""
    page = extract_text("<p>x</p><![ y".encode("utf-16"), "html", "p.html")
    assert page.text == "x\n\n![ y"


def test_cdata_content_is_text() -> None:
    assert cdata_as_text("a<![CDATA[ 1 < 2 & x ]]>b") == "a 1 &lt; 2 &amp; x b"
    assert cdata_as_text("a<![cdata[x] ]>b <![CDATA[ y") == "axb &lt;![CDATA[ y"
    page = extract_text(b"<p>kept <![CDATA[1 < 2 ]]>words</p><![CDATA[", "html", "p.html")
    assert page.text == "kept 1 < 2 words\n\n<![CDATA["
