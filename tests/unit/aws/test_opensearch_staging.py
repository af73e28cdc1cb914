"""What OpenSearchChunkIndex sends to put a staged version live (`activate`) or drop it (`delete_chunks`).

Requests go through a real opensearch-py client into the fake cluster (test_opensearch_fake.py),
which records each one as it would go over the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from cairn.adapters.aws import opensearch_chunks
from cairn.adapters.aws.opensearch_queries import IDS_PER_CLAUSE
from cairn.domain.errors import CairnError, Conflict, InvalidInput
from tests.contract.test_chunk_index_contract import axis, chunk
from tests.unit.aws.test_opensearch_fake import FakeCluster
from tests.unit.aws.test_opensearch_requests import INDEX, calls_to, ready

BY_QUERY = {"refresh": "true", "conflicts": "proceed"}
DOCUMENT = [{"term": {"brain_id": "b1"}}, {"term": {"document_id": "d"}}]


def staged_cluster() -> tuple[FakeCluster, opensearch_chunks.OpenSearchChunkIndex]:
    """Document "d" with live chunk "old" and staged chunks "s0", "s1"; calls forgotten."""
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert(
        [
            chunk("old", "x", document_id="d"),
            chunk("s0", "y", document_id="d", active=False),
            chunk("s1", "z", document_id="d", ordinal=1, active=False),
        ],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    cluster.calls.clear()
    return cluster, index


def test_activate_updates_the_staged_ids_then_deletes_the_documents_others() -> None:
    cluster, index = staged_cluster()
    index.activate("b1", "d", ["s0", "s1", "s0"])
    update, delete = cluster.calls
    assert (update.method, update.path, update.params) == ("POST", f"/{INDEX}/_update_by_query", BY_QUERY)
    assert update.body == {
        "query": {
            "bool": {"filter": [{"ids": {"values": ["s0", "s1"]}}, *DOCUMENT, {"term": {"active": False}}]}
        },
        "script": {"source": "ctx._source.active = true", "lang": "painless"},
    }
    assert (delete.method, delete.path, delete.params) == ("POST", f"/{INDEX}/_delete_by_query", BY_QUERY)
    assert delete.body == {
        "query": {"bool": {"filter": DOCUMENT, "must_not": [{"ids": {"values": ["s0", "s1"]}}]}}
    }
    docs = cluster.indices[INDEX].docs
    assert {doc_id: doc["active"] for doc_id, doc in docs.items()} == {"s0": True, "s1": True}


def test_activate_with_no_ids_only_deletes_the_document() -> None:
    cluster, index = staged_cluster()
    index.activate("b1", "d", [])
    (delete,) = cluster.calls
    assert delete.path.endswith("/_delete_by_query")
    assert delete.body == {"query": {"bool": {"filter": DOCUMENT}}}
    assert cluster.indices[INDEX].docs == {}


def test_delete_chunks_deletes_by_ids_within_the_brain() -> None:
    cluster, index = staged_cluster()
    assert index.delete_chunks("b1", ["s0", "s1", "ghost"]) == 2
    (delete,) = cluster.calls
    assert (delete.path, delete.params) == (f"/{INDEX}/_delete_by_query", BY_QUERY)
    assert delete.body == {
        "query": {
            "bool": {"filter": [{"ids": {"values": ["s0", "s1", "ghost"]}}, {"term": {"brain_id": "b1"}}]}
        }
    }
    assert set(cluster.indices[INDEX].docs) == {"old"}


def test_delete_chunks_without_ids_sends_nothing() -> None:
    cluster, index = staged_cluster()
    assert index.delete_chunks("b1", []) == 0
    assert cluster.calls == []


def test_long_id_lists_are_split_into_clauses_under_the_terms_limit() -> None:
    cluster, index = staged_cluster()
    ids = ["s0", *(f"missing-{i}" for i in range(IDS_PER_CLAUSE)), "s1"]
    index.activate("b1", "d", ids)
    update, delete = cluster.calls
    (either,) = [c for c in update.body["query"]["bool"]["filter"] if "bool" in c]
    clauses = either["bool"]["should"]
    assert either["bool"]["minimum_should_match"] == 1
    assert [len(c["ids"]["values"]) for c in clauses] == [IDS_PER_CLAUSE, 2]
    assert [v for c in clauses for v in c["ids"]["values"]] == ids
    assert delete.body["query"]["bool"]["must_not"] == clauses
    assert set(cluster.indices[INDEX].docs) == {"s0", "s1"}  # the last clause's ids count too


def test_more_ids_than_the_bound_are_refused_before_any_request() -> None:
    cluster, index = staged_cluster()
    too_many = [f"c{i}" for i in range(opensearch_chunks.MAX_CHUNK_IDS + 1)]
    with pytest.raises(InvalidInput):
        index.activate("b1", "d", too_many)
    with pytest.raises(InvalidInput):
        index.delete_chunks("b1", too_many)
    assert cluster.calls == []


class Troubled(FakeCluster):
    """A cluster whose update-by-query answers with `outcome` (conflicts, failures) instead."""

    def __init__(self, outcome: Mapping[str, Any]) -> None:
        super().__init__()
        self.outcome = dict(outcome)

    def _handle(
        self, method: str, path: str, params: Mapping[str, Any], raw: bytes | None
    ) -> tuple[int, Any]:
        status, response = super()._handle(method, path, params, raw)
        if path.endswith("/_update_by_query"):
            return status, {**response, **self.outcome}
        return status, response


@pytest.mark.parametrize(
    ("outcome", "error"),
    [
        ({"version_conflicts": 1}, Conflict),
        (
            {"failures": [{"cause": {"type": "es_rejected_execution_exception", "reason": "s0 secret"}}]},
            CairnError,
        ),
    ],
    ids=["conflict", "shard-failure"],
)
def test_an_incomplete_activation_raises_and_leaves_the_live_chunks(
    outcome: Mapping[str, Any], error: type[CairnError]
) -> None:
    cluster = Troubled(outcome)
    index = ready(cluster, refresh="true")
    staged = [chunk("old", "x", document_id="d"), chunk("s0", "y", document_id="d", active=False)]
    index.upsert(staged, np.stack([axis(0), axis(1)]))
    with pytest.raises(error) as raised:
        index.activate("b1", "d", ["s0"])
    assert type(raised.value) is error
    assert "retry" in raised.value.message and "secret" not in raised.value.message
    assert calls_to(cluster, "/_delete_by_query") == []  # the old version was not removed
    assert "old" in cluster.indices[INDEX].docs


class HeldOnce(FakeCluster):
    """A cluster whose delete-by-query skips every chunk `rounds` times, as a delete meeting a
    concurrent update-by-query of the same document reports (version_conflicts) and leaves them."""

    def __init__(self, rounds: int) -> None:
        super().__init__()
        self.rounds = rounds
        self.deletes = 0

    def _handle(
        self, method: str, path: str, params: Mapping[str, Any], raw: bytes | None
    ) -> tuple[int, Any]:
        self.deletes += path.endswith("/_delete_by_query")
        if path.endswith("/_delete_by_query") and self.rounds > 0:
            self.rounds -= 1
            return 200, {"deleted": 0, "version_conflicts": len(self.indices[INDEX].docs), "failures": []}
        return super()._handle(method, path, params, raw)


def test_a_document_delete_meeting_concurrent_updates_runs_again_until_nothing_is_left() -> None:
    cluster = HeldOnce(rounds=2)
    index = ready(cluster, refresh="true")
    index.upsert(
        [chunk("c0", "x", document_id="d"), chunk("c1", "y", document_id="d")], np.stack([axis(0), axis(1)])
    )
    assert index.delete_document("b1", "d") == 2
    assert cluster.deletes == 3
    assert cluster.indices[INDEX].docs == {}


def test_a_document_delete_that_keeps_meeting_updates_raises_conflict() -> None:
    cluster = HeldOnce(rounds=opensearch_chunks.DELETE_ROUNDS)
    index = ready(cluster, refresh="true")
    index.upsert([chunk("c0", "x", document_id="d")], np.stack([axis(0)]))
    with pytest.raises(Conflict, match="retry"):
        index.delete_document("b1", "d")
    assert "c0" in cluster.indices[INDEX].docs
