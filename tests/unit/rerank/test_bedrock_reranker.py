"""BedrockReranker on a real bedrock-agent-runtime client under botocore's Stubber: the Rerank
request (validated against botocore's service model), results, batches of 1000, pages, retries and
the mapping of the service's errors onto RerankError codes."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError, NoCredentialsError, ReadTimeoutError
from botocore.stub import Stubber

from cairn.adapters.aws.bedrock_reranker import MAX_SOURCES, MAX_TEXT_CHARS, BedrockReranker, model_arn
from cairn.adapters.retrying import RetryPolicy
from cairn.ports.reranker import Ranked, RerankError
from tests.contract.aws_bedrock import ACCESS_KEY, REGION, SECRET_KEY

MODEL = "amazon.rerank-v1:0"
ARN = f"arn:aws:bedrock:{REGION}::foundation-model/{MODEL}"
QUERY = "how long did the 10k route take"
DOCS = [
    "Green tea is best steeped at eighty degrees for three minutes.",
    "I finished the 10k route along the river in under 55 minutes.",
    "The quarterly budget review moved to the second Thursday of May.",
]


@pytest.fixture
def client() -> Any:
    return boto3.client(
        "bedrock-agent-runtime",
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def reranker(client: Any, sleeps: list[float], max_retries: int = 2, **kwargs: Any) -> BedrockReranker:
    return BedrockReranker(client, retry=RetryPolicy(max_retries=max_retries, sleep=sleeps.append), **kwargs)


def request(docs: list[str], number: int, arn: str = ARN, **extra: Any) -> dict[str, Any]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": QUERY}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": d}}}
            for d in docs
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": number,
                "modelConfiguration": {"modelArn": arn},
            },
        },
        **extra,
    }


def reply(*pairs: tuple[int, float], **extra: Any) -> dict[str, Any]:
    return {"results": [{"index": i, "relevanceScore": s} for i, s in pairs], **extra}


BEST_FIRST = [Ranked(1, 0.93), Ranked(0, 0.2), Ranked(2, 0.1)]


def test_sends_the_rerank_request_and_returns_documents_best_first(
    client: Any, stubber: Stubber, sleeps: list[float]
) -> None:
    stubber.add_response("rerank", reply((1, 0.93), (2, 0.1), (0, 0.2)), request(DOCS, 3))
    assert reranker(client, sleeps).rerank(QUERY, DOCS, instruction="ignored: Rerank has none") == BEST_FIRST


def test_top_n_is_the_number_of_results(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    stubber.add_response("rerank", reply((1, 0.93), (0, 0.2)), request(DOCS, 2))
    stubber.add_response("rerank", reply((1, 0.93), (0, 0.2), (2, 0.1)), request(DOCS, 3))
    rr = reranker(client, sleeps)
    assert rr.rerank(QUERY, DOCS, top_n=2) == BEST_FIRST[:2]
    assert rr.rerank(QUERY, DOCS, top_n=50) == BEST_FIRST


def test_model_arn_from_the_model_id_and_region_or_given_whole(client: Any) -> None:
    assert reranker(client, []).arn == ARN
    assert BedrockReranker(client, "cohere.rerank-v3-5:0", "eu-central-1").arn == (
        "arn:aws:bedrock:eu-central-1::foundation-model/cohere.rerank-v3-5:0"
    )
    given = "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
    rr = BedrockReranker(client, given)
    assert rr.arn == given and rr.model_id == "bedrock:cohere.rerank-v3-5:0"
    assert model_arn(MODEL, "cn-north-1").startswith("arn:aws-cn:bedrock:cn-north-1::")


def test_empty_text_is_sent_as_a_space_and_long_text_is_cut(
    client: Any, stubber: Stubber, sleeps: list[float]
) -> None:
    long = "x" * (MAX_TEXT_CHARS + 10)
    stubber.add_response("rerank", reply((0, 0.5), (1, 0.1)), request([" ", "x" * MAX_TEXT_CHARS], 2))
    assert reranker(client, sleeps).rerank(QUERY, ["", long]) == [Ranked(0, 0.5), Ranked(1, 0.1)]


def test_more_than_a_request_holds_goes_in_batches_merged_by_score(
    client: Any, stubber: Stubber, sleeps: list[float]
) -> None:
    docs = [f"note {i}" for i in range(MAX_SOURCES + 2)]
    stubber.add_response("rerank", reply((7, 0.4), (3, 0.2)), request(docs[:MAX_SOURCES], 2))
    stubber.add_response("rerank", reply((1, 0.9), (0, 0.3)), request(docs[MAX_SOURCES:], 2))
    ranked = reranker(client, sleeps).rerank(QUERY, docs, top_n=2)
    assert ranked == [Ranked(MAX_SOURCES + 1, 0.9), Ranked(7, 0.4)]


def test_results_in_pages_are_followed(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    stubber.add_response("rerank", reply((1, 0.93), nextToken="page-2"), request(DOCS, 3))
    stubber.add_response("rerank", reply((0, 0.2), (2, 0.1)), request(DOCS, 3, nextToken="page-2"))
    assert reranker(client, sleeps).rerank(QUERY, DOCS) == BEST_FIRST


def test_no_documents_makes_no_call(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    assert reranker(client, sleeps).rerank(QUERY, []) == []


def test_throttling_is_retried_with_backoff(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    stubber.add_client_error("rerank", "ThrottlingException", "Too many requests", 429)
    stubber.add_client_error("rerank", "InternalServerException", "internal error", 500)
    stubber.add_response("rerank", reply((1, 0.93), (0, 0.2), (2, 0.1)), request(DOCS, 3))
    assert reranker(client, sleeps).rerank(QUERY, DOCS) == BEST_FIRST
    assert len(sleeps) == 2


def test_throttling_that_lasts_is_rerank_failed(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    for _ in range(3):
        stubber.add_client_error("rerank", "ThrottlingException", "Too many requests", 429)
    with pytest.raises(RerankError) as caught:
        reranker(client, sleeps, max_retries=2).rerank(QUERY, DOCS)
    error = caught.value
    assert error.code == "rerank_failed" and error.retryable
    assert "ThrottlingException" in error.message and "rate limiting" in error.message
    assert len(sleeps) == 2 and error.__context__ is None


@pytest.mark.parametrize(
    ("service_code", "status", "code", "retryable"),
    [
        ("ValidationException", 400, "rerank_failed", False),
        ("ServiceQuotaExceededException", 400, "rerank_failed", False),
        ("AccessDeniedException", 403, "rerank_unavailable", False),
        ("ResourceNotFoundException", 404, "rerank_unavailable", False),
        ("UnrecognizedClientException", 403, "rerank_unavailable", False),
    ],
)
def test_refusals_are_not_retried(
    client: Any,
    stubber: Stubber,
    sleeps: list[float],
    service_code: str,
    status: int,
    code: str,
    retryable: bool,
) -> None:
    stubber.add_client_error("rerank", service_code, "You don't have access to the model", status)
    with pytest.raises(RerankError) as caught:
        reranker(client, sleeps).rerank(QUERY, DOCS)
    assert (caught.value.code, caught.value.retryable) == (code, retryable)
    assert service_code in caught.value.message and "access to the model" in caught.value.message
    assert sleeps == []


def test_a_service_message_quoting_the_input_is_dropped(
    client: Any, stubber: Stubber, sleeps: list[float]
) -> None:
    said = (
        f"1 validation error detected: Value '{DOCS[1]}' at 'sources.2.member' failed to satisfy constraint; "
        f"near {DOCS[2][:30]} for {QUERY} with key {ACCESS_KEY}"
    )
    stubber.add_client_error("rerank", "ValidationException", said, 400)
    with pytest.raises(RerankError) as caught:
        reranker(client, sleeps).rerank(QUERY, DOCS)
    shown = [caught.value.message, repr(caught.value)]
    for text in shown:
        assert ACCESS_KEY not in text and SECRET_KEY not in text
        for doc in [*DOCS, QUERY]:
            assert doc not in text and doc[:16] not in text
    assert "ValidationException" in caught.value.message


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (reply((0, 0.5), (3, 0.9)), "index 3, but 3 documents"),
        (reply((1, 0.5), (1, 0.4)), "two results for index 1"),
    ],
)
def test_malformed_results_are_rerank_bad_response(
    client: Any, stubber: Stubber, sleeps: list[float], body: dict[str, Any], words: str
) -> None:
    stubber.add_response("rerank", body, request(DOCS, 3))
    with pytest.raises(RerankError) as caught:
        reranker(client, sleeps).rerank(QUERY, DOCS)
    assert caught.value.code == "rerank_bad_response" and words in caught.value.message


class Failing:
    """A client whose calls raise `error` (transport failures the Stubber cannot produce)."""

    meta = SimpleNamespace(region_name=REGION)

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def rerank(self, **_: Any) -> Any:
        self.calls += 1
        raise self.error


def test_no_connection_is_rerank_unavailable_after_retries(sleeps: list[float]) -> None:
    failing = Failing(
        EndpointConnectionError(endpoint_url="https://bedrock-agent-runtime.us-east-1.amazonaws.com")
    )
    with pytest.raises(RerankError) as caught:
        reranker(failing, sleeps, max_retries=1).rerank(QUERY, DOCS)
    assert caught.value.code == "rerank_unavailable" and failing.calls == 2


def test_a_read_timeout_is_rerank_timeout_at_once(sleeps: list[float]) -> None:
    failing = Failing(ReadTimeoutError(endpoint_url="https://bedrock-agent-runtime.us-east-1.amazonaws.com"))
    with pytest.raises(RerankError) as caught:
        reranker(failing, sleeps).rerank(QUERY, DOCS)
    assert caught.value.code == "rerank_timeout" and failing.calls == 1


def test_no_credentials_is_rerank_unavailable(sleeps: list[float]) -> None:
    failing = Failing(NoCredentialsError())
    with pytest.raises(RerankError) as caught:
        reranker(failing, sleeps).rerank(QUERY, DOCS)
    assert caught.value.code == "rerank_unavailable" and not caught.value.retryable and failing.calls == 1
