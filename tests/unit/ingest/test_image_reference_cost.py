"""find_image_references on markup built to be slow: a document with no img tag is not parsed,
one with an img tag is parsed by lxml (Python 3.11.7's html.parser, read before, is quadratic on
some markup: 60 KB of `<a ` took 42 s), and HTML comments are blanked by a scan (a lazy regex read
from every unclosed `<!--` to the end: 80 KB of them took 9 s), with what is found unchanged."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.ingest import image_references
from cairn.ingest.image_references import find_image_references


def test_a_document_without_an_img_tag_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    fed: list[str] = []
    init = image_references._ImageTarget.__init__
    monkeypatch.setattr(
        image_references._ImageTarget, "__init__", lambda self, text: fed.append(text) or init(self, text)
    )

    assert find_image_references("<a " * 20_000, "notes/a.md") == []
    assert find_image_references("<imgx src=z.png> <figure>x</figure>", "notes/a.html") == []
    assert fed == []
    shown = find_image_references("text <IMG src=x.png> and <img/src=y.png>", "notes/a.md")
    assert [r.target for r in shown] == ["notes/x.png", "notes/y.png"] and len(fed) == 1


@pytest.mark.timeout(10)
@pytest.mark.parametrize("document", ["notes/a.md", "notes/a.html"])
def test_an_img_tag_before_unclosed_tags_costs_a_parse(document: str) -> None:
    """150 KB of `<a ` after an img tag: html.parser (gh-135462) would take minutes; lxml, ms."""
    shown = find_image_references("<img src=x.png>" + "<a " * 50_000, document)
    assert [r.target for r in shown] == ["notes/x.png"]


@pytest.mark.timeout(10)
def test_a_long_img_tag_ends_at_its_first_unquoted_close() -> None:
    """The end of an img tag (whether only a caption's line follows it) is found by one pass over its
    attributes, quoted values skipped."""
    tag = "<img " + 'a="x>y" b=1 ' * 20_000 + "src=x.png>"
    shown = find_image_references(tag + "\n\n*The caption*", "notes/a.md")
    assert [(r.target, r.caption) for r in shown] == [("notes/x.png", "The caption")]


@pytest.mark.timeout(10)
def test_unclosed_comments_cost_a_scan() -> None:
    text = "<!--" * 50_000 + "\n\n![chart](chart.png)"
    assert [r.target for r in find_image_references(text, "notes/a.md")] == ["notes/chart.png"]


LAZY_COMMENT = re.compile(r"<!--.*?-->", re.S)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(["<!--", "-->", "<!-->", "-", "<", ">", "x", "\n", " "]), max_size=20).map(
        "".join
    )
)
def test_comments_are_blanked_as_the_lazy_pattern_blanked_them(text: str) -> None:
    blanked = LAZY_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    assert image_references._blank_comments(text) == blanked


@pytest.mark.timeout(10)
@pytest.mark.parametrize("image", ["<img src=x.png>", "![a](x.png)"])
def test_a_line_of_many_images_costs_one_read_of_the_line(image: str) -> None:
    """Each image's caption check read its whole line: 50,000 images on one line took 290 s."""
    shown = find_image_references(image * 50_000 + "\n\n*A caption*\n", "notes/a.md")
    assert len(shown) == 50_000 and {r.caption for r in shown} == {None}  # a gallery row: no caption


def test_a_line_of_a_few_images_keeps_the_caption_below_it() -> None:
    row = "<img src=a.png>" * image_references.CROWDED
    shown = find_image_references(f"{row}\n\n*Figure 1: the row*\n", "notes/a.md")
    assert {r.caption for r in shown} == {"Figure 1: the row"}
    crowded = find_image_references(f"{row}<img src=b.png>\n\n*Figure 1: the row*\n", "notes/a.md")
    assert {r.caption for r in crowded} == {None}
