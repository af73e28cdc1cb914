"""Embedder contract: every adapter (and the micro-batching wrapper) passes the same suite."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from cairn.adapters.local.micro_batch import MicroBatchingEmbedder
from cairn.adapters.local.onnx_embedder import OnnxEmbedder
from cairn.ports.embedder import Embedder, Vectors
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


@pytest.fixture(params=["hash", "onnx", "onnx+micro"])
def embedder(request: pytest.FixtureRequest, onnx_embedder: OnnxEmbedder) -> Embedder:
    if request.param == "hash":
        return HashingEmbedder(384)
    if request.param == "onnx":
        return onnx_embedder
    return MicroBatchingEmbedder(onnx_embedder)


def cosine(a: Vectors, b: Vectors) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_shape_and_dtype(embedder: Embedder) -> None:
    vectors = embedder.embed(["one text", "another text"])
    assert vectors.shape == (2, embedder.dimension)
    assert vectors.dtype == np.float32
    assert embedder.dimension == 384
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


# -- MicroBatchingEmbedder -----------------------------------------------------------------------


class CountingEmbedder:
    """Records the size of each call; optionally fails."""

    def __init__(self, fail: bool = False) -> None:
        self.inner = HashingEmbedder(16)
        self.calls: list[int] = []
        self.fail = fail

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        if self.fail:
            raise RuntimeError("model unavailable")
        return self.inner.embed(texts)


def run_threads(count: int, target: object) -> None:
    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]  # type: ignore[arg-type]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)


def test_micro_batching_matches_direct_calls_under_concurrency(onnx_embedder: OnnxEmbedder) -> None:
    # Given 8 threads each embedding several mixed-length texts through one wrapper
    micro = MicroBatchingEmbedder(onnx_embedder)
    texts = [*MIXED, "what did we decide yesterday?", "remember the user prefers tea"]
    expected = {text: onnx_embedder.embed([text])[0] for text in texts}
    results: dict[tuple[int, int], tuple[list[str], Vectors]] = {}

    def caller(n: int) -> None:
        for i in range(6):
            batch = [texts[(n + i) % len(texts)], texts[(n * 3 + i) % len(texts)]][: 1 + (i % 2)]
            results[(n, i)] = (batch, micro.embed(batch))

    run_threads(8, caller)
    # Then every caller got exactly the vectors a direct call gives, in its own order
    assert len(results) == 48
    for batch, vectors in results.values():
        np.testing.assert_allclose(vectors, np.vstack([expected[t] for t in batch]), atol=1e-4)


def test_micro_batching_coalesces_concurrent_calls() -> None:
    # Given a wrapper that waits (up to 10 s) until 8 texts are queued
    inner = CountingEmbedder()
    micro = MicroBatchingEmbedder(inner, max_wait_s=10.0, max_texts=8)
    out: dict[int, Vectors] = {}
    run_threads(8, lambda n: out.__setitem__(n, micro.embed([f"text number {n}"])))
    # Then 8 one-text calls became one call of 8 texts, and each caller got its own row
    assert inner.calls == [8]
    for n in range(8):
        np.testing.assert_array_equal(out[n], inner.inner.embed([f"text number {n}"]))


def test_micro_batching_passes_errors_to_every_caller() -> None:
    micro = MicroBatchingEmbedder(CountingEmbedder(fail=True), max_wait_s=10.0, max_texts=4)
    errors: list[BaseException] = []

    def caller(n: int) -> None:
        try:
            micro.embed([f"text {n}"])
        except RuntimeError as error:
            errors.append(error)

    run_threads(4, caller)
    assert len(errors) == 4
    assert all(str(e) == "model unavailable" for e in errors)


def test_micro_batching_skips_empty_and_large_calls() -> None:
    inner = CountingEmbedder()
    micro = MicroBatchingEmbedder(inner, max_wait_s=10.0, max_texts=4)
    assert micro.embed([]).shape == (0, 16)
    assert micro.embed(["a", "b", "c", "d"]).shape == (4, 16)  # no waiting for companions
    assert inner.calls == [4]
