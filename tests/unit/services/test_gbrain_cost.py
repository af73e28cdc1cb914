"""gbrain's pages (domain/pages.py, services/gbrain/assertions.py, the chunks of ingest/markdown.py's
headings) on input built to be slow: a page of at most 1 MiB costs about a pass over its text, with
what is read of it unchanged."""

from __future__ import annotations

from datetime import datetime

import pytest

from cairn.domain.pages import PageText, parse_page
from cairn.ingest.chunking import chunk
from cairn.ingest.markdown import MAX_TITLE_CHARS, atx_headings
from cairn.services.gbrain.assertions import AssertedPage, contradictions, extract


@pytest.mark.timeout(10)
def test_a_run_of_carriage_returns_before_the_last_letter_is_read_in_a_pass() -> None:
    """The compiled truth's trailing newlines were cut by `[\\r\\n]+\\Z`, tried at each character of
    the run: 40,000 `\\r` then a letter took 3.4 s, 200,000 (this test) about 90 s."""
    text = parse_page("\r" * 200_000 + "x\r\n\n")
    assert text.compiled_truth == "\r" * 200_000 + "x"


@pytest.mark.timeout(10)
def test_a_key_value_line_of_many_spaces_is_read_in_a_pass() -> None:
    """A `Key: value` line's lazy value tried `\\s*$` at each character: a value, 200,000 spaces and
    a letter took about 90 s."""
    found = extract(PageText({}, "Role: chief" + " " * 200_000 + "x"), "Alice")
    assert [(a.attribute, a.value) for a in found] == [("role", "chief x")]  # its spaces folded
    assert [(a.attribute, a.value) for a in extract(PageText({}, "- **Role**: chief  \r"), "Alice")] == [
        ("role", "chief")
    ]


@pytest.mark.timeout(10)
def test_a_long_run_of_hyphenated_capitals_is_read_in_a_pass() -> None:
    """Each capital after a `-` in one run began a name read to the run's end: 40,000 characters of
    `A-` took 83 s, 60,000 (this test) about three minutes."""
    assert extract(PageText({}, "A-" * 30_000 + " is a thing"), "Alice") == []
    found = extract(PageText({}, "Jean-Luc is a captain. x-Bar works at Acme."), "S")
    assert [(a.subject, a.attribute, a.value) for a in found] == [
        ("Jean-Luc", "is_a", "captain"),
        ("Bar", "works_at", "Acme"),
    ]


@pytest.mark.timeout(10)
def test_claims_of_one_page_are_not_paired_with_each_other() -> None:
    """Every two claims of one key were paired, then those of one page skipped: a page of 40,000
    `Role: …` lines made 800 million pairs (minutes); only claims of two pages are paired."""
    at = datetime(2026, 1, 1)
    many = PageText({}, "\n".join(f"Role: v{i}" for i in range(40_000)))
    pages = [AssertedPage("a", "Alice", many, at), AssertedPage("b", "Alice", PageText({"role": "v7"}), at)]
    found = contradictions(pages)
    assert len(found) == 39_999
    assert found[0].description == "Alice has conflicting role assertions: v0 vs v7"
    assert contradictions(pages, focus="c") == []


@pytest.mark.timeout(10)
def test_a_page_of_one_long_heading_gives_its_chunks_a_capped_heading() -> None:
    """Every chunk of a section carries its heading path (its title, digest and embedded text): a
    brain_put of one heading line of 900 KB (`## ## …`) made 1,300 chunks each carrying the whole
    line, 23 s and 3.5 GB to write. A heading's title is cut at MAX_TITLE_CHARS, as a document's."""
    spans = chunk("## " * 300_000).spans
    assert len(spans) > 1_000
    assert sum(len(span.heading or "") for span in spans) <= len(spans) * MAX_TITLE_CHARS
    titles = [h.title for h in atx_headings("# Setup\nText.\n## Install ##\n### " + "x" * 600)]
    assert titles == ["Setup", "Install", "x" * MAX_TITLE_CHARS]


@pytest.mark.timeout(10)
def test_a_frontmatter_of_maps_merged_into_each_other_is_none() -> None:
    """Each map merged into the next (`m2: &m2 {<<: *m1, k2: 2}`) copies every key before it: 4,000
    such maps (154 KB) took 6 s to load, 12,000 (this test) about a minute and gigabytes."""
    chain = "".join(f"m{i}: &m{i} {{<<: *m{i - 1}, k{i}: {i}}}\n" for i in range(1, 12_000))
    text = parse_page(f"---\nm0: &m0 {{a: 1}}\ntitle: T\n{chain}---\nbody")
    assert text.frontmatter == {} and text.compiled_truth == "body"
    merged = parse_page("---\nbase: &b {role: ceo}\n<<: *b\ntitle: T\n---\nbody")
    assert merged.frontmatter == {"role": "ceo", "title": "T"}  # a merge at the top still counts
