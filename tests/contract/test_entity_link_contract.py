"""Links and entities on every RecordStore adapter (see conftest.RECORD_STORES)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.models import Brain, Link
from cairn.ports.records import Page, RecordStore
from cairn.services.links.repository import LinkRepository
from cairn.services.memory.entities import (
    MENTIONS,
    EntityRepository,
    EntityService,
    Mention,
)
from cairn.services.memory.entity_rules import RuleEntityExtractor
from cairn.services.memory.entity_wire import entity_wire
from tests.fakes.clock import FakeClock

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _brain(brain_id: str = "brn_1") -> Brain:
    return Brain(
        id=brain_id,
        slug=brain_id,
        name=brain_id,
        embedding_model="m",
        embedding_dim=3,
        created_at=T0,
        updated_at=T0,
    )


def _link(source: str, kind: str, target: str, brain_id: str = "brn_1", **extra: object) -> Link:
    return Link.model_validate(
        {
            "id": f"lnk_{source}_{kind}_{target}",
            "brain_id": brain_id,
            "source_id": source,
            "target_id": target,
            "kind": kind,
            "created_at": T0,
            **extra,
        }
    )


def _edges(links: Sequence[Link]) -> list[tuple[str, str, str]]:
    return [(ln.source_id, ln.kind, ln.target_id) for ln in links]


def _in_threads(n: int, work: Callable[[int], object]) -> None:
    start = threading.Barrier(n)

    def run(i: int) -> None:
        start.wait()
        work(i)

    with ThreadPoolExecutor(n) as pool:
        for future in [pool.submit(run, i) for i in range(n)]:
            future.result()


class CountingRecords:
    """Passes through to a store, counting queries (to show a read is one partition query)."""

    def __init__(self, inner: RecordStore) -> None:
        self.inner = inner
        self.queries: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def query(self, pk: str, prefix: str = "", **kwargs: object) -> Page:
        self.queries.append(pk)
        return self.inner.query(pk, prefix, **kwargs)  # type: ignore[arg-type]


# -- links ---------------------------------------------------------------------------------------


def test_a_link_reads_back_from_both_ends(records: RecordStore) -> None:
    links = LinkRepository(records)
    link = _link(
        "doc_a",
        "cites",
        "doc_b",
        weight=0.25,
        valid_from=T0,
        valid_to=T0 + timedelta(days=1),
        metadata={"why": "quote"},
    )
    stored, created = links.add(link)
    assert created and stored == link
    assert links.outgoing("brn_1", "doc_a") == [link]
    assert links.incoming("brn_1", "doc_b") == [link]
    assert links.get("brn_1", "doc_a", "cites", "doc_b") == link
    assert links.outgoing("brn_1", "doc_b") == [] and links.incoming("brn_1", "doc_a") == []


def test_adding_a_link_again_keeps_the_first(records: RecordStore) -> None:
    links = LinkRepository(records)
    first = _link("a", "cites", "b", weight=0.5)
    links.add(first)
    again, created = links.add(_link("a", "cites", "b", weight=0.9, id="lnk_other"))
    assert not created and again == first
    assert links.outgoing("brn_1", "a") == [first]
    assert links.incoming("brn_1", "b") == [first]


def test_kinds_filter_each_direction(records: RecordStore) -> None:
    links = LinkRepository(records)
    for source, kind, target in [
        ("a", "cites", "b"),
        ("a", "about", "e"),
        ("a", "cites", "c"),
        ("x", "cites", "b"),
    ]:
        links.add(_link(source, kind, target))
    assert _edges(links.outgoing("brn_1", "a")) == [
        ("a", "about", "e"),
        ("a", "cites", "b"),
        ("a", "cites", "c"),
    ]
    assert _edges(links.outgoing("brn_1", "a", "cites")) == [("a", "cites", "b"), ("a", "cites", "c")]
    assert _edges(links.outgoing("brn_1", "a", "cite")) == []  # a kind is whole, not a prefix
    assert _edges(links.incoming("brn_1", "b", "cites")) == [("a", "cites", "b"), ("x", "cites", "b")]
    assert _edges(links.incoming("brn_1", "b", "about")) == []


def test_limit_and_descending_page_one_partition(records: RecordStore) -> None:
    counting = CountingRecords(records)
    links = LinkRepository(counting)  # type: ignore[arg-type]
    for i in range(7):
        links.add(_link(f"mem_{i}", MENTIONS, "ent_x"))
    counting.queries.clear()
    newest = links.incoming("brn_1", "ent_x", MENTIONS, limit=3, descending=True)
    assert [ln.source_id for ln in newest] == ["mem_6", "mem_5", "mem_4"]
    assert counting.queries == ["links#brn_1#in#ent_x"]
    assert len(links.incoming("brn_1", "ent_x")) == 7


def test_remove_drops_both_items(records: RecordStore) -> None:
    links = LinkRepository(records)
    links.add(_link("a", "cites", "b"))
    links.add(_link("a", "cites", "c"))
    assert links.remove("brn_1", "a", "cites", "b") is True
    assert links.remove("brn_1", "a", "cites", "b") is False
    assert _edges(links.outgoing("brn_1", "a")) == [("a", "cites", "c")]
    assert links.incoming("brn_1", "b") == []
    assert links.add(_link("a", "cites", "b"))[1] is True  # can be added again


def test_remove_all_of_a_node_clears_both_directions(records: RecordStore) -> None:
    links = LinkRepository(records)
    for i in range(60):  # more than one removal transaction
        links.add(_link("hub", "cites", f"doc_{i:02d}"))
    links.add(_link("src", "cites", "hub"))
    links.add(_link("hub", "self", "hub"))
    links.add(_link("src", "cites", "other"))
    assert links.remove_all_of("brn_1", "hub") == 62
    assert links.outgoing("brn_1", "hub") == [] and links.incoming("brn_1", "hub") == []
    assert links.incoming("brn_1", "doc_07") == []
    assert _edges(links.outgoing("brn_1", "src")) == [("src", "cites", "other")]
    assert links.remove_all_of("brn_1", "hub") == 0


def test_links_of_one_brain_are_not_anothers(records: RecordStore) -> None:
    links = LinkRepository(records)
    links.add(_link("a", "cites", "b", brain_id="brn_1"))
    assert links.outgoing("brn_2", "a") == [] and links.incoming("brn_2", "b") == []
    assert links.remove_all_of("brn_2", "a") == 0
    assert len(links.outgoing("brn_1", "a")) == 1


@pytest.mark.parametrize("kind", ["", "has#hash", "has space", "k" * 65])
def test_bad_kinds_are_refused(records: RecordStore, kind: str) -> None:
    links = LinkRepository(records)
    with pytest.raises(InvalidInput):
        links.add(_link("a", kind, "b"))
    with pytest.raises(InvalidInput):
        links.outgoing("brn_1", "a", kind)


# -- entities ------------------------------------------------------------------------------------


def _service(records: RecordStore) -> EntityService:
    return EntityService(
        EntityRepository(records, LinkRepository(records)), FakeClock(T0), RuleEntityExtractor()
    )


def test_an_entity_is_found_by_name_or_alias_in_any_case(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    mentions = svc.extract("Moved reporting to Postgres.", client_id="acme", source_agent="claude-code")
    svc.record_mentions(brain, "mem_1", mentions, T0)
    pg = svc.get(brain, "PostgreSQL")
    assert (pg.name, pg.kind, pg.mention_count, pg.first_seen, pg.last_seen) == (
        "PostgreSQL",
        "technology",
        1,
        T0,
        T0,
    )
    assert "Postgres" in pg.aliases and "psql" in pg.aliases
    for name in ["postgresql", "POSTGRES", "  Postgres ", "PSQL"]:
        assert svc.get(brain, name) == pg
    assert svc.get(brain, "ACME").kind == "client"
    assert svc.get(brain, "Claude-Code").kind == "agent"
    with pytest.raises(NotFound, match="Entity not found"):
        svc.get(brain, "MySQL")
    with pytest.raises(NotFound):
        svc.get(_brain("brn_2"), "postgres")  # another brain's entities are its own


def test_a_memory_counts_once_per_entity(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    later = T0 + timedelta(hours=2)
    assert [e.name for e in svc.record_mentions(brain, "mem_1", [Mention("Redis", "technology")], T0)] == [
        "Redis"
    ]
    assert svc.record_mentions(brain, "mem_1", [Mention("redis", "technology")], later) == []
    assert svc.get(brain, "redis").mention_count == 1
    svc.record_mentions(brain, "mem_2", [Mention("REDIS", "technology")], later)
    redis = svc.get(brain, "Redis")
    assert (redis.name, redis.mention_count, redis.first_seen, redis.last_seen) == ("Redis", 2, T0, later)
    assert svc.stats(brain).total == 1


def test_concurrent_mentions_never_lose_a_count(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()

    def mention(i: int) -> None:
        svc.record_mentions(
            brain,
            f"mem_{i}",
            [Mention("Kubernetes", "technology", aliases=("k8s",)), Mention(f"Tool {i}", "system")],
            T0 + timedelta(minutes=i),
        )

    _in_threads(8, mention)
    k8s = svc.get(brain, "K8S")
    assert k8s.mention_count == 8
    assert (k8s.first_seen, k8s.last_seen) == (T0, T0 + timedelta(minutes=7))
    assert len(svc.memories(brain, "kubernetes", limit=100).links) == 8
    stats = svc.stats(brain)
    assert (stats.total, stats.by_type) == (9, {"technology": 1, "system": 8})
    assert [e.name for e in svc.list(brain)][:1] == ["Kubernetes"]


def test_list_orders_by_mentions_then_name_and_pages(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    counts = {"Redis": 3, "Docker": 1, "acme.com": 2, "Sarah Chen": 2, "Python": 1}
    types = {"acme.com": "domain", "Sarah Chen": "person"}
    for name, count in counts.items():
        for i in range(count):
            svc.record_mentions(brain, f"mem_{name}_{i}", [Mention(name, types.get(name, "technology"))], T0)
    everything = svc.list(brain)
    assert [(e.name, e.mention_count) for e in everything] == [
        ("Redis", 3),
        ("acme.com", 2),
        ("Sarah Chen", 2),
        ("Docker", 1),
        ("Python", 1),
    ]
    assert [e.name for e in svc.list(brain, limit=2, offset=1)] == ["acme.com", "Sarah Chen"]
    assert svc.list(brain, offset=5) == []
    assert [e.name for e in svc.list(brain, entity_type="technology")] == ["Redis", "Docker", "Python"]
    assert [e.name for e in svc.list(brain, entity_type="technology", offset=1, limit=1)] == ["Docker"]
    assert svc.list(brain, entity_type="workflow") == []
    with pytest.raises(InvalidInput, match="Invalid entity type: planet"):
        svc.list(brain, entity_type="planet")
    assert len(svc.list(brain, limit=1000)) == 5  # clamped to 100, not refused


def test_stats_count_types_and_the_most_mentioned(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    assert svc.stats(brain).wire() == {"total": 0, "by_type": {}, "top_mentioned": []}
    for i in range(12):
        names = [Mention(f"svc-{j:02d}", "service") for j in range(i + 1)]
        svc.record_mentions(brain, f"mem_{i:02d}", [*names, Mention("Ana Lima", "person")], T0)
    wire = svc.stats(brain).wire()
    assert wire["total"] == 13 and wire["by_type"] == {"service": 12, "person": 1}
    top = wire["top_mentioned"]
    assert len(top) == 10
    assert top[:3] == [
        {"canonical_name": "Ana Lima", "entity_type": "person", "mention_count": 12},
        {"canonical_name": "svc-00", "entity_type": "service", "mention_count": 12},
        {"canonical_name": "svc-01", "entity_type": "service", "mention_count": 11},
    ]


def test_memories_of_an_entity_are_ids_newest_first(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    for i in range(25):
        svc.record_mentions(brain, f"mem_{i:02d}", svc.extract("Deployed on Vercel.", client_id="acme"), T0)
    found = svc.memories(brain, "VERCEL")
    assert len(found.links) == 20
    assert [ln.memory_id for ln in found.links[:2]] == ["mem_24", "mem_23"]
    wire = svc.memories(brain, "acme", limit=2).wire()
    assert wire == {
        "entity": "acme",
        "entity_type": "client",
        "count": 2,
        "memory_links": [
            {"memory_id": "mem_24", "role": "about", "created_at": "2026-03-01T00:00:00Z"},
            {"memory_id": "mem_23", "role": "about", "created_at": "2026-03-01T00:00:00Z"},
        ],
    }
    assert len(svc.memories(brain, "vercel", limit=500).links) == 25
    with pytest.raises(NotFound):
        svc.memories(brain, "nobody")


def test_forgetting_a_memory_takes_back_its_mentions(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    pg = Mention("PostgreSQL", "technology", aliases=("Postgres",))
    svc.record_mentions(brain, "mem_1", [Mention("Redis", "technology"), pg], T0)
    svc.record_mentions(brain, "mem_2", [Mention("Redis", "technology")], T0)
    assert svc.forget(brain, "mem_1") == 2
    assert svc.forget(brain, "mem_1") == 0
    assert svc.get(brain, "redis").mention_count == 1
    with pytest.raises(NotFound):
        svc.get(brain, "postgres")  # its last mention: gone with its alias
    assert [e.name for e in svc.list(brain)] == ["Redis"]
    assert svc.stats(brain).wire()["by_type"] == {"technology": 1}
    # a new entity may take the freed alias
    svc.record_mentions(brain, "mem_3", [Mention("Postgres", "technology")], T0)
    assert svc.get(brain, "postgres").name == "Postgres"


def test_relinking_after_an_edit_moves_only_what_changed(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.record_mentions(brain, "mem_1", svc.extract("Redis and Docker."), T0)
    added = svc.relink(brain, "mem_1", svc.extract("Redis and Kubernetes."), T0 + timedelta(hours=1))
    assert [e.name for e in added] == ["Kubernetes"]
    assert svc.get(brain, "redis").mention_count == 1
    assert svc.get(brain, "redis").last_seen == T0
    with pytest.raises(NotFound):
        svc.get(brain, "docker")
    links = LinkRepository(records).outgoing(brain.id, "mem_1", MENTIONS)
    assert sorted(svc.repo.by_id(brain.id, ln.target_id).entity.name for ln in links) == [  # type: ignore[union-attr]
        "Kubernetes",
        "Redis",
    ]


def test_an_alias_another_entity_holds_is_not_taken(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.record_mentions(brain, "mem_1", [Mention("WP", "person")], T0)
    svc.record_mentions(
        brain, "mem_2", [Mention("WordPress", "technology", aliases=("wp", "wordpress.org"))], T0
    )
    assert svc.get(brain, "wp").name == "WP"
    assert svc.get(brain, "WordPress.org").name == "WordPress"
    assert svc.get(brain, "wordpress").aliases == ["wordpress.org"]


def test_entity_wire_shape(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.record_mentions(brain, "mem_1", [Mention("k8s", "technology")], T0)
    wire = entity_wire(svc.get(brain, "K8s"))
    assert wire == {
        "id": wire["id"],
        "canonical_name": "k8s",
        "entity_type": "technology",
        "first_seen": "2026-03-01T00:00:00Z",
        "last_seen": "2026-03-01T00:00:00Z",
        "mention_count": 1,
        "aliases": [],
    }
    assert wire["id"].startswith("ent_")


def test_invalid_mentions_are_refused(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    with pytest.raises(InvalidInput, match="Invalid entity type: planet"):
        svc.record_mentions(brain, "mem_1", [Mention("Mars", "planet")], T0)
    with pytest.raises(InvalidInput):
        svc.record_mentions(brain, "mem_1", [Mention("   ", "person")], T0)
    assert svc.stats(brain).total == 0
