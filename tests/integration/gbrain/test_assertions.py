"""The offline assertion rules behind brain_check (services/gbrain/assertions.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from cairn.domain.pages import parse_page
from cairn.services.gbrain.assertions import AssertedPage, contradictions, extract


def asserted(slug: str, content: str, subject: str = "Alice", day: int = 1) -> AssertedPage:
    return AssertedPage(slug, subject, parse_page(content), datetime(2026, 1, day, tzinfo=UTC))


def test_rules_read_frontmatter_key_values_and_sentences() -> None:
    text = parse_page(
        "---\ntitle: Alice\ntype: person\nrole: CEO\n---\n# Alice\n\n"
        "- **Location:** Berlin\nAlice is a founder. Alice works at Acme Corp. She is kind.\n"
        "Bob founded Brain Co in 2020.\nSee: https://example.com\nAlice is happy.\n"
    )
    found = {(a.subject, a.attribute, a.value) for a in extract(text, "Alice")}
    assert found == {
        ("Alice", "role", "CEO"),
        ("Alice", "location", "Berlin"),
        ("Alice", "is_a", "founder"),
        ("Alice", "works_at", "Acme Corp"),
        ("Bob", "founded", "Brain Co"),
        ("Alice", "is", "happy"),
    }  # no bookkeeping keys (title, type), no pronoun subjects, no URLs


def test_conflicts_are_between_pages_and_ignore_case_and_punctuation() -> None:
    pages = [
        asserted("d::a", "Alice works at Acme Corp.", day=1),
        asserted("d::b", "ALICE works at ACME CORP", day=2),  # the same value, another spelling
        asserted("d::c", "Alice works at Globex Inc.\nAlice works at Initech Ltd.", day=3),
    ]
    found = contradictions(pages)
    assert [(c.page_slug, c.other_page_slug, c.description) for c in found] == [
        ("d::a", "d::c", "Alice has conflicting works_at assertions: Acme Corp vs Globex Inc"),
        ("d::a", "d::c", "Alice has conflicting works_at assertions: Acme Corp vs Initech Ltd"),
        ("d::b", "d::c", "ALICE has conflicting works_at assertions: ACME CORP vs Globex Inc"),
        ("d::b", "d::c", "ALICE has conflicting works_at assertions: ACME CORP vs Initech Ltd"),
    ]  # c's two employers are not a conflict with itself
    assert {c.detected_at.day for c in found} == {3} and {c.type for c in found} == {"assertion_conflict"}
    assert contradictions(pages, focus="d::a") == found[:2]
