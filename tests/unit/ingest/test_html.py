"""HTML extraction keeps the main content and drops hidden elements and page furniture."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.ingest import html as html_module
from cairn.ingest.extract import extract_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "html"
EXPECTATIONS = {
    name: labels
    for name, labels in json.loads((FIXTURES / "expectations.json").read_text()).items()
    if not name.startswith("_")
}


def _text(html: str | bytes) -> str:
    return extract_text(html.encode() if isinstance(html, str) else html, "html").text


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@pytest.mark.parametrize("page", sorted(EXPECTATIONS))
def test_real_pages_keep_their_main_content_and_lose_their_furniture(page: str) -> None:
    text = _normalized(_text((FIXTURES / page).read_bytes()))
    labels = EXPECTATIONS[page]
    assert [p for p in labels["main"] if _normalized(p) not in text] == []
    assert [p for p in labels["furniture"] if _normalized(p) in text] == []


class TestMdBook:
    """An mdBook page: sidebar, menu bar, theme menu and a keyboard-help pop-up hidden by CSS."""

    text = _text((FIXTURES / "mdbook_chapter.html").read_bytes())

    def test_the_keyboard_shortcut_help_is_not_extracted(self) -> None:
        for phrase in ("Keyboard shortcuts", "Press", "to search in the book", "Esc"):
            assert phrase not in self.text

    def test_headings_links_and_code_of_the_chapter_survive(self) -> None:
        assert self.text.startswith("# Configuration\n\nLantern reads its settings from")
        assert "\n\n## Listening addresses\n\n" in self.text
        assert "\n\n## Quotas\n\n" in self.text
        assert "see the certificate chapter before exposing it" in self.text  # link text, inline
        assert '```\nlisten = ["127.0.0.1:8443", "[::1]:8443"]\nworker_threads = 8\n```' in self.text
        assert "- Quotas are enforced per volume, not per bucket." in self.text


class TestHidden:
    @pytest.mark.parametrize(
        "element",
        [
            "<div hidden>SECRET</div>",
            '<div aria-hidden="true">SECRET</div>',
            '<div style="color: red; display : none">SECRET</div>',
            '<div style="visibility:hidden">SECRET</div>',
            "<template><p>SECRET</p></template>",
            "<noscript>SECRET</noscript>",
            "<dialog><p>SECRET</p></dialog>",
            '<div class="sr-only">SECRET</div>',
        ],
    )
    def test_hidden_elements_are_dropped(self, element: str) -> None:
        html = f"<body><h1>Title</h1><p>visible words</p>{element}</body>"
        assert _text(html) == "# Title\n\nvisible words"

    def test_until_found_content_is_searchable_so_it_is_kept(self) -> None:
        assert "FOUND" in _text('<body><p>a</p><div hidden="until-found">FOUND</div></body>')

    def test_closed_details_are_content(self) -> None:
        text = _text("<body><details><summary>Question?</summary><p>Answer.</p></details></body>")
        assert text == "Question?\n\nAnswer."


class TestFurniture:
    def test_page_header_footer_nav_and_aside_are_dropped_around_the_body(self) -> None:
        html = """<body><header><a href="/">Site name</a></header><nav>Home | Blog</nav>
            <h1>Title</h1><p>Body text.</p><aside>Popular posts</aside>
            <footer>Copyright</footer></body>"""
        assert _text(html) == "# Title\n\nBody text."

    @pytest.mark.parametrize(
        "role", ["navigation", "banner", "contentinfo", "search", "menu", "dialog", "complementary"]
    )
    def test_furniture_roles_are_dropped(self, role: str) -> None:
        assert _text(f'<body><p>Body.</p><div role="{role}">FURNITURE</div></body>') == "Body."

    def test_main_element_is_preferred_over_the_rest_of_the_page(self) -> None:
        html = "<body><div>Top bar</div><main><h1>T</h1><p>Inside.</p></main><div>After</div></body>"
        assert _text(html) == "# T\n\nInside."

    def test_a_single_article_is_the_main_content_and_keeps_its_own_header(self) -> None:
        html = """<body><div>Latest news ticker</div><article><header><h1>Story</h1>
            <p>By A. Writer</p></header><p>Story text.</p><footer>Tags: x</footer></article></body>"""
        assert _text(html) == "# Story\n\nBy A. Writer\n\nStory text."

    def test_several_articles_mean_the_whole_body(self) -> None:
        html = "<body><article><p>One.</p></article><article><p>Two.</p></article></body>"
        assert _text(html) == "One.\n\nTwo."

    def test_callout_asides_inside_the_content_are_kept(self) -> None:
        html = '<main><p>Body.</p><aside class="admonition note"><p>Mind the gap.</p></aside></main>'
        assert _text(html) == "Body.\n\nMind the gap."

    @pytest.mark.parametrize(
        "attrs",
        [
            'class="sidebar"',
            'class="tocCollapsible_ETCw"',
            'class="table-of-contents"',
            'id="cookie-banner"',
            'class="share-tools"',
            'class="comments-area"',
            'class="site-footer"',
            'class="header"',
            'class="back-to-top"',
        ],
    )
    def test_furniture_named_by_class_or_id_is_dropped(self, attrs: str) -> None:
        assert _text(f"<body><h1>T</h1><p>Body.</p><div {attrs}>FURNITURE</div></body>") == "# T\n\nBody."

    def test_class_names_never_drop_the_main_heading_or_its_ancestors(self) -> None:
        html = """<body class="sidebar-visible"><div class="with-sidebar"><h1>Title</h1>
            <p>Body.</p><div class="sidebar">Chapters</div></div></body>"""
        assert _text(html) == "# Title\n\nBody."

    def test_class_names_inside_headings_are_kept(self) -> None:
        html = '<main><h2><a class="header" href="#x">Anchored</a><a class="headerlink">¶</a></h2></main>'
        assert _text(html) == "## Anchored"

    def test_article_header_classes_are_not_page_headers(self) -> None:
        html = '<body><div class="article-header"><h2>Sub</h2></div><p>Body.</p></body>'
        assert _text(html) == "## Sub\n\nBody."

    def test_without_an_h1_a_class_name_cannot_drop_most_of_the_text(self) -> None:
        html = '<body><div class="layout-sidebar"><p>All the words of this page.</p></div></body>'
        assert _text(html) == "All the words of this page."


class TestParsedByLxml:
    """lxml reads the page (tests/unit/ingest/test_html_parser_parity.py: the text of ordinary pages
    is what html.parser gave); where the two differ, the page reads as a browser shows it."""

    def test_html5_elements_after_head_elements_are_content(self) -> None:
        """libxml2 knows no HTML5 element: without a <body> tag, these stayed in the head."""
        html = "<title>T</title><style>p {}</style>\n<section><h1>Kept</h1><p>Body.</p></section> tail"
        assert html_module.html_to_text(html.encode()) == ("# Kept\n\nBody.\n\ntail", "T")
        assert _text("<meta charset=utf-8><custom-card>Card text.</custom-card>") == "Card text."

    def test_a_title_is_the_title_not_text(self) -> None:
        assert html_module.html_to_text(b"<title>T</title><p>a</p><title>U</title>") == ("a", "T")

    def test_nul_bytes_are_no_text(self) -> None:
        page = b'<html><head><meta charset="utf-8"></head><body><p>caf\xc3\xa9 a\x00b</p></body></html>'
        assert _text(page) == "café ab"

    def test_fallbacks_for_embeds_and_frames_are_not_shown(self) -> None:
        fallbacks = "<noembed><p>no plugin</p></noembed><noframes><p>no frames</p></noframes>"
        assert _text(f"<p>a</p>{fallbacks}") == "a"

    def test_text_outside_the_html_element_is_shown(self) -> None:
        assert _text("before <html><body><p>a</p></body></html> after") == "before\n\na\n\nafter"


class TestBoundedWork:
    """Small hostile pages cost time in proportion to their size."""

    @pytest.mark.timeout(10)
    def test_unclosed_tags_cost_one_parse(self) -> None:
        """150 KB of `<a `: Python 3.11.7's html.parser (CPython gh-135462) read the rest of the page
        again at each (60 KB took 30 s, this would take minutes); lxml reads it once. A tag the page
        never closes is no text, as in a browser."""
        assert _text("<p>before</p>" + "<a " * 50_000) == "before"

    def test_a_row_of_many_cells_is_joined_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Each cell joined the row so far to ask whether it had text: 400 KB of <td>x</td> took 8.7 s."""
        joined = [0]

        class Line:
            def __init__(self, items: list[str]) -> None:
                self.items = list(items)

            def append(self, value: str) -> None:
                self.items.append(value)

            def __iter__(self) -> Iterator[str]:
                joined[0] += len(self.items)
                return iter(self.items)

        class Writer(html_module._Writer):
            @property  # type: ignore[override]
            def line(self) -> Line:
                return self._line

            @line.setter
            def line(self, items: list[str]) -> None:
                self._line = Line(items)

        monkeypatch.setattr(html_module, "_Writer", Writer)
        assert _text("<table><tr>" + "<td>cell</td>" * 500 + "</tr></table>") == " | ".join(["cell"] * 500)
        assert joined[0] < 2 * 500 + 10

    def test_lists_nested_deeper_than_sixteen_levels_are_indented_no_further(self) -> None:
        """Each level indented every item below it: 90 KB of nested lists gave over 50,000,000 characters."""
        lines = _text("<ul><li>item" * 20).splitlines()
        assert [len(line) - len(line.lstrip()) for line in lines] == [2 * n for n in range(17)] + [32] * 3
        assert {line.strip() for line in lines} == {"- item"}
