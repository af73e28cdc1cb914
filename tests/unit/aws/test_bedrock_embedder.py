"""BedrockEmbedder through botocore's Stubber and the scripted runtime: requests, rows, retries, errors."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from cairn.adapters.aws.bedrock_embedder import BedrockEmbedder, EmbeddingError
from cairn.adapters.retrying import RetryPolicy
from cairn.entrypoints.rest.problems import STATUS_BY_CODE
from tests.contract.aws_bedrock import ACCESS_KEY, SECRET_KEY, ScriptedBedrock, bedrock_client

MODEL = "amazon.titan-embed-text-v2:0"


class Sleeps:
    def __init__(self) -> None:
        self.seen: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


@pytest.fixture
def client() -> Any:
    return bedrock_client()


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def titan(vector: list[float]) -> dict[str, Any]:
    data = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def request(text: str, dimension: int = 256) -> dict[str, Any]:
    body = json.dumps({"inputText": text, "dimensions": dimension, "normalize": True})
    return {"modelId": MODEL, "body": body, "contentType": "application/json", "accept": "application/json"}


def embedder(client: Any, sleeps: Sleeps | None = None, **kwargs: Any) -> BedrockEmbedder:
    retry = RetryPolicy(max_retries=kwargs.pop("max_retries", 3), sleep=sleeps or Sleeps())
    return BedrockEmbedder(client, MODEL, kwargs.pop("dimension", 256), retry=retry, **kwargs)


def unit(dimension: int, index: int = 0, scale: float = 3.0) -> list[float]:
    vector = [0.0] * dimension
    vector[index] = scale
    return vector


def test_sends_titan_v2_requests_and_returns_normalised_float32_rows(client: Any, stubber: Stubber) -> None:
    # Given Titan answers with vectors that are not quite unit length
    stubber.add_response("invoke_model", titan([3.0, 4.0] + [0.0] * 254), request("hello"))
    stubber.add_response("invoke_model", titan(unit(256, 7)), request("world"))
    # When two texts are embedded (one worker, so the queue order is the call order)
    rows = embedder(client, concurrency=1).embed(["hello", "world"])
    # Then each request is Titan V2's, and the rows are float32 unit vectors in order
    assert rows.dtype == np.float32 and rows.shape == (2, 256)
    np.testing.assert_allclose(rows[0, :2], [0.6, 0.8], rtol=1e-6)
    assert rows[1, 7] == pytest.approx(1.0)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)


def test_model_id_and_dimension_name_the_model(client: Any) -> None:
    e = BedrockEmbedder(client, dimension=512)
    assert (e.model_id, e.dimension) == ("bedrock:amazon.titan-embed-text-v2:0:512", 512)
    assert BedrockEmbedder(client).dimension == 1024


@pytest.mark.parametrize("dimension", [384, 0, 1536])
def test_rejects_dimensions_titan_v2_does_not_have(client: Any, dimension: int) -> None:
    with pytest.raises(ValueError, match="1024, 512 or 256"):
        BedrockEmbedder(client, dimension=dimension)


def test_rejects_zero_concurrency(client: Any) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        BedrockEmbedder(client, concurrency=0)


def test_empty_input_gives_no_rows_and_no_calls(client: Any, stubber: Stubber) -> None:
    rows = embedder(client).embed([])
    assert rows.shape == (0, 256) and rows.dtype == np.float32


def test_blank_text_gets_a_fixed_unit_vector_without_a_call(client: Any, stubber: Stubber) -> None:
    # Titan rejects an empty inputText; the port still promises one unit row per text
    rows = embedder(client).embed(["", "  \n"])
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(rows[0], rows[1])


def test_long_text_is_cut_to_max_chars(client: Any, stubber: Stubber) -> None:
    stubber.add_response("invoke_model", titan(unit(256)), request("x" * 100))
    embedder(client, max_chars=100).embed(["x" * 5000])


@pytest.mark.parametrize(
    "vector", [[1.0, 2.0], [0.0] * 256, [float("nan")] * 256], ids=["wrong-length", "zero", "nan"]
)
def test_a_bad_vector_is_a_bad_response(client: Any, stubber: Stubber, vector: list[float]) -> None:
    stubber.add_response("invoke_model", titan(vector))
    with pytest.raises(EmbeddingError) as caught:
        embedder(client).embed(["hello"])
    assert caught.value.reason == "bad_response" and not caught.value.retryable
    assert caught.value.code == "bad_gateway" and STATUS_BY_CODE[caught.value.code] == 502


def test_a_reply_without_an_embedding_is_a_bad_response(client: Any, stubber: Stubber) -> None:
    data = b'{"message": "no vector here"}'
    stubber.add_response(
        "invoke_model", {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "x"}
    )
    with pytest.raises(EmbeddingError, match="without an embedding"):
        embedder(client).embed(["hello"])


@pytest.mark.parametrize(
    "code",
    [
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "InternalServerException",
    ],
)
def test_transient_errors_are_retried_with_growing_backoff(client: Any, stubber: Stubber, code: str) -> None:
    # Given two failures and then an answer
    stubber.add_client_error("invoke_model", code, "try later", 429 if code == "ThrottlingException" else 503)
    stubber.add_client_error("invoke_model", code, "try later", 503)
    stubber.add_response("invoke_model", titan(unit(256, 3)))
    sleeps = Sleeps()
    # When the text is embedded
    rows = embedder(client, sleeps).embed(["hello"])
    # Then it succeeded after two pauses drawn from 0.5s x 2**n x U(0.5, 1.5)
    assert rows[0, 3] == pytest.approx(1.0)
    assert len(sleeps.seen) == 2
    assert 0.25 <= sleeps.seen[0] <= 0.75 and 0.5 <= sleeps.seen[1] <= 1.5


def test_throttling_that_lasts_gives_up_as_a_retryable_rate_limit(client: Any, stubber: Stubber) -> None:
    for _ in range(3):
        stubber.add_client_error("invoke_model", "ThrottlingException", "Too many requests", 429)
    sleeps = Sleeps()
    with pytest.raises(EmbeddingError) as caught:
        embedder(client, sleeps, max_retries=2).embed(["hello"])
    assert caught.value.reason == "rate_limited" and caught.value.retryable
    assert "Too many requests" in caught.value.message and len(sleeps.seen) == 2
    assert STATUS_BY_CODE[caught.value.code] == 429  # REST: ask again later, not a bare 500


@pytest.mark.parametrize(
    "code", ["ValidationException", "AccessDeniedException", "ResourceNotFoundException"]
)
def test_refusals_are_not_retried(client: Any, stubber: Stubber, code: str) -> None:
    stubber.add_client_error("invoke_model", code, "no", 400)
    sleeps = Sleeps()
    with pytest.raises(EmbeddingError) as caught:
        embedder(client, sleeps).embed(["hello"])
    assert caught.value.reason == "generation_failed" and not caught.value.retryable
    assert code in caught.value.message and sleeps.seen == []
    assert STATUS_BY_CODE[caught.value.code] == 502


def test_errors_carry_no_secrets_input_or_botocore_chain(client: Any, stubber: Stubber) -> None:
    # Given the service names the caller's access key in its refusal
    stubber.add_client_error(
        "invoke_model", "AccessDeniedException", f"User {ACCESS_KEY} is not authorized", 403
    )
    with pytest.raises(EmbeddingError) as caught:
        embedder(client).embed(["my private diary entry"])
    error = caught.value
    for leak in (ACCESS_KEY, SECRET_KEY, "private diary"):
        assert leak not in str(error) and leak not in repr(error)
    assert error.__cause__ is None and error.__context__ is None


def test_concurrent_batches_keep_their_order(client: Any) -> None:
    texts = [f"note {i} about topic{i % 7} and item{i}" for i in range(40)]
    with ScriptedBedrock(client) as bedrock:
        e = embedder(client, concurrency=8)
        together = e.embed(texts)
        alone = np.vstack([e.embed([t]) for t in texts])
        e.close()
    np.testing.assert_array_equal(together, alone)
    assert len({row.tobytes() for row in together}) == len(texts)
    assert len([c for c in bedrock.calls if c[0] == "invoke"]) == 80


def test_a_batch_runs_its_calls_at_the_same_time(client: Any) -> None:
    # Given a model that answers only once 4 calls are waiting (a sequential embedder would time out)
    barrier = threading.Barrier(4, timeout=10)
    with ScriptedBedrock(client, barrier=barrier) as bedrock:
        e = embedder(client, concurrency=4)
        rows = e.embed([f"text {i}" for i in range(8)])
        e.close()
    assert rows.shape == (8, 256) and len(bedrock.threads) == 4


def test_a_failing_text_fails_the_batch(client: Any) -> None:
    # Given a model that refuses one text of a batch
    def refuse(body: dict[str, Any]) -> str | None:
        return "ValidationException" if body["inputText"] == "text 3" else None

    with ScriptedBedrock(client, refuse=refuse):
        e = embedder(client, concurrency=4)
        # When the batch is embedded / Then the batch fails with that refusal
        with pytest.raises(EmbeddingError, match="ValidationException"):
            e.embed([f"text {i}" for i in range(8)])
        # and the embedder still works afterwards
        assert e.embed(["text 1", "text 2"]).shape == (2, 256)
        e.close()
