"""Embedder contract: every adapter passes the same suite."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from cairn.adapters.local.onnx_embedder import OnnxEmbedder
from cairn.adapters.vector_cache import VectorCache
from cairn.ports.embedder import Embedder, Vectors
from tests.contract.aws_bedrock import bedrock_embedder
from tests.fakes.embedder import HashingEmbedder

LONG = " ".join(f"word{i % 97} memory agent document" for i in range(400))
MIXED = [
    LONG,
    "hi",
    "The deployment failed because the IAM role lacked permission to write objects.",
    "",
    "Meeting notes: ship v2 on Friday; Alice owns the migration and Bob writes the docs.",
    "ok",
]


@pytest.fixture(scope="module")
def onnx_embedder() -> OnnxEmbedder:
    return OnnxEmbedder()


@pytest.fixture(params=["hash", "onnx", "bedrock", "onnx, questions kept", "bedrock, questions kept"])
def embedder(request: pytest.FixtureRequest, onnx_embedder: OnnxEmbedder) -> Iterator[Embedder]:
    """Each adapter, and each behind the cache the searches embed through (adapters/vector_cache.py),
    which must answer as the model does, however its texts are split between what it kept and not."""
    kept = request.param.endswith(", questions kept")
    if request.param == "hash":
        yield HashingEmbedder(384)
    elif request.param.startswith("onnx"):
        yield VectorCache(onnx_embedder, 4) if kept else onnx_embedder
    else:
        with bedrock_embedder(request) as bedrock:
            yield VectorCache(bedrock, 4) if kept else bedrock


def cosine(a: Vectors, b: Vectors) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_shape_and_dtype(embedder: Embedder) -> None:
    vectors = embedder.embed(["one text", "another text"])
    assert vectors.shape == (2, embedder.dimension)
    assert vectors.dtype == np.float32
    assert embedder.dimension in (384, 1024, 512, 256)  # MiniLM; Titan Text Embeddings V2
    assert embedder.model_id


def test_rows_have_unit_length(embedder: Embedder) -> None:
    norms = np.linalg.norm(embedder.embed(MIXED), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


def test_same_input_gives_same_vectors(embedder: Embedder) -> None:
    np.testing.assert_array_equal(embedder.embed(MIXED), embedder.embed(MIXED))


def test_empty_input_gives_no_rows(embedder: Embedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, embedder.dimension)
    assert vectors.dtype == np.float32


def test_batch_equals_one_by_one(embedder: Embedder) -> None:
    # Given texts of very different lengths / When embedded together and one at a time
    together = embedder.embed(MIXED)
    alone = np.vstack([embedder.embed([text]) for text in MIXED])
    # Then each row is the same: a vector does not depend on its batch companions
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_order_is_preserved_with_mixed_lengths(embedder: Embedder) -> None:
    forward = embedder.embed(MIXED)
    backward = embedder.embed(MIXED[::-1])
    np.testing.assert_allclose(backward, forward[::-1], atol=1e-4)
    # and distinct texts really got distinct rows
    assert cosine(forward[0], forward[2]) < 0.99


def test_long_text_embeds_without_error(embedder: Embedder) -> None:
    vectors = embedder.embed([LONG * 10])
    assert vectors.shape == (1, embedder.dimension)
    assert np.isfinite(vectors).all()


def test_shared_words_score_higher_than_unrelated(embedder: Embedder) -> None:
    base, near, far = embedder.embed(
        ["the cat sat on the mat", "a cat on a mat", "quarterly revenue figures for investors"]
    )
    assert cosine(base, near) > cosine(base, far)


def test_onnx_truncates_at_256_tokens(onnx_embedder: OnnxEmbedder) -> None:
    # Given a text far longer than 256 tokens / When more words are appended after the cut
    head, extended = onnx_embedder.embed([LONG, LONG + " completely different tail words"])
    # Then the vector does not change: only the first 256 tokens are read
    np.testing.assert_allclose(head, extended, atol=1e-6)


def test_onnx_paraphrase_scores_higher_than_unrelated(onnx_embedder: OnnxEmbedder) -> None:
    guitar, music, revenue, bread = onnx_embedder.embed(
        [
            "A man is playing a guitar on stage.",
            "Someone is performing music in front of an audience.",
            "The quarterly revenue grew twelve percent.",
            "Bake the bread at 220 degrees for 35 minutes.",
        ]
    )
    assert cosine(guitar, music) > 0.4
    assert cosine(guitar, music) > cosine(guitar, revenue) + 0.2
    assert cosine(guitar, music) > cosine(guitar, bread) + 0.2
