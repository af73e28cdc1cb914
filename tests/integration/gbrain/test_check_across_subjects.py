"""brain_check across subjects: a role stated on one page about another page's subject (`Bob is the
CEO of Acme.`) meets that page's own attribute (`ceo: Alice Smith` on Acme), deterministically."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.domain.pages import parse_page
from cairn.services.gbrain.assertions import AssertedPage, contradictions, extract
from tests.integration.gbrain.conftest import body, gbrain, page, text
from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "sentence",
    [
        "Bob Jones is the CEO of Acme.",
        "Bob Jones was the CEO of Acme.",
        "Bob Jones, the CEO of Acme, opened the meeting.",
        "The CEO of Acme is Bob Jones.",
        "Acme's CEO is Bob Jones.",
        "Acme’s chief executive officer is Bob Jones.",
    ],
)
def test_a_role_of_another_subject_is_that_subjects_attribute(sentence: str) -> None:
    found = [(a.subject, a.attribute, a.value) for a in extract(parse_page(sentence), "Bob Jones")]
    assert found == [("Acme", "ceo", "Bob Jones")]  # and not also "Bob Jones is the CEO of Acme"


def test_pronouns_and_lower_case_objects_state_no_role() -> None:
    assert extract(parse_page("She is the CEO of Acme."), "Acme") == []
    assert [a.attribute for a in extract(parse_page("Bob is the best of friends."), "Bob")] == ["is"]


def test_the_role_meets_the_frontmatter_attribute_of_the_other_page() -> None:
    acme = AssertedPage(
        "d::companies/acme",
        "Acme",
        parse_page("---\ntitle: Acme\nceo: Alice Smith\n---\nAcme forges anvils."),
        datetime(2026, 1, 1, tzinfo=UTC),
    )
    bob = AssertedPage(
        "d::people/bob",
        "Bob Jones",
        parse_page("Bob Jones is the CEO of Acme."),
        datetime(2026, 1, 2, tzinfo=UTC),
    )
    found = contradictions([acme, bob])
    assert [(c.page_slug, c.other_page_slug, c.description) for c in found] == [
        (
            "d::companies/acme",
            "d::people/bob",
            "Acme has conflicting ceo assertions: Alice Smith vs Bob Jones",
        )
    ]
    assert contradictions([acme, bob], focus="d::people/bob") == found


async def test_brain_check_finds_the_ceo_stated_on_another_page(live: LiveServer) -> None:
    async with gbrain(live) as g:
        acme = page("Acme", "Acme forges anvils.", type="company", ceo="Alice Smith")
        text(await g.call_tool("brain_put", {"slug": "companies/acme", "content": acme}))
        text(
            await g.call_tool(
                "brain_put",
                {"slug": "people/bob", "content": page("Bob Jones", "Bob Jones is the CEO of Acme.")},
            )
        )
        text(
            await g.call_tool(
                "brain_put", {"slug": "people/carol", "content": page("Carol", "Carol is the CTO of Acme.")}
            )
        )
        everywhere = body(await g.call_tool("brain_check", {}))
        about_bob = body(await g.call_tool("brain_check", {"slug": "people/bob"}))
        about_carol = body(await g.call_tool("brain_check", {"slug": "people/carol"}))
        stats = body(await g.call_tool("brain_stats", {}))

    assert [(c["page_slug"], c["other_page_slug"], c["description"]) for c in everywhere] == [
        (
            "default::companies/acme",
            "default::people/bob",
            "Acme has conflicting ceo assertions: Alice Smith vs Bob Jones",
        )
    ]
    assert about_bob == everywhere and about_carol == []
    assert stats["contradiction_count"] == 1
