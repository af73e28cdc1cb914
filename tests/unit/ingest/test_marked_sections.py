"""Markup Python's HTML parser rejects (`<![` not opening a marked section it knows) is read as
text: a Markdown note or an HTML page holding it is ingested, its images still found, and the
offsets into it unchanged; what cannot be mended is refused as damaged, never raised as an
AssertionError (a 500)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.domain.errors import UnsupportedContent
from cairn.ingest.extract import extract_text
from cairn.ingest.image_references import find_image_references
from cairn.ingest.marked_sections import readable, readable_bytes
from tests.fakes.container import fake_container

PIECES = ["<", "!", "[", "]", "-", ">", "/", "?", " ", "a", "CDATA", "if", "endif", '"', "=", "\n"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_any_markup_made_readable_parses_and_keeps_its_length(markup: str) -> None:
    text = readable(markup + " tail")
    assert len(text) == len(markup) + 5
    parser = HTMLParser()
    parser.feed(text)
    parser.close()
    BeautifulSoup(readable_bytes((markup + " tail").encode()), "html.parser")


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


def test_html_no_mend_reaches_is_refused_as_damaged() -> None:
    with pytest.raises(UnsupportedContent):
        extract_text("<p>x</p><![ y".encode("utf-16"), "html", "p.html")
