from __future__ import annotations

import io
import json

import pypdf
import pytest

from cairn.domain.errors import InvalidInput, UnsupportedContent
from cairn.ingest.extract import extract_text, infer_kind, title_from_markdown
from cairn.ingest.markdown import atx_headings
from tests.unit.ingest.pdfs import figures_pdf, form_pdf, make_pdf, shared_content_pdf


class TestInferKind:
    @pytest.mark.parametrize(
        ("filename", "kind"),
        [
            ("notes.md", "markdown"),
            ("NOTES.MARKDOWN", "markdown"),
            ("page.mdx", "markdown"),
            ("a.txt", "text"),
            ("a.text", "text"),
            ("server.log", "text"),
            ("table.csv", "text"),
            ("data.json", "json"),
            ("rows.jsonl", "json"),
            ("index.html", "html"),
            ("index.htm", "html"),
            ("paper.pdf", "pdf"),
        ],
    )
    def test_extension_map(self, filename: str, kind: str) -> None:
        assert infer_kind(filename, None) == kind

    def test_specific_content_type_wins_over_extension(self) -> None:
        assert infer_kind("page.md", "text/html; charset=utf-8") == "html"
        assert infer_kind("download", "application/pdf") == "pdf"
        assert infer_kind(None, "application/vnd.api+json") == "json"

    def test_generic_text_plain_defers_to_a_known_extension(self) -> None:
        # raw file hosts serve .md as text/plain
        assert infer_kind("README.md", "text/plain; charset=utf-8") == "markdown"
        assert infer_kind("README", "text/plain") == "text"

    def test_sniffs_pdf_and_html_magic(self) -> None:
        assert infer_kind("blob", None, b"%PDF-1.7\n...") == "pdf"
        assert infer_kind(None, "application/octet-stream", b"\n<!DOCTYPE html><html></html>") == "html"
        assert infer_kind(None, None, b"<html><body>x</body></html>") == "html"

    def test_unknown_utf8_is_text(self) -> None:
        assert infer_kind("notes.unknown", None, "plain words ✓".encode()) == "text"

    def test_binary_is_unsupported(self) -> None:
        with pytest.raises(UnsupportedContent):
            infer_kind("archive.zip", None, b"PK\x03\x04\x14\x00\x00\x00")  # PNG is an image now

    def test_no_hint_and_no_data_is_unsupported(self) -> None:
        with pytest.raises(UnsupportedContent):
            infer_kind("file.xyz", None)


class TestMarkdown:
    def test_front_matter_is_removed_and_supplies_the_title(self) -> None:
        data = b'---\ntitle: "Release plan"\ntags: [a, b]\n---\n# Heading\n\nBody text.\n'
        out = extract_text(data, "markdown")
        assert out.title == "Release plan"
        assert out.text == "# Heading\n\nBody text."
        assert out.content_type == "text/markdown"

    def test_title_is_the_first_atx_heading(self) -> None:
        out = extract_text(b"Intro line\n\n## First *heading* ##\n\n# Later\n", "markdown")
        assert out.title == "First *heading*"

    def test_setext_heading_counts_when_it_comes_first(self) -> None:
        assert title_from_markdown("Para\n\nMy Title\n========\n\n# Second\n") == "My Title"

    def test_headings_inside_code_fences_are_ignored(self) -> None:
        text = "```bash\n# install deps\n```\n\nReal Title\n----------\n"
        assert title_from_markdown(text) == "Real Title"

    def test_no_heading_means_no_title(self) -> None:
        assert title_from_markdown("just words\n- a list\n---\n") is None

    def test_title_is_capped_at_512_chars(self) -> None:
        assert len(title_from_markdown("# " + "x" * 2000) or "") == 512

    def test_front_matter_title_wins(self) -> None:
        assert title_from_markdown("---\ntitle: FM\n---\n# H\n") == "FM"

    @pytest.mark.parametrize(
        ("line", "heading"),
        [
            ("## Title ##", (2, "Title")),
            ("# Title#", (1, "Title#")),
            ("# Title \t#  ", (1, "Title")),
            ("# #", (1, "#")),
            ("#", (1, "")),
            ("   ###\tdeep # text ###", (3, "deep # text")),
            ("#Title", None),
            ("####### seven", None),
            ("    # code", None),
        ],
    )
    def test_atx_headings_and_their_closing_hashes(self, line: str, heading: tuple[int, str] | None) -> None:
        found = [(h.level, h.title) for h in atx_headings(line + "\n")]
        assert found == ([heading] if heading else [])

    @pytest.mark.timeout(10)
    def test_long_runs_of_spaces_in_titles_do_not_backtrack(self) -> None:
        """A lazy title before optional closing #s (or trailing blanks) was tried at every end of the
        line: one heading of 40,000 spaces took 14 s to read, and every markdown write reads them."""
        spaces = " " * 200_000
        assert title_from_markdown(f"# a{spaces}b\n") == "a b"
        assert [h.title for h in atx_headings(f"# a{spaces}b\n" * 3)] == ["a"] * 3  # cut at 512, stripped
        assert title_from_markdown(f"---\ntitle: a{spaces}b\n---\nbody") == "a b"


