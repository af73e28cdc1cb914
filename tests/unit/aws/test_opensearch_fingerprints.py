"""What OpenSearchChunkIndex sends for rewrites: the fingerprint listing, the vector read, and
the mapping update an index made before fingerprints needs (through the fake cluster)."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.adapters.aws import opensearch_chunks
from cairn.domain.errors import CairnError
from tests.contract.test_chunk_index_contract import DIM, axis, chunk
from tests.unit.aws.test_opensearch_fake import FakeCluster
from tests.unit.aws.test_opensearch_requests import INDEX, calls_to, ready


def test_an_index_made_before_fingerprints_learns_the_field_on_the_first_write() -> None:
    # Given an index whose strict mapping predates the fingerprint field
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    field = cluster.indices[INDEX].properties.pop("fingerprint")
    # When chunks with fingerprints are upserted
    index.upsert([chunk("a", "albatross", fingerprint="e:r")], axis(0)[None, :])
    index.upsert([chunk("b", "petrel", fingerprint="e2:r2")], axis(1)[None, :])
    # Then the field is added once, the refused bulk is sent again, and both chunks are stored
    (mapping,) = [call for call in calls_to(cluster, "/_mapping") if call.method == "PUT"]
    assert mapping.body == {"properties": {"fingerprint": field}}
    assert len(calls_to(cluster, "/_bulk")) == 3
    assert index.fingerprints("b1", "doc-a") == {"a": "e:r"}
    assert index.fingerprints("b1", "doc-b") == {"b": "e2:r2"}


def test_a_bulk_refused_for_another_field_is_not_retried() -> None:
    cluster = FakeCluster()
    index = ready(cluster)
    cluster.indices[INDEX].properties.pop("sector")
    with pytest.raises(CairnError, match="strict_dynamic_mapping_exception"):
        index.upsert([chunk("a", "x", fingerprint="e:r")], axis(0)[None, :])
    assert calls_to(cluster, "/_mapping") == []


def test_fingerprints_page_through_the_document_without_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opensearch_chunks, "_PAGE", 2)
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    chunks = [chunk(f"c{i}", f"part {i}", document_id="d", ordinal=i, fingerprint=f"f{i}") for i in range(5)]
    index.upsert(chunks, np.stack([axis(i) for i in range(5)]))
    cluster.calls.clear()
    assert index.fingerprints("b1", "d") == {f"c{i}": f"f{i}" for i in range(5)}
    pages = calls_to(cluster, "/_search")
    assert len(pages) == 3
    assert pages[1].body["search_after"] == [1, "c1"]
    assert pages[0].body["_source"] == {"excludes": ["text", "title", "context", "embedding"]}


def test_get_vectors_reads_the_embeddings_a_page_of_ids_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opensearch_chunks, "_PAGE", 2)
    cluster = FakeCluster()
    index = ready(cluster, refresh="true")
    index.upsert([chunk(f"c{i}", "words") for i in range(3)], np.stack([axis(i) * 2 for i in range(3)]))
    cluster.calls.clear()
    found = index.get_vectors("b1", ["c2", "c0", "c1", "ghost", "c0"])
    assert sorted(found) == ["c0", "c1", "c2"]
    for i in range(3):
        np.testing.assert_allclose(found[f"c{i}"], axis(i), atol=1e-6)
        assert found[f"c{i}"].dtype == np.float32 and found[f"c{i}"].shape == (DIM,)
    pages = calls_to(cluster, "/_search")
    assert [page.body["size"] for page in pages] == [2, 2]
    assert pages[0].body["_source"] == {"excludes": ["text", "title", "context"]}
    assert index.get_vectors("b1", []) == {}
