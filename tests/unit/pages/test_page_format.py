"""The gbrain page format (domain/pages.py): slugs, parsing, rendering and the derived fields."""

from __future__ import annotations

import random

import pytest

from cairn.domain.errors import InvalidInput
from cairn.domain.pages import (
    AmbiguousSlug,
    CollectionReadOnly,
    CollectionRestoring,
    InvalidSlug,
    PageText,
    SlugRef,
    page_room,
    page_summary,
    page_title,
    page_type,
    page_wing,
    parse_frontmatter,
    parse_page,
    parse_slug_ref,
    render_page,
    split_qualified,
    timeline_entries,
    validate_slug,
    validate_tags,
)

ALICE = """---
title: Alice
type: person
tags: [founder, engineer]
links:
  github: alice
born: 1990-01-02
rank: 007
ok: yes
active: True
ratio: 1.50
nothing: ~
quoted: "a: b"
---
# Alice

Alice builds compilers
at Acme.

## Work History
- Acme
---
2024-01-01: joined Acme
---
2024-06-01: shipped v2
"""


# -- slugs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["people/alice", "a", "a_b-c/d/e9", "x" * 512])
def test_valid_slugs(slug: str) -> None:
    assert validate_slug(slug) == slug


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("", "invalid slug: must not be empty"),
        ("x" * 513, "invalid slug: exceeds maximum length of 512 characters"),
        ("People/Alice", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("notes/a.md", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("a b", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("a\x00b", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("../a", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("/a", "invalid slug: must be a relative path"),
        ("\\a", "invalid slug: must be a relative path"),
        ("c:/a", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("a//b", "invalid slug: must not contain empty path segments"),
        ("a/", "invalid slug: must not contain empty path segments"),
    ],
)
def test_invalid_slugs_say_why(slug: str, message: str) -> None:
    with pytest.raises(InvalidSlug) as raised:
        validate_slug(slug)
    assert raised.value.message == message
    assert raised.value.code == "validation_error"


def test_qualified_slugs_split_at_the_first_separator() -> None:
    assert split_qualified("work::people/alice") == SlugRef("people/alice", "work")
    assert split_qualified("people/alice") == SlugRef("people/alice", None)
    assert parse_slug_ref("work::people/alice") == SlugRef("people/alice", "work")
    with pytest.raises(InvalidSlug, match="collection name must not be empty"):
        parse_slug_ref("::people/alice")
    with pytest.raises(InvalidSlug, match="must not be empty"):
        parse_slug_ref("work::")
    with pytest.raises(InvalidSlug, match="allowed characters"):
        parse_slug_ref("a::b::c")  # the slug part holds `::`


def test_tags_follow_the_rules() -> None:
    assert validate_tags(["a-b", "c_d", "e1"]) == ["a-b", "c_d", "e1"]
    for bad in (["A"], [""], ["x" * 65], ["a b"]):
        with pytest.raises(InvalidInput):
            validate_tags(bad)
    with pytest.raises(InvalidInput, match="at most 100"):
        validate_tags(["t"] * 101)


def test_error_messages_are_the_contract() -> None:
    ambiguous = AmbiguousSlug("people/alice", ["work::people/alice", "personal::people/alice"])
    assert ambiguous.message == "AmbiguityError: slug `people/alice` matches multiple collections"
    assert ambiguous.candidates == ["personal::people/alice", "work::people/alice"]
    assert (
        CollectionRestoring("work", "restoring", False).message
        == "CollectionRestoringError: collection=work state=restoring needs_full_sync=false"
    )
    assert (
        CollectionRestoring("work", "active", True).message
        == "CollectionRestoringError: collection=work state=active needs_full_sync=true"
    )
    assert CollectionReadOnly("work").message == "CollectionReadOnlyError: collection=work"


# -- parsing and rendering -----------------------------------------------------------------------


def test_a_page_parses_into_scalar_frontmatter_compiled_truth_and_timeline() -> None:
    page = parse_page(ALICE)
    assert page.frontmatter == {
        "title": "Alice",
        "type": "person",
        "born": "1990-01-02",  # dates stay text
        "rank": "7",
        "ok": "yes",  # YAML 1.2: not a boolean
        "active": "true",
        "ratio": "1.5",
        "nothing": "",
        "quoted": "a: b",
    }  # the list `tags` and the map `links` are dropped
    assert page.compiled_truth == "# Alice\n\nAlice builds compilers\nat Acme.\n\n## Work History\n- Acme"
    assert page.timeline == "2024-01-01: joined Acme\n---\n2024-06-01: shipped v2\n"


def test_rendering_sorts_frontmatter_adds_the_id_and_canonical_slug_and_always_the_separator() -> None:
    text = PageText({"type": "person", "title": "Alice", "slug": "wrong"}, "# Alice\n\nHi", "")
    rendered = render_page(text, canonical_slug="default::people/alice", gbrain_id="0000-1")
    assert rendered == (
        "---\ngbrain_id: 0000-1\nslug: default::people/alice\ntitle: Alice\ntype: person\n---\n"
        "# Alice\n\nHi\n---\n"
    )


@pytest.mark.parametrize(
    ("content", "frontmatter", "compiled", "timeline"),
    [
        ("just text", {}, "just text", ""),
        ("truth\n---\nthen\n", {}, "truth", "then\n"),
        # no closing line: no frontmatter, and the body's first bare `---` line is the separator
        ("---\ntitle: x\nno closing line\n", {}, "", "title: x\nno closing line\n"),
        ("---\n: : [bad\n---\nbody\n", {}, "body", ""),  # invalid YAML: no frontmatter
        ("---\n- a\n- b\n---\nbody", {}, "body", ""),  # not a mapping
        ("---\ntitle: x\n---\n", {"title": "x"}, "", ""),
        ("---\r\ntitle: x\r\n---\r\ntruth\r\n---\r\nlater\r\n", {"title": "x"}, "truth", "later\r\n"),
        ("a\n--- \nb", {}, "a\n--- \nb", ""),  # only a bare `---` line separates
    ],
)
def test_parsing_edges(content: str, frontmatter: dict[str, str], compiled: str, timeline: str) -> None:
    assert parse_page(content) == PageText(frontmatter, compiled, timeline)


def test_values_that_would_not_read_back_plainly_are_quoted() -> None:
    fm = {"a": "x: y", "b": "#hash", "c": "007", "d": "null", "e": "two\nlines", "f": ' "q" ', "g": "\x01"}
    rendered = render_page(PageText(fm, "t", ""), canonical_slug="c::s", gbrain_id="i")
    assert parse_page(rendered).frontmatter == {**fm, "gbrain_id": "i", "slug": "c::s"}
    assert '\nc: "007"\n' in rendered and '\nd: "null"\n' in rendered


# -- property: parse(render(parse(x))) == parse(x) plus the two added keys ------------------------

_WORDS = ["alpha", "Beta", "#", "## Room Name", "---", "--- ", "- item", "a: b", "", " ", "x\ty", "é", "🙂"]
_VALUES = [
    "plain", "", "true", "False", "yes", "null", "~", "12", "007", "-3", "1.50", "1e3", ".inf", "2024-01-02",
    "a: b", "#c", "'q'", '"dq"', "[x]", "{y}", "&anchor", "*alias", "!tag", "@at", "%pc", "a #b", " lead",
    "trail ", "multi\nline", "tab\there", "cr\rhere", "\x07bell", "ü", "🙂", "\u2028", "- dash", "? q", "|",
]  # fmt: skip


def _random_page(rng: random.Random) -> str:
    parts: list[str] = []
    if rng.random() < 0.8:
        parts.append("---\n")
        for _ in range(rng.randint(0, 6)):
            key = rng.choice(["title", "type", "a", "b_c", "slug", "gbrain_id", "Key", "k9"])
            parts.append(f"{key}: {_yaml_value(rng.choice(_VALUES), rng)}\n")
        if rng.random() < 0.2:
            parts.append("tags: [a, b]\nmap:\n  x: 1\n")
        parts.append("---\n")
    for _ in range(rng.randint(0, 8)):
        parts.append(
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 4))) + rng.choice(["\n", "\n\n"])
        )
    return "".join(parts)


def _yaml_value(value: str, rng: random.Random) -> str:
    if rng.random() < 0.5 and "\n" not in value and "\r" not in value:
        return value  # plain: may be read as another type, or be invalid YAML
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


@pytest.mark.parametrize("seed", range(40))
def test_rendering_a_parsed_page_parses_back_to_the_same_page(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        content = _random_page(rng)
        page = parse_page(content)
        rendered = render_page(page, canonical_slug="work::people/alice", gbrain_id="id-1")
        again = parse_page(rendered)
        assert again.frontmatter == {**page.frontmatter, "gbrain_id": "id-1", "slug": "work::people/alice"}
        assert (again.compiled_truth, again.timeline) == (page.compiled_truth, page.timeline), content
        # and the normal form is a fixed point
        assert render_page(again, canonical_slug="work::people/alice", gbrain_id="id-1") == rendered


_CHARS = [
    *"abc :#-'\"[]{}!&*?|>%@`,\\\t\r\n\x00\x07\x85\u2028\x7fé🙂~=<.",
    "---",
    "...",
    "<<",
    "true",
    "null",
    "1:30",
]


def _text(rng: random.Random, shortest: int) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(shortest, 5)))