class TestText:
    def test_utf8_with_bom(self) -> None:
        out = extract_text("\ufeffhéllo wörld".encode(), "text")
        assert out.text == "héllo wörld"
        assert out.title is None
        assert out.content_type == "text/plain"

    def test_windows_1252_fallback(self) -> None:
        assert extract_text("café “quoted”".encode("cp1252"), "text").text == "café “quoted”"

    def test_utf16_with_bom(self) -> None:
        assert extract_text("utf16 text".encode("utf-16"), "text").text == "utf16 text"

    def test_nul_bytes_mean_binary(self) -> None:
        with pytest.raises(UnsupportedContent, match="binary"):
            extract_text(b"abc\x00def", "text")

    def test_unknown_kind_is_invalid(self) -> None:
        with pytest.raises(InvalidInput):
            extract_text(b"x", "docx")


class TestJson:
    def test_keys_and_values_are_rendered_as_lines(self) -> None:
        data = b'{"name": "Cairn", "config": {"port": 8080, "tags": ["a", "b"]}, "on": true, "x": null}'
        out = extract_text(data, "json")
        assert out.title == "Cairn"
        assert out.content_type == "application/json"
        assert out.text.splitlines() == [
            "name: Cairn",
            "config:",
            "  port: 8080",
            "  tags:",
            "    - a",
            "    - b",
            "on: true",
            "x: null",
        ]

    def test_title_prefers_title_over_name(self) -> None:
        assert extract_text(b'{"name": "n", "title": "t"}', "json").title == "t"

    def test_json_lines(self) -> None:
        out = extract_text(b'{"event": "start"}\n{"event": "stop"}\n', "json")
        assert out.text == "event: start\n\nevent: stop"

    def test_invalid_json_is_invalid_input(self) -> None:
        with pytest.raises(InvalidInput, match="invalid JSON"):
            extract_text(b'{"a": ', "json")

    def test_an_integer_too_long_for_python_stays_its_digits(self) -> None:
        digits = "9" * 5000  # over sys.get_int_max_str_digits(): json.loads raises a bare ValueError
        out = extract_text(b'{"title": "ledger", "total": ' + digits.encode() + b"}", "json")
        assert out.text == f"title: ledger\ntotal: {digits}" and out.title == "ledger"
        lines = extract_text(b'{"a": 1}\n{"b": ' + digits.encode() + b"}\n", "json")
        assert lines.text == f"a: 1\n\nb: {digits}"

    def test_deeply_nested_json_is_rejected_cleanly(self) -> None:
        with pytest.raises(InvalidInput):
            extract_text(b"[" * 100_000 + b"]" * 100_000, "json")
        with pytest.raises(InvalidInput, match="nested too deeply"):  # in a later JSON Lines record
            extract_text(b'{"a": 1}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n", "json")

    def test_a_list_item_that_is_a_list_or_object_starts_on_its_dash_line(self) -> None:
        data = b'[{" padded key": 1, "rows": [[" x", {"k": []}], {}]}, [[["deep"]]]]'
        assert extract_text(data, "json").text == (
            "- padded key: 1\n  rows:\n    - -  x\n      - k: []\n    - {}\n- - - - deep"
        )

    def test_nesting_deeper_than_a_hundred_levels_is_refused(self) -> None:
        """Every level indents the lines below it: 62 KB nested 900 deep rendered to 54,000,000
        characters (in 58 s, each level copying its children's text again) before being refused."""
        assert extract_text(b"[" * 100 + b"1" + b"]" * 100, "json").text == "- " * 100 + "1"
        with pytest.raises(InvalidInput, match="nested too deeply"):
            extract_text(b"[" * 101 + b"1" + b"]" * 101, "json")
        with pytest.raises(InvalidInput, match="nested too deeply"):
            extract_text(b'{"a": 1}\n' + b'{"a": ' * 101 + b"1" + b"}" * 101 + b"\n", "json")

    def test_text_over_the_limit_is_refused_as_it_is_rendered(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from cairn.ingest import json_text

        rendered: list[object] = []
        scalar = json_text._scalar
        monkeypatch.setattr(json_text, "_scalar", lambda value: rendered.append(value) or scalar(value))
        data = json.dumps({"rows": [{"name": f"row {n}"} for n in range(10_000)]}).encode()
        with pytest.raises(InvalidInput, match="extracted text exceeds 1000 characters"):
            extract_text(data, "json", max_chars=1000)
        assert len(rendered) < 100
        exact = extract_text(data, "json").text
        assert extract_text(data, "json", max_chars=len(exact)).text == exact
        with pytest.raises(InvalidInput, match=f"exceeds {len(exact) - 1} characters"):
            extract_text(data, "json", max_chars=len(exact) - 1)


class TestHtml:
    PAGE = b"""<!doctype html><html><head><title> Cairn  docs </title>
        <style>.x { color: red }</style><script>var secret = 1;</script></head>
        <body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
        <h1>Getting <em>started</em></h1>
        <p>Cairn stores
           memories.</p>
        <h2>Install</h2>
        <ul><li>Download</li><li>Run <code>cairn serve</code></li></ul>
        <noscript>enable js</noscript><footer>(c) 2025</footer></body></html>"""

    def test_boilerplate_is_dropped_and_structure_kept(self) -> None:
        out = extract_text(self.PAGE, "html")
        assert out.title == "Cairn docs"
        assert out.content_type == "text/html"
        assert out.text == (
            "# Getting started\n\nCairn stores memories.\n\n## Install\n\n- Download\n- Run cairn serve"
        )
        for noise in ("secret", "color", "Home", "enable js", "(c) 2025"):
            assert noise not in out.text

    def test_title_falls_back_to_first_h1(self) -> None:
        assert extract_text(b"<body><h1>Only heading</h1><p>x</p></body>", "html").title == "Only heading"

    def test_pre_blocks_keep_their_lines(self) -> None:
        out = extract_text(b"<pre>line one\n  line two</pre>", "html")
        assert out.text == "```\nline one\n  line two\n```"

    def test_deep_nesting_does_not_overflow(self) -> None:
        out = extract_text(b"<div>" * 3000 + b"deep" + b"</div>" * 3000, "html")
        assert out.text == "deep"


class TestPdf:
    def test_text_from_every_page(self) -> None:
        pdf = make_pdf([["Hello Cairn world", "second line"], ["Page two words"]], title="Handbook")
        out = extract_text(pdf, "pdf")
        assert out.title == "Handbook"
        assert out.content_type == "application/pdf"
        assert "Hello Cairn world" in out.text
        assert "Page two words" in out.text
        assert "\n\n" in out.text  # pages are separated by a blank line

    def test_title_falls_back_to_first_line(self) -> None:
        assert (
            extract_text(make_pdf([["", "Quarterly report", "numbers"]]), "pdf").title == "Quarterly report"
        )

    def test_password_protected_pdf_is_unsupported(self) -> None:
        writer = pypdf.PdfWriter(clone_from=io.BytesIO(make_pdf([["secret words"]])))
        writer.encrypt(user_password="pw", owner_password="owner", algorithm="RC4-128")
        buffer = io.BytesIO()
        writer.write(buffer)
        with pytest.raises(UnsupportedContent, match="encrypted"):
            extract_text(buffer.getvalue(), "pdf")

    def test_owner_password_only_pdf_is_readable(self) -> None:
        writer = pypdf.PdfWriter(clone_from=io.BytesIO(make_pdf([["open words"]])))
        writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
        buffer = io.BytesIO()
        writer.write(buffer)
        assert extract_text(buffer.getvalue(), "pdf").text == "open words"

    @pytest.mark.parametrize("data", [b"", b"%PDF-1.4 garbage", make_pdf([["x"]])[:150]])
    def test_broken_pdf_is_unsupported(self, data: bytes) -> None:
        with pytest.raises(UnsupportedContent, match="PDF"):
            extract_text(data, "pdf")

    def test_pdf_without_text_is_unsupported(self) -> None:
        with pytest.raises(UnsupportedContent, match="no extractable text"):
            extract_text(make_pdf([[]]), "pdf")


@pytest.fixture
def pages_read(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The pages pypdf is asked to read, in order."""
    read: list[object] = []
    extract = pypdf.PageObject.extract_text

    def counted(page: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        read.append(page)
        return extract(page, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pypdf.PageObject, "extract_text", counted)
    return read


@pytest.fixture
def forms_read(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The form XObjects pypdf is asked to read, as each Do draws one."""
    read: list[object] = []
    extract = pypdf.PageObject.extract_xform_text

    def counted(page: pypdf.PageObject, xform: object, *args: object, **kwargs: object) -> str:
        read.append(xform)
        return extract(page, xform, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pypdf.PageObject, "extract_xform_text", counted)
    return read


class TestPdfBounds:
    """A small PDF could make pypdf parse the same content again and again: 100 pages drawn by one
    16 KB content stream (600 KB decoded) took 88 s, a page drawing one form 5,000 times ~70 minutes."""

    def test_pages_drawn_by_the_same_content_are_read_once(self, pages_read: list[object]) -> None:
        out = extract_text(shared_content_pdf(50, ["Shared words"]), "pdf")
        assert out.text == "\n\n".join(["Shared words"] * 50)
        assert len(pages_read) == 1

    def test_the_same_content_with_other_fonts_is_read_again(self, pages_read: list[object]) -> None:
        out = extract_text(shared_content_pdf(6, ["Shared words"], fonts=2), "pdf")
        assert out.text == "\n\n".join(["Shared words"] * 6)
        assert len(pages_read) == 2

    def test_a_form_drawn_many_times_is_read_once(self, forms_read: list[object]) -> None:
        out = extract_text(form_pdf(draws=300, forms=2), "pdf")
        assert out.text == "\n".join(["Page words"] + ["Form words"] * 300)
        assert len(forms_read) == 2

    def test_content_past_the_budget_is_refused(
        self, monkeypatch: pytest.MonkeyPatch, pages_read: list[object]
    ) -> None:
        monkeypatch.setattr("cairn.ingest.pdf_text.MAX_CONTENT_BYTES", 4 * 1024)
        page = [f"Line {n} of a long page of words" for n in range(60)]  # about 2.3 KB of content
        with pytest.raises(UnsupportedContent, match="more than 4096 bytes of page content"):
            extract_text(make_pdf([page] * 20), "pdf")
        assert len(pages_read) == 1  # the second page is refused before pypdf parses it

    def test_forms_past_the_budget_are_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr("cairn.ingest.pdf_text.MAX_CONTENT_BYTES", 4 * 1024)
        lines = tuple(f"Line {n} of a long form of words" for n in range(60))
        extract_text(form_pdf(draws=40, forms=1, lines=lines), "pdf")  # one form is read once
        with pytest.raises(UnsupportedContent, match="page content"):
            extract_text(form_pdf(draws=40, forms=2, lines=lines), "pdf")

    def test_figures_decoded_past_their_budget_are_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # Figures show no text, so MAX_CONTENT_BYTES never counts them; pypdf keeps each decoded
        # stream, and a 60 KB Flate stream of drawing decodes to 60 MB: a page of it held that much.
        monkeypatch.setattr("cairn.ingest.pdf_text.MAX_DECODED_BYTES", 64 * 1024)
        assert extract_text(figures_pdf(2, 20 * 1024), "pdf").text == "Page words"
        with pytest.raises(UnsupportedContent, match="more than 65536 bytes of page content"):
            extract_text(figures_pdf(5, 20 * 1024), "pdf")

    def test_more_pages_than_the_limit_are_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr("cairn.ingest.pdf_text.MAX_PAGES", 3)
        assert extract_text(make_pdf([["one"], ["two"], ["three"]]), "pdf").text == "one\n\ntwo\n\nthree"
        with pytest.raises(UnsupportedContent, match="more than 3 pages"):
            extract_text(make_pdf([["one"], ["two"], ["three"], ["four"]]), "pdf")

    def test_text_over_the_limit_is_refused_as_pages_are_read(self, pages_read: list[object]) -> None:
        pdf = make_pdf([[f"Page {n} words"] for n in range(10)])
        assert len(extract_text(pdf, "pdf", max_chars=len("Page 0 words") * 10 + 18).text) == 138
        pages_read.clear()
        with pytest.raises(InvalidInput, match="extracted text exceeds 30 characters"):
            extract_text(pdf, "pdf", max_chars=30)
        assert len(pages_read) == 3
