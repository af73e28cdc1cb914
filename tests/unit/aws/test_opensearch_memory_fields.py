"""The memory fields of a chunk on OpenSearch: their mapping, their filter clauses in both legs and
the hybrid query, and an index made before them, which learns them when opened (fake cluster)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from cairn.adapters.aws.opensearch_queries import filter_clauses
from cairn.adapters.aws.opensearch_schema import (
    ADDED_FIELDS,
    UPGRADES,
    index_body,
    tag_words_backfill,
    upgrades_done,
)
from cairn.ports.chunks import ChunkFilter
from tests.contract.test_chunk_index_contract import DIM, axis, chunk
from tests.unit.aws.test_opensearch_fake import FakeCluster, FakeIndex
from tests.unit.aws.test_opensearch_requests import INDEX, calls_to, make, query, ready

T0 = datetime(2025, 3, 1, tzinfo=UTC)
T0_MS = 1740787200000
BRAIN = {"terms": {"brain_id": ["b1"]}}
ACTIVE = {"term": {"active": True}}
CURRENT = {"bool": {"must_not": [{"term": {"current": False}}]}}


def open_end(field: str, bound: dict[str, Any]) -> dict[str, Any]:
    within = {"range": {field: {**bound, "format": "epoch_millis"}}}
    absent = {"bool": {"must_not": [{"exists": {"field": field}}]}}
    return {"bool": {"should": [within, absent], "minimum_should_match": 1}}


def any_of(name: str, *values: str) -> dict[str, Any]:
    return {"bool": {"should": [{"term": {f"facets.{name}": v}} for v in values], "minimum_should_match": 1}}


FILTERS: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
    ({"current_only": True}, [BRAIN, ACTIVE, CURRENT]),
    (
        {"facets": (("type", ("fact", "decision", "fact")), ("client_id", ("c1",)))},
        [BRAIN, ACTIVE, any_of("type", "fact", "decision"), any_of("client_id", "c1")],
    ),
    ({"facets": (("type", ()),)}, [BRAIN, ACTIVE, {"match_none": {}}]),
    ({"importance_min": 0.5}, [BRAIN, ACTIVE, {"range": {"importance": {"gte": 0.5}}}]),
    (
        # the same moment written at +02:00: sent as epoch milliseconds
        {"valid_at": T0.astimezone(timezone(timedelta(hours=2)))},
        [BRAIN, ACTIVE, open_end("valid_from", {"lte": T0_MS}), open_end("valid_to", {"gt": T0_MS})],
    ),
]


@pytest.mark.parametrize(("fields", "expected"), FILTERS)
def test_each_memory_filter_becomes_a_filter_clause(fields: dict[str, Any], expected: list[Any]) -> None:
    assert filter_clauses(ChunkFilter(**{"brain_ids": ("b1",), **fields})) == expected


MEMORY_FILTER = {
    "current_only": True,
    "facets": (("type", ("fact",)),),
    "importance_min": 0.5,
    "valid_at": T0,
}
MEMORY_CLAUSES = [
    BRAIN,
    ACTIVE,
    CURRENT,
    any_of("type", "fact"),
    {"range": {"importance": {"gte": 0.5}}},
    open_end("valid_from", {"lte": T0_MS}),
    open_end("valid_to", {"gt": T0_MS}),
]


def test_both_legs_of_client_fusion_carry_the_memory_filter() -> None:
    cluster = FakeCluster()
    ready(cluster, fusion="client").search(query("zebra", axis(0), **MEMORY_FILTER))
    (call,) = calls_to(cluster, "/_msearch")
    _, bm25, _, knn = call.body
    assert bm25["query"]["bool"]["filter"] == MEMORY_CLAUSES
    assert knn["query"]["knn"]["embedding"]["filter"] == {"bool": {"filter": MEMORY_CLAUSES}}


def test_both_sub_queries_of_the_hybrid_query_carry_the_memory_filter() -> None:
    cluster = FakeCluster()
    ready(cluster).search(query("zebra", axis(0), **MEMORY_FILTER))
    (call,) = calls_to(cluster, f"/{INDEX}/_search")
    bm25, knn = call.body["query"]["hybrid"]["queries"]
    assert bm25["bool"]["filter"] == MEMORY_CLAUSES
    assert knn["knn"]["embedding"]["filter"] == {"bool": {"filter": MEMORY_CLAUSES}}


def test_the_memory_fields_are_mapped() -> None:
    properties = index_body(8)["mappings"]["properties"]
    assert properties["current"] == {"type": "boolean"}
    assert properties["facets"] == {"type": "flat_object"}  # one field whatever the facet names
    assert properties["importance"] == {"type": "double"}


def old_index(cluster: FakeCluster) -> dict[str, Any]:
    """An index as an earlier version created it (none of ADDED_FIELDS, no upgrades done), holding
    one tagged chunk."""
    body = index_body(DIM)
    removed = {name: body["mappings"]["properties"].pop(name) for name in ADDED_FIELDS}
    del body["mappings"]["_meta"]
    cluster.indices[INDEX] = FakeIndex(body)
    old = chunk("old", "walrus tusk", tags=["kw:ivory", "arctic"])
    source = {k: v for k, v in old.model_dump(mode="json").items() if k not in removed}
    source["embedding"] = axis(0).tolist()
    cluster._bulk([{"index": {"_index": INDEX, "_id": "old"}}, source])
    return removed


def test_an_index_made_before_the_memory_fields_learns_them_when_opened() -> None:
    # Given an index whose strict mapping predates fingerprints and memory fields
    cluster = FakeCluster()
    removed = old_index(cluster)
    # When the adapter opens it
    index = make(cluster, refresh="true")
    index.ensure()
    # Then it reads the mapping and adds exactly the fields it lacks, once
    mapping_calls = calls_to(cluster, f"/{INDEX}/_mapping")
    assert [(c.method, c.body) for c in mapping_calls] == [
        ("GET", None),
        ("PUT", {"properties": removed}),
        ("PUT", {"_meta": {UPGRADES: ["tag_words"]}}),  # after the back-fill was accepted
    ]
    # And starts the back-fill of the old chunks' tag words as a task on the cluster
    (backfill,) = calls_to(cluster, f"/{INDEX}/_update_by_query")
    assert backfill.body == tag_words_backfill()
    assert backfill.params == {"conflicts": "proceed", "wait_for_completion": "false", "refresh": "true"}
    assert cluster.indices[INDEX].docs["old"]["tag_words"] == "ivory arctic"
    # And chunks with memory fields are stored and filtered beside the old chunk
    index.upsert(
        [chunk("new", "walrus", facets={"type": "fact"}, importance=0.9, current=False, tags=["pinniped"])],
        axis(1)[None, :],
    )
    (old,) = index.get_chunks("b1", "doc-old")
    assert (old.current, old.facets, old.importance) == (True, {}, None)  # read as current, bare

    def found(**options: Any) -> list[str]:
        return sorted(h.chunk.id for h in index.search(query("walrus", axis(0), **options)))

    assert found() == ["new", "old"]
    assert found(current_only=True) == ["old"]  # an old chunk has no `current`: it is current
    assert found(facets=(("type", ("fact",)),)) == ["new"]
    assert found(importance_min=0.0) == ["new"]
    assert found(valid_at=T0) == ["new", "old"]
    assert [h.chunk.id for h in index.search(query("pinniped", None))] == ["new"]  # its tags' words
    assert [h.chunk.id for h in index.search(query("ivory", None))] == ["old"]  # back-filled
    assert index.get_chunks("b1", "doc-old")[0].tags == ["kw:ivory", "arctic"]


def test_an_index_that_has_tag_words_but_not_their_back_fill_gets_it_once() -> None:
    # Given an index the previous version upgraded: `tag_words` mapped, the old chunk without it
    cluster = FakeCluster()
    old_index(cluster)
    cluster.indices[INDEX].properties.update(index_body(DIM)["mappings"]["properties"])
    cluster.indices[INDEX].body["mappings"]["_meta"] = {"owner": "ops"}
    # When the adapter opens it, and a second one after it
    make(cluster, fusion="client").ensure()
    make(cluster, fusion="client").ensure()
    # Then one back-fill ran, the rest of _meta is kept, and the old chunk is found by its tags
    assert len(calls_to(cluster, "/_update_by_query")) == 1
    assert not [c for c in calls_to(cluster, "/_mapping") if c.method == "PUT" and "properties" in c.body]
    assert cluster.indices[INDEX].body["mappings"]["_meta"] == {"owner": "ops", UPGRADES: ["tag_words"]}
    index = make(cluster, fusion="client", refresh="true")
    assert [h.chunk.id for h in index.search(query("arctic", None))] == ["old"]


def test_a_new_index_needs_no_back_fill() -> None:
    cluster = FakeCluster()
    make(cluster, fusion="client").ensure()
    make(cluster, fusion="client").ensure()
    assert calls_to(cluster, "/_update_by_query") == []
    assert upgrades_done(cluster.indices[INDEX].body["mappings"]) == ["tag_words"]


class RefusingOnce(FakeCluster):
    """Refuses the first `_update_by_query`, as a cluster whose task queue is full would."""

    refused = False

    def _handle(self, method: str, path: str, params: Any, raw: bytes | None) -> tuple[int, Any]:
        if path.endswith("/_update_by_query") and not self.refused:
            self.refused = True
            return 429, {"error": {"type": "es_rejected_execution_exception", "reason": "queue full"}}
        return super()._handle(method, path, params, raw)


def test_a_back_fill_the_cluster_refuses_leaves_search_working_and_is_started_by_the_next_open(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = RefusingOnce()
    old_index(cluster)
    # When the cluster refuses the back-fill, the index still opens and searches, as before it
    first = make(cluster, fusion="client", refresh="true")
    first.ensure()
    assert "tag_words back-fill was not started" in caplog.text
    assert UPGRADES not in cluster.indices[INDEX].body["mappings"].get("_meta", {})  # not marked done
    assert [h.chunk.id for h in first.search(query("walrus", None))] == ["old"]
    assert first.search(query("ivory", None)) == []
    # And the next open (another process, a Lambda's next cold start) starts it
    make(cluster, fusion="client").ensure()
    assert cluster.indices[INDEX].body["mappings"]["_meta"] == {UPGRADES: ["tag_words"]}
    assert [h.chunk.id for h in first.search(query("ivory", None))] == ["old"]


def test_a_second_open_of_an_updated_index_changes_nothing() -> None:
    cluster = FakeCluster()
    old_index(cluster)
    make(cluster, fusion="client").ensure()
    cluster.calls.clear()
    make(cluster, fusion="client").ensure()
    assert [(c.method, c.path) for c in cluster.calls] == [
        ("HEAD", f"/{INDEX}"),
        ("GET", f"/{INDEX}/_mapping"),
    ]


def test_a_bulk_refused_for_a_memory_field_adds_the_missing_fields_and_is_sent_again() -> None:
    # Given an adapter past its setup, whose index an older process then re-created
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    del cluster.indices[INDEX]
    removed = old_index(cluster)
    # When a chunk with memory fields is upserted
    index.upsert([chunk("a", "walrus", facets={"type": "fact"}, importance=0.5)], axis(0)[None, :])
    # Then the missing fields were added and the bulk sent again
    puts = [c.body for c in calls_to(cluster, "/_mapping") if c.method == "PUT"]
    assert puts == [{"properties": removed}, {"_meta": {UPGRADES: ["tag_words"]}}]  # and its back-fill
    assert len(calls_to(cluster, "/_bulk")) == 2
    assert [c.facets for c in index.get_chunks("b1", "doc-a")] == [{"type": "fact"}]
    hits = index.search(query("walrus", facets=(("type", ("fact",)),), importance_min=0.5))
    assert [h.chunk.id for h in hits] == ["a"]
