"""EntityService.extract: the memory's client and agent first, then the extractor's finds."""

from __future__ import annotations

from cairn.services.links.repository import LinkRepository
from cairn.services.memory.entities import MAX_MENTIONS, EntityRepository, EntityService, Mention
from cairn.services.memory.entity_rules import RuleEntityExtractor
from tests.fakes.clock import FakeClock
from tests.fakes.records import MemoryRecordStore


class Listed:
    def __init__(self, mentions: list[Mention]) -> None:
        self.mentions = mentions

    def extract(self, text: str) -> list[Mention]:
        return list(self.mentions)


def _service(extractor: object | None = None) -> EntityService:
    records = MemoryRecordStore()
    repo = EntityRepository(records, LinkRepository(records))
    return EntityService(repo, FakeClock(), extractor or RuleEntityExtractor())  # type: ignore[arg-type]


def test_client_and_agent_come_first_with_their_roles() -> None:
    found = _service().extract("Moved acme to Redis.", client_id="acme", source_agent="claude-code")
    assert [(m.name, m.type, m.role) for m in found] == [
        ("acme", "client", "about"),
        ("claude-code", "agent", "source"),
        ("Redis", "technology", "mentioned"),
    ]


def test_the_global_client_is_no_entity() -> None:
    assert _service().extract("Nothing here.", client_id="global") == []


def test_an_extractors_junk_is_dropped_and_names_are_distinct() -> None:
    junk = [
        Mention("  Redis  ", "technology"),
        Mention("REDIS", "service"),
        Mention("Pluto", "planet"),
        Mention("", "person"),
        Mention("x" * 300, "system"),
    ] + [Mention(f"tool {i}", "system") for i in range(80)]
    found = _service(Listed(junk)).extract("text")
    assert found[0] == Mention("Redis", "technology")
    assert all(m.name.casefold() != "redis" for m in found[1:])
    assert all(m.type != "planet" and m.name and len(m.name) <= 200 for m in found)
    assert len(found) == MAX_MENTIONS
