"""The search requests: the filter in each leg, the two legs, the hybrid query and its pipeline.

Bodies are checked as they reach the (fake) cluster through opensearch-py; the hybrid query's
pipeline is checked both named (the stored one) and inline (another rank constant or weights).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from cairn.adapters.aws.opensearch_queries import filter_clauses
from cairn.ports.chunks import ChunkFilter
from tests.contract.test_chunk_index_contract import DIM, axis, chunk
from tests.unit.aws.test_opensearch_fake import Call, FakeCluster
from tests.unit.aws.test_opensearch_requests import INDEX, query, ready

T0 = datetime(2025, 3, 1, tzinfo=UTC)
BRAIN = {"terms": {"brain_id": ["b1"]}}
ACTIVE = {"term": {"active": True}}

FILTERS: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
    ({}, [BRAIN, ACTIVE]),
    ({"active_only": False}, [BRAIN]),
    ({"brain_ids": ("b1", "b2", "b1")}, [{"terms": {"brain_id": ["b1", "b2"]}}, ACTIVE]),
    (
        {"path_prefixes": ("notes/", "inbox/a")},
        [
            BRAIN,
            ACTIVE,
            {
                "bool": {
                    "should": [{"prefix": {"path": "notes/"}}, {"prefix": {"path": "inbox/a"}}],
                    "minimum_should_match": 1,
                }
            },
        ],
    ),
    ({"path_prefixes": ("notes/", "")}, [BRAIN, ACTIVE]),  # "" matches every path
    (
        {"tags": ("red", "blue", "red")},
        [BRAIN, ACTIVE, {"term": {"tags": "red"}}, {"term": {"tags": "blue"}}],
    ),
    (
        {"created_from": T0, "created_to": T0 + timedelta(days=1)},
        [
            BRAIN,
            ACTIVE,
            {"range": {"created_at": {"gte": 1740787200000, "lt": 1740873600000, "format": "epoch_millis"}}},
        ],
    ),
    (
        {"created_from": datetime(2025, 3, 1)},  # naive: taken as UTC, like the embedded index
        [BRAIN, ACTIVE, {"range": {"created_at": {"gte": 1740787200000, "format": "epoch_millis"}}}],
    ),
    ({"document_ids": ("d1", "d2")}, [BRAIN, ACTIVE, {"terms": {"document_id": ["d1", "d2"]}}]),
]


@pytest.mark.parametrize(("fields", "expected"), FILTERS)
def test_each_filter_condition_becomes_a_filter_clause(fields: dict[str, Any], expected: list[Any]) -> None:
    assert filter_clauses(ChunkFilter(**{"brain_ids": ("b1",), **fields})) == expected


def msearch(cluster: FakeCluster) -> list[Any]:
    (call,) = [c for c in cluster.calls if c.path == "/_msearch"]
    return list(call.body)


def test_client_fusion_sends_both_legs_in_one_msearch_with_the_same_filter() -> None:
    cluster = FakeCluster()
    ready(cluster, fusion="client").search(
        query("Where did the ZEBRA go?", axis(0) * 2, tags=("t",), top_k=5, candidate_pool=20)
    )
    header1, bm25, header2, knn = msearch(cluster)
    assert header1 == header2 == {"index": INDEX}
    expected_filter = [BRAIN, ACTIVE, {"term": {"tags": "t"}}]
    assert bm25 == {
        "size": 20,
        "query": {"bool": {
            "must": [{"multi_match": {"query": "zebra go",
                                      "fields": ["title^2.0", "tag_words^2.0", "text^1.0", "context^0.5"],
                                      "type": "most_fields", "operator": "or"}}],
            "filter": expected_filter}},
        "_source": {"excludes": ["embedding", "tag_words"]},
        "track_total_hits": False,
    }  # fmt: skip
    assert knn["size"] == 20
    assert knn["query"] == {
        "knn": {
            "embedding": {
                "vector": axis(0).tolist(),
                "k": 20,
                "filter": {"bool": {"filter": expected_filter}},
            }
        }
    }


@pytest.mark.parametrize(
    ("text", "vector", "options", "legs"),
    [
        ("heron", None, {}, ["multi_match"]),
        ("", axis(0), {}, ["knn"]),
        ("the what is", axis(0), {}, ["knn"]),  # stopwords only: no BM25 leg
        ("heron", axis(0), {"vector_weight": 0.0}, ["multi_match"]),
        ("heron", axis(0), {"bm25_weight": 0.0}, ["knn"]),
    ],
)
def test_a_single_leg_runs_alone_even_with_pipeline_fusion(
    text: str, vector: np.ndarray | None, options: dict[str, Any], legs: list[str]
) -> None:
    cluster = FakeCluster()
    ready(cluster).search(query(text, vector, **options))
    bodies = msearch(cluster)[1::2]
    assert [next(iter(b["query"])) if "knn" in b["query"] else "multi_match" for b in bodies] == legs


def test_nothing_to_search_sends_nothing() -> None:
    cluster = FakeCluster()
    index = ready(cluster)
    assert index.search(query("the of and")) == []
    assert index.search(query("heron", brain_ids=())) == []
    assert index.search(query("heron", top_k=0)) == []
    assert cluster.calls == []


def hybrid_call(cluster: FakeCluster) -> Call:
    (call,) = [c for c in cluster.calls if c.path == f"/{INDEX}/_search"]
    return call


def test_pipeline_fusion_sends_one_hybrid_query_naming_the_stored_pipeline() -> None:
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert([chunk("a", "kestrel sighting"), chunk("b", "other words")], np.stack([axis(1), axis(0)]))
    hits = index.search(query("kestrel", axis(0), top_k=7, candidate_pool=30))
    call = hybrid_call(cluster)
    assert call.params == {"search_pipeline": "cairn-hybrid-rrf"}
    assert "search_pipeline" not in call.body
    assert call.body["size"] == 7
    hybrid = call.body["query"]["hybrid"]
    assert hybrid["pagination_depth"] == 30
    bm25, knn = hybrid["queries"]
    assert bm25["bool"]["must"][0]["multi_match"]["query"] == "kestrel"
    assert knn["knn"]["embedding"]["k"] == 30
    assert bm25["bool"]["filter"] == knn["knn"]["embedding"]["filter"]["bool"]["filter"] == [BRAIN, ACTIVE]
    # a: BM25 1st, k-NN 2nd; b: k-NN 1st only. The hybrid response carries no per-leg ranks.
    assert [(h.chunk.id, h.bm25_rank, h.vector_rank) for h in hits] == [("a", None, None), ("b", None, None)]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 62)


def test_other_rank_constants_and_weights_use_an_inline_pipeline_scaled_back() -> None:
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert([chunk("a", "kestrel sighting"), chunk("b", "other words")], np.stack([axis(1), axis(0)]))
    hits = index.search(query("kestrel", axis(0), rrf_k=10, bm25_weight=2.0, vector_weight=0.5))
    call = hybrid_call(cluster)
    assert call.params == {}
    (processor,) = call.body["search_pipeline"]["phase_results_processors"]
    combination = processor["score-ranker-processor"]["combination"]
    assert combination == {"technique": "rrf", "rank_constant": 10, "parameters": {"weights": [0.8, 0.2]}}
    # weights sum to 1 on the cluster; the scores are multiplied back by 2.5
    assert {h.chunk.id: h.score for h in hits} == pytest.approx({"a": 2.0 / 11 + 0.5 / 12, "b": 0.5 / 11})


def test_equal_weights_with_another_rank_constant_need_no_weights() -> None:
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert([chunk("a", "kestrel")], axis(0)[None, :])
    hits = index.search(query("kestrel", axis(0), rrf_k=5, bm25_weight=0.5, vector_weight=0.5))
    combination = hybrid_call(cluster).body["search_pipeline"]["phase_results_processors"][0][
        "score-ranker-processor"
    ]["combination"]
    assert combination == {"technique": "rrf", "rank_constant": 5}
    assert hits[0].score == pytest.approx(0.5 / 6 + 0.5 / 6)


def test_rrf_k_zero_is_fused_on_the_client() -> None:
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert([chunk("a", "kestrel")], axis(0)[None, :])
    (hit,) = index.search(query("kestrel", axis(0), rrf_k=0))
    assert not [c for c in cluster.calls if c.path.endswith("/_search")]
    assert (hit.score, hit.bm25_rank, hit.vector_rank) == (2.0, 1, 1)


def test_the_leg_depth_is_capped_but_never_below_top_k() -> None:
    cluster = FakeCluster()
    index = ready(cluster, fusion="client", candidate_pool=50)
    index.search(query("heron", candidate_pool=500, top_k=10))
    index.search(query("heron", candidate_pool=10, top_k=80))
    index.search(query("heron", candidate_pool=20, top_k=5))
    sizes = [c.body[1]["size"] for c in cluster.calls if c.path == "/_msearch"]
    assert sizes == [50, 80, 20]


def test_client_fusion_reports_ranks_raw_scores_and_similarities() -> None:
    cluster = FakeCluster()
    index = ready(cluster, fusion="client", refresh="true")
    index.upsert(
        [chunk("a", "kestrel sighting"), chunk("b", "nothing relevant"), chunk("c", "filler")],
        np.stack([axis(1) * 0.6 + axis(0) * 0.8, axis(0), -axis(0)]),
    )
    hits = {h.chunk.id: h for h in index.search(query("kestrel", axis(0)))}
    assert (hits["a"].bm25_rank, hits["a"].vector_rank) == (1, 2)
    assert hits["a"].bm25_score is not None and hits["a"].bm25_score > 0
    assert hits["a"].vector_similarity == pytest.approx(0.8, abs=1e-6)
    assert hits["c"].vector_similarity == pytest.approx(-1.0, abs=1e-6)  # below zero: 1 / (1 - ip)
    assert hits["a"].score == pytest.approx(1 / 61 + 1 / 62)


def test_bodies_are_plain_json() -> None:
    cluster = FakeCluster()
    index = ready(cluster)
    index.search(query("kestrel", axis(0), tags=("x",), created_from=T0, document_ids=("d",)))
    index.search(query("kestrel", axis(0), rrf_k=3, bm25_weight=3.0))
    for call in cluster.calls:
        assert json.loads(json.dumps(call.body)) == call.body
    first = next(c for c in cluster.calls if c.path.endswith("/_search"))
    assert len(first.body["query"]["hybrid"]["queries"][1]["knn"]["embedding"]["vector"]) == DIM


def searched_with(cluster: FakeCluster, **options: Any) -> str:
    """`hybrid` or `msearch`: how a two-leg query reached the cluster."""
    index = ready(cluster, refresh="true")
    index.upsert([chunk("a", "kestrel")], axis(0)[None, :])
    cluster.calls.clear()
    hits = index.search(query("kestrel", axis(0), **options))
    assert [h.chunk.id for h in hits] == ["a"]
    (call,) = cluster.calls
    return "msearch" if call.path == "/_msearch" else "hybrid"


@pytest.mark.parametrize(
    ("version", "distribution", "equal", "unequal"),
    [
        ("3.1.0", "opensearch", "hybrid", "hybrid"),
        ("2.19.1", "opensearch", "hybrid", "msearch"),  # no RRF weights before 3.1
        ("2.17.0", "opensearch", "msearch", "msearch"),  # no score-ranker-processor before 2.19
        ("7.10.2", "opensearch", "msearch", "msearch"),  # a domain posing as Elasticsearch 7.10
        ("8.15.0", "elasticsearch", "msearch", "msearch"),
    ],
)
def test_the_cluster_version_decides_what_the_pipeline_may_fuse(
    version: str, distribution: str, equal: str, unequal: str
) -> None:
    assert searched_with(FakeCluster(version, distribution)) == equal
    assert searched_with(FakeCluster(version, distribution), bm25_weight=1.0, vector_weight=0.4) == unequal


def test_an_old_cluster_gets_no_pipeline() -> None:
    cluster = FakeCluster("2.17.0")
    ready(cluster)
    assert cluster.pipelines == {}
