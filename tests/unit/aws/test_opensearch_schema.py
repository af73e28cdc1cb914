"""The index mapping and search pipeline files, their packaged copies, and the stored documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cairn.adapters.aws.opensearch_schema import (
    INDEX_FILE,
    PIPELINE_FILE,
    from_source,
    index_body,
    pipeline_body,
    pipeline_rank_constant,
    resource_text,
    similarity,
    to_source,
)
from tests.contract.test_chunk_index_contract import chunk

INFRA = Path(__file__).resolve().parents[3] / "infra" / "opensearch"


@pytest.mark.parametrize("name", [INDEX_FILE, PIPELINE_FILE])
def test_packaged_copies_match_infra_byte_for_byte(name: str) -> None:
    # infra/opensearch is canonical; the package carries a copy because Lambda ships the package
    assert resource_text(name) == (INFRA / name).read_text("utf-8")
    json.loads(resource_text(name))


def test_the_vector_field_is_faiss_hnsw_inner_product_of_the_given_dimension() -> None:
    body = index_body(512)
    assert body["settings"]["index"]["knn"] is True
    vector = body["mappings"]["properties"]["embedding"]
    assert vector["type"] == "knn_vector"
    assert vector["dimension"] == 512
    assert vector["method"]["name"] == "hnsw"
    assert vector["method"]["engine"] == "faiss"
    assert vector["method"]["space_type"] == "innerproduct"  # vectors are stored at unit length
    assert index_body(256)["mappings"]["properties"]["embedding"]["dimension"] == 256


def test_every_chunk_field_is_mapped_with_the_right_type() -> None:
    properties = index_body(8)["mappings"]["properties"]
    stored = set(to_source(chunk("a", "x"), [0.0] * 8))
    assert stored == set(properties)
    assert index_body(8)["mappings"]["dynamic"] == "strict"
    types = {name: spec["type"] for name, spec in properties.items()}
    for name in ("id", "brain_id", "document_id", "path", "tags", "type", "scope", "sector"):
        assert types[name] == "keyword", name
    for name in ("title", "text", "context"):
        assert properties[name] == {"type": "text", "analyzer": "cairn_english"}
    assert types["created_at"] == types["valid_from"] == types["valid_to"] == "date"
    assert types["active"] == "boolean"
    assert types["ordinal"] == "integer"


def test_the_text_analyzer_folds_case_and_diacritics_and_stems_english() -> None:
    analysis = index_body(8)["settings"]["analysis"]
    analyzer = analysis["analyzer"]["cairn_english"]
    assert analyzer["tokenizer"] == "standard"
    chain = [analysis["filter"].get(name, {"type": name}) for name in analyzer["filter"]]
    kinds = [f.get("language", f["type"]) for f in chain]
    assert kinds == ["possessive_english", "lowercase", "asciifolding", "stop", "english"]


def test_the_pipeline_fuses_by_rrf_with_rank_constant_60() -> None:
    body = pipeline_body()
    (processor,) = body["phase_results_processors"]
    assert processor == {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 60}}}
    assert pipeline_rank_constant() == 60
    variant = pipeline_body(rank_constant=20, weights=(0.25, 0.75))
    combination = variant["phase_results_processors"][0]["score-ranker-processor"]["combination"]
    assert combination == {"technique": "rrf", "rank_constant": 20, "parameters": {"weights": [0.25, 0.75]}}
    assert pipeline_body() == body  # variants never change the stored definition


def test_a_stored_document_round_trips_to_the_same_chunk() -> None:
    original = chunk(
        "a",
        "body",
        tags=["x"],
        valid_from=datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        created_at=datetime(2025, 3, 1, 12, 30, 45, 123456, tzinfo=UTC),
    )
    source = json.loads(json.dumps(to_source(original, [0.5, 0.5])))
    assert from_source(source) == original


@pytest.mark.parametrize("ip", [1.0, 0.5, 0.0, -0.25, -1.0])
def test_similarity_inverts_the_faiss_inner_product_score(ip: float) -> None:
    score = ip + 1.0 if ip >= 0 else 1.0 / (1.0 - ip)
    assert similarity(score) == pytest.approx(ip)