@pytest.mark.parametrize("seed", range(20))
def test_any_text_frontmatter_renders_to_yaml_that_reads_back_as_the_same_text(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        frontmatter = {_text(rng, 1): _text(rng, 0) for _ in range(rng.randint(0, 4))}
        rendered = render_page(PageText(frontmatter, "t", ""), canonical_slug="c::s", gbrain_id="i")
        assert parse_page(rendered).frontmatter == {**frontmatter, "gbrain_id": "i", "slug": "c::s"}


# -- derived fields ------------------------------------------------------------------------------


def test_derived_fields() -> None:
    page = parse_page(ALICE)
    assert page_title(page, "people/alice") == "Alice"
    assert page_type(page) == "person"
    assert page_summary(page) == "Alice builds compilers at Acme."
    assert page_room(page) == "work-history"
    assert page_wing("people/alice") == "people"
    assert page_wing("alice") == "general"
    assert timeline_entries(page) == ["2024-01-01: joined Acme", "2024-06-01: shipped v2"]


def test_defaults_when_the_page_says_nothing() -> None:
    page = parse_page("# Only A Heading\n")
    assert page_title(page, "notes/x") == "notes/x"
    assert page_type(page) == "concept"
    assert page_summary(page) == "# Only A Heading"  # no paragraph: the first non-empty line
    assert page_room(page) == ""
    assert timeline_entries(page) == []
    assert page_summary(parse_page("")) == ""


def test_summary_is_cut_to_200_characters_and_room_keeps_only_slug_characters() -> None:
    page = parse_page("# T\n\n" + "word " * 100 + "\n\n## Café & Bar: 2024!\n")
    assert len(page_summary(page)) == 200
    assert page_room(page) == "caf--bar-2024"


def test_escaped_halves_of_a_utf16_pair_are_joined_or_replaced() -> None:
    # YAML's \u escapes can spell a lone surrogate: such a text could not be encoded in any reply
    found = parse_frontmatter('type: "\\ud83d"\ntitle: "\\ud83d\\ude00 ok"\nnote: "x \\udc00 y"')
    assert found == {"type": "\ufffd", "title": "\U0001f600 ok", "note": "x \ufffd y"}
    for value in found.values():
        value.encode("utf-8")  # every value can be sent
