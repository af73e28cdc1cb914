"""What OpenSearchChunkIndex sends: index creation, bulk bodies, deletes, updates and the query DSL.

Requests go through a real opensearch-py client into the fake cluster (test_opensearch_fake.py),
which records each one as it would go over the wire (method, path, query parameters, parsed body).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from cairn.adapters.aws import opensearch_chunks
from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex
from cairn.domain.errors import CairnError, InvalidInput
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from tests.contract.test_chunk_index_contract import DIM, axis, chunk
from tests.unit.aws.test_opensearch_fake import Call, FakeCluster, fake_client

INDEX = f"cairn-chunks-{DIM}"
T0 = datetime(2025, 3, 1, tzinfo=UTC)


def make(cluster: FakeCluster, **options: Any) -> OpenSearchChunkIndex:
    return OpenSearchChunkIndex(fake_client(cluster), DIM, **options)


def calls_to(cluster: FakeCluster, suffix: str) -> list[Call]:
    return [c for c in cluster.calls if c.path.endswith(suffix)]


def ready(cluster: FakeCluster, **options: Any) -> OpenSearchChunkIndex:
    """An index already past its first-use setup, with the setup calls forgotten."""
    index = make(cluster, **options)
    index.ensure()
    cluster.calls.clear()
    return index


def query(text: str = "", vector: np.ndarray | None = None, **options: Any) -> ChunkQuery:
    filter_fields = {k: options.pop(k) for k in list(options) if k in ChunkFilter.__dataclass_fields__}
    return ChunkQuery(
        text=text,
        vector=None if vector is None else vector.tolist(),
        filter=ChunkFilter(**{"brain_ids": ("b1",), **filter_fields}),
        **options,
    )


# -- first use: index and pipeline ---------------------------------------------------------------


def test_first_use_creates_the_index_and_the_pipeline_then_never_asks_again() -> None:
    cluster = FakeCluster()
    index = make(cluster)
    index.count("b1")
    index.count("b1")
    assert [(c.method, c.path) for c in cluster.calls] == [
        ("HEAD", f"/{INDEX}"),
        ("PUT", f"/{INDEX}"),
        ("GET", "/"),  # the version: hybrid RRF needs 2.19, weights 3.1
        ("GET", "/_search/pipeline/cairn-hybrid-rrf"),
        ("PUT", "/_search/pipeline/cairn-hybrid-rrf"),
        ("POST", f"/{INDEX}/_count"),
        ("POST", f"/{INDEX}/_count"),
    ]
    embedding = cluster.calls[1].body["mappings"]["properties"]["embedding"]
    assert embedding["dimension"] == DIM
    combination = cluster.calls[4].body["phase_results_processors"][0]["score-ranker-processor"][
        "combination"
    ]
    assert combination == {"technique": "rrf", "rank_constant": 60}


def test_existing_index_and_pipeline_are_left_alone() -> None:
    cluster = FakeCluster()
    make(cluster, index_prefix="shared").ensure()
    cluster.calls.clear()
    make(cluster, index_prefix="shared").ensure()  # a second process, a cold start later
    assert [(c.method, c.path) for c in cluster.calls] == [
        ("HEAD", f"/shared-{DIM}"),
        ("GET", f"/shared-{DIM}/_mapping"),  # up to date: nothing to add
        ("GET", "/"),
        ("GET", "/_search/pipeline/cairn-hybrid-rrf"),
    ]


def test_losing_the_index_creation_race_is_not_an_error() -> None:
    class Racing(FakeCluster):
        def _index_admin(self, method: str, name: str, body: Any) -> tuple[int, Any]:
            if method == "HEAD":
                return 404, None  # as if another process created the index right after we looked
            return super()._index_admin(method, name, body)

    cluster = Racing()
    make(cluster, fusion="client").ensure()
    cluster.calls.clear()
    make(cluster, fusion="client").ensure()
    assert [(c.method, c.path) for c in cluster.calls] == [("HEAD", f"/{INDEX}"), ("PUT", f"/{INDEX}")]


def test_client_fusion_needs_no_pipeline() -> None:
    cluster = FakeCluster()
    make(cluster, fusion="client").ensure()
    assert not any("pipeline" in c.path for c in cluster.calls)
    assert cluster.pipelines == {}


def test_index_names_carry_prefix_and_dimension() -> None:
    cluster = FakeCluster()
    OpenSearchChunkIndex(fake_client(cluster), 1024, index_prefix="team-a", pipeline="p1").ensure()
    assert set(cluster.indices) == {"team-a-1024"}
    assert set(cluster.pipelines) == {"p1"}


# -- writes --------------------------------------------------------------------------------------


def test_upsert_sends_one_bulk_with_deterministic_ids_and_unit_vectors() -> None:
    cluster = FakeCluster()
    index = ready(cluster)
    a = chunk("a", "heron", tags=["x"], created_at=datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC))
    index.upsert([a, chunk("b", "gull")], np.stack([axis(0) * 3.0, axis(1)]))
    (bulk,) = cluster.calls
    assert (bulk.method, bulk.path, bulk.params) == ("POST", "/_bulk", {"refresh": "wait_for"})
    assert bulk.raw is not None and bulk.raw.endswith(b"\n") and bulk.raw.count(b"\n") == 4  # NDJSON
    actions, sources = bulk.body[::2], bulk.body[1::2]
    assert actions == [{"index": {"_index": INDEX, "_id": "a"}}, {"index": {"_index": INDEX, "_id": "b"}}]
    assert sources[0]["embedding"] == axis(0).tolist()  # scaled to unit length: inner product = cosine
    assert sources[0]["created_at"] == "2025-03-01T12:00:00.123456Z"
    assert sources[0]["tag_words"] == "x"  # the BM25 leg matches tags as words
    assert {k: v for k, v in sources[0].items() if k not in ("embedding", "tag_words")} == a.model_dump(
        mode="json"
    )


def test_reupserting_a_chunk_overwrites_it_by_id() -> None:
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert([chunk("a", "old")], axis(0)[None, :])
    index.upsert([chunk("a", "new")], axis(1)[None, :])
    assert len(cluster.indices[INDEX].docs) == 1
    assert cluster.indices[INDEX].docs["a"]["text"] == "new"
    assert {c.params["refresh"] for c in calls_to(cluster, "/_bulk")} == {"true"}


def test_large_upserts_are_split_into_bulks_below_the_byte_limit() -> None:
    cluster = FakeCluster()
    index = ready(cluster, bulk_bytes=2_000)
    chunks = [chunk(f"c{i}", "words " * 40) for i in range(10)]
    index.upsert(chunks, np.stack([axis(i % DIM) for i in range(10)]))
    bulks = calls_to(cluster, "/_bulk")
    assert len(bulks) > 1
    assert [a["index"]["_id"] for b in bulks for a in b.body[::2]] == [c.id for c in chunks]
    for bulk in bulks:
        size = sum(len(json.dumps(line, separators=(",", ":"))) + 1 for line in bulk.body)
        assert size <= 2_000 or len(bulk.body) == 2


@pytest.mark.parametrize(
    "vectors",
    [np.zeros((1, DIM)), np.zeros((2, DIM + 1)), np.full((2, DIM), np.nan)],
    ids=["too-few", "too-wide", "nan"],
)
def test_bad_vectors_are_refused_before_any_request(vectors: np.ndarray) -> None:
    cluster = FakeCluster()
    with pytest.raises(InvalidInput):
        make(cluster).upsert([chunk("a", "x"), chunk("b", "y")], vectors)
    assert cluster.calls == []


def test_refused_bulk_items_raise_with_the_reason_and_no_body() -> None:
    cluster = FakeCluster()
    index = ready(cluster)
    cluster.indices[INDEX].properties.pop("sector")  # the stored mapping no longer knows a field
    with pytest.raises(CairnError) as raised:
        index.upsert([chunk("a", "secret words")], axis(0)[None, :])
    assert "strict_dynamic_mapping_exception" in raised.value.message
    assert "secret" not in raised.value.message


def test_delete_document_is_a_refreshed_delete_by_query_on_brain_and_document() -> None:
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert(
        [chunk("a", "x", document_id="d1"), chunk("b", "y", document_id="d2")], np.stack([axis(0)] * 2)
    )
    cluster.calls.clear()
    assert index.delete_document("b1", "d1") == 1
    (call,) = cluster.calls
    assert (call.method, call.path) == ("POST", f"/{INDEX}/_delete_by_query")
    assert call.params == {"refresh": "true", "conflicts": "proceed"}
    assert call.body == {
        "query": {"bool": {"filter": [{"term": {"brain_id": "b1"}}, {"term": {"document_id": "d1"}}]}}
    }


def test_set_context_updates_the_first_chunk_by_query() -> None:
    cluster = FakeCluster()
    ready(cluster).set_context("b1", "d1", "about kingfishers")
    (call,) = cluster.calls
    assert (call.method, call.path, call.params) == (
        "POST",
        f"/{INDEX}/_update_by_query",
        {"refresh": "true"},
    )
    assert call.body["query"]["bool"]["filter"][-1] == {"term": {"ordinal": 0}}
    assert call.body["script"]["params"] == {"context": "about kingfishers"}
    assert call.body["script"]["lang"] == "painless"


# -- reads ---------------------------------------------------------------------------------------


def test_get_chunks_pages_with_search_after_in_ordinal_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opensearch_chunks, "_PAGE", 2)
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    chunks = [chunk(f"c{i}", f"part {i}", document_id="d", ordinal=i) for i in (3, 0, 4, 1, 2)]
    index.upsert(chunks, np.stack([axis(i) for i in range(5)]))
    cluster.calls.clear()
    assert [c.ordinal for c in index.get_chunks("b1", "d")] == [0, 1, 2, 3, 4]
    pages = calls_to(cluster, "/_search")
    assert len(pages) == 3
    assert "search_after" not in pages[0].body
    assert pages[1].body["search_after"] == [1, "c1"]
    assert pages[0].body["sort"] == [{"ordinal": "asc"}, {"id": "asc"}]
    assert pages[0].body["_source"] == {"excludes": ["embedding", "tag_words"]}


def test_count_filters_on_the_brain() -> None:
    cluster = FakeCluster()
    ready(cluster).count("b9")
    assert cluster.calls[-1].body == {"query": {"bool": {"filter": [{"term": {"brain_id": "b9"}}]}}}


def test_an_index_deleted_behind_the_adapters_back_is_created_again() -> None:
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    del cluster.indices[INDEX]  # an operator's DELETE while the function stays warm
    with pytest.raises(CairnError, match="index_not_found_exception"):
        index.count("b1")
    assert index.count("b1") == 0
    assert INDEX in cluster.indices
