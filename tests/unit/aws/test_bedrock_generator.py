"""BedrockGenerator through botocore's Stubber: the request, streamed deltas and citations, and
each failure's mapping onto GenerationError, with retries only before the first delta."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import urllib3.exceptions
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
from botocore.stub import Stubber

from cairn.adapters.aws.bedrock_generator import BedrockGenerator
from cairn.adapters.grounded import SYSTEM_PROMPT
from cairn.adapters.retrying import RetryPolicy
from cairn.ports.generator import Citation, Delta, Done, GenerationError, GenerationEvent, Passage
from tests.contract.aws_bedrock import (
    ACCESS_KEY,
    SECRET_KEY,
    add_stream,
    answer_events,
    bedrock_client,
    event,
    stream_error,
)

pytestmark = pytest.mark.anyio

MODEL = "amazon.nova-lite-v1:0"
PASSAGES = [
    Passage("chk_run", "doc_run", "I finished the 10k route in under 55 minutes. It rained.", 0.9),
    Passage("chk_tea", "doc_tea", "Bob prefers green tea in the morning. He drinks coffee at night.", 0.5),
]
QUESTION = "How long did the 10k take?"
ANSWER = ["The 10k took", " under 55 minutes [1]", ". Bob likes green", " tea [2]."]


class Sleeps:
    def __init__(self) -> None:
        self.seen: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


@pytest.fixture
def client() -> Any:
    return bedrock_client()


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def generator(client: Any, sleeps: Sleeps) -> BedrockGenerator:
    return BedrockGenerator(client, MODEL, retry=RetryPolicy(max_retries=2), sleep=sleeps)


async def events_of(generator: BedrockGenerator, passages: list[Passage] = PASSAGES) -> list[GenerationEvent]:
    return [e async for e in generator.stream(QUESTION, passages)]


async def failure_of(generator: BedrockGenerator) -> tuple[GenerationError, list[GenerationEvent]]:
    seen: list[GenerationEvent] = []
    with pytest.raises(GenerationError) as caught:
        async for e in generator.stream(QUESTION, PASSAGES):
            seen.append(e)
    return caught.value, seen


async def test_sends_the_numbered_passages_and_streams_deltas_then_citations(
    generator: BedrockGenerator, stubber: Stubber
) -> None:
    # Given a model that answers in four pieces, citing [1] and [2]
    user = (
        "Passages:\n\n[1] I finished the 10k route in under 55 minutes. It rained.\n\n"
        "[2] Bob prefers green tea in the morning. He drinks coffee at night.\n\nQuestion: " + QUESTION
    )
    expected = {
        "modelId": MODEL,
        "system": [{"text": SYSTEM_PROMPT}],
        "messages": [{"role": "user", "content": [{"text": user}]}],
        "inferenceConfig": {"temperature": 0, "maxTokens": 1024},
    }
    add_stream(stubber, answer_events(*ANSWER), expected_params=expected)
    # When the answer streams
    events = await events_of(generator)
    # Then the deltas are the pieces, each sentence's citation follows it, and Done closes
    assert [e.text for e in events if isinstance(e, Delta)] == ANSWER
    answer = "".join(ANSWER)
    cites = [e for e in events if isinstance(e, Citation)]
    assert [(c.chunk_id, c.document_id) for c in cites] == [("chk_run", "doc_run"), ("chk_tea", "doc_tea")]
    assert answer[cites[0].answer_start : cites[0].answer_end] == "The 10k took under 55 minutes [1]."
    assert cites[0].quote == "I finished the 10k route in under 55 minutes."
    first_cite = events.index(cites[0])
    streamed = "".join(e.text for e in events[:first_cite] if isinstance(e, Delta))
    assert cites[0].answer_end <= len(streamed) < len(answer)  # released while the answer streams
    assert events[-1] == Done(answer, MODEL) and generator.model_id == MODEL


async def test_no_passages_answers_without_calling_the_model(
    generator: BedrockGenerator, stubber: Stubber
) -> None:
    events = await events_of(generator, [])
    done = events[-1]
    assert isinstance(done, Done) and "no supporting memory" in done.answer.lower()


async def test_complete_collects_the_stream(generator: BedrockGenerator, stubber: Stubber) -> None:
    add_stream(stubber, answer_events(*ANSWER))
    answer = await generator.complete(QUESTION, PASSAGES)
    assert answer.text == "".join(ANSWER) and len(answer.citations) == 2 and answer.model == MODEL


async def test_ignores_native_citation_and_reasoning_deltas(
    generator: BedrockGenerator, stubber: Stubber
) -> None:
    location = {"searchResultLocation": {"searchResultIndex": 0, "start": 0, "end": 1}}
    frames = answer_events("Done [1].")
    frames[1:1] = [
        event(
            "contentBlockDelta", {"delta": {"reasoningContent": {"text": "thinking"}}, "contentBlockIndex": 0}
        ),
        event(
            "contentBlockDelta",
            {"delta": {"citation": {"title": "t", "location": location}}, "contentBlockIndex": 0},
        ),
    ]
    add_stream(stubber, frames)
    events = await events_of(generator)
    assert [e.text for e in events if isinstance(e, Delta)] == ["Done [1]."]
    assert events[-1] == Done("Done [1].", MODEL)


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 429), ("ServiceUnavailableException", 503), ("ModelNotReadyException", 429)],
)
async def test_a_refused_call_is_retried_then_answers(
    generator: BedrockGenerator, stubber: Stubber, sleeps: Sleeps, code: str, status: int
) -> None:
    stubber.add_client_error("converse_stream", code, "busy", status)
    add_stream(stubber, answer_events(*ANSWER))
    events = await events_of(generator)
    assert events[-1] == Done("".join(ANSWER), MODEL)
    assert len(sleeps.seen) == 1 and 0.25 <= sleeps.seen[0] <= 0.75


async def test_throttling_inside_the_stream_before_any_text_is_retried(
    generator: BedrockGenerator, stubber: Stubber, sleeps: Sleeps
) -> None:
    add_stream(
        stubber, [event("messageStart", {"role": "assistant"}), stream_error("throttlingException", "slow")]
    )
    add_stream(stubber, answer_events(*ANSWER))
    events = await events_of(generator)
    assert isinstance(events[-1], Done) and len(sleeps.seen) == 1


async def test_a_failure_after_the_first_delta_is_raised_not_retried(
    generator: BedrockGenerator, stubber: Stubber, sleeps: Sleeps
) -> None:
    # Given a stream that throttles after some text reached the caller
    add_stream(stubber, [*answer_events(*ANSWER, stop=None)[:3], stream_error("throttlingException", "slow")])
    # When it is read / Then the text seen so far is followed by an error, not by a second answer
    error, seen = await failure_of(generator)
    assert (error.code, error.retryable) == ("rate_limited", True)
    assert [e.text for e in seen if isinstance(e, Delta)] == ANSWER[:2]
    assert not any(isinstance(e, Done) for e in seen) and sleeps.seen == []


@pytest.mark.parametrize(
    ("code", "status", "expected", "retryable"),
    [
        ("ThrottlingException", 429, "rate_limited", True),
        ("ServiceUnavailableException", 503, "generation_failed", True),
        ("ModelTimeoutException", 408, "generation_timeout", True),
        ("ValidationException", 400, "generation_failed", False),
        ("AccessDeniedException", 403, "generation_failed", False),
        ("ResourceNotFoundException", 404, "generation_failed", False),
        ("ModelErrorException", 424, "generation_failed", True),
        ("ServiceQuotaExceededException", 400, "rate_limited", False),
    ],
)
async def test_service_errors_map_onto_generation_codes(
    generator: BedrockGenerator,
    stubber: Stubber,
    sleeps: Sleeps,
    code: str,
    status: int,
    expected: str,
    retryable: bool,
) -> None:
    transient = code in ("ThrottlingException", "ServiceUnavailableException")
    for _ in range(3 if transient else 1):  # transient ones: the first try and two retries
        stubber.add_client_error("converse_stream", code, "the service says no", status)
    error, _ = await failure_of(generator)
    assert (error.code, error.retryable) == (expected, retryable)
    assert code in error.message and "the service says no" in error.message and MODEL in error.message
    assert len(sleeps.seen) == (2 if transient else 0)


async def test_a_read_timeout_is_a_timeout_and_not_retried(
    client: Any, generator: BedrockGenerator, sleeps: Sleeps
) -> None:
    def timeout(**_: Any) -> None:
        raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    client.meta.events.register("before-send.bedrock-runtime", timeout)
    error, _ = await failure_of(generator)
    assert (error.code, error.retryable) == ("generation_timeout", True) and sleeps.seen == []


async def test_a_connect_timeout_is_retried(client: Any, generator: BedrockGenerator, sleeps: Sleeps) -> None:
    def timeout(**_: Any) -> None:
        raise ConnectTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    client.meta.events.register("before-send.bedrock-runtime", timeout)
    error, _ = await failure_of(generator)
    assert error.code == "generation_timeout" and len(sleeps.seen) == 2


async def test_a_stream_that_stalls_mid_answer_is_a_timeout(
    generator: BedrockGenerator, stubber: Stubber
) -> None:
    stall = urllib3.exceptions.ReadTimeoutError(None, "/converse-stream", "Read timed out.")  # type: ignore[arg-type]
    add_stream(stubber, answer_events(*ANSWER, stop=None)[:2], error=stall)
    error, seen = await failure_of(generator)
    assert (error.code, error.retryable) == ("generation_timeout", True)
    assert [e.text for e in seen if isinstance(e, Delta)] == ANSWER[:1]


async def test_a_stream_without_message_stop_is_a_bad_response(
    generator: BedrockGenerator, stubber: Stubber
) -> None:
    add_stream(stubber, answer_events(*ANSWER, stop=None))
    error, seen = await failure_of(generator)
    assert error.code == "bad_response"
    assert not any(isinstance(e, Done) for e in seen)


@pytest.mark.parametrize(
    "bad",
    [
        event("contentBlockDelta", {"contentBlockIndex": 0}),
        event("contentBlockDelta", {"delta": {"text": 5}, "contentBlockIndex": 0}),
        event("messageStop", {}),
        b"\x00\x00\x00\x20 not an event-stream frame at all",
    ],
    ids=["no-delta", "non-text", "no-stop-reason", "undecodable"],
)
async def test_malformed_events_are_a_bad_response(
    generator: BedrockGenerator, stubber: Stubber, bad: bytes
) -> None:
    add_stream(stubber, [*answer_events("Fine [1].", stop=None), bad])
    error, _ = await failure_of(generator)
    assert error.code == "bad_response"


async def test_malformed_model_output_is_a_bad_response(
    generator: BedrockGenerator, stubber: Stubber
) -> None:
    add_stream(stubber, answer_events("Fine [1].", stop="malformed_model_output"))
    error, _ = await failure_of(generator)
    assert (error.code, error.retryable) == ("bad_response", False)


async def test_a_truncated_answer_still_completes(generator: BedrockGenerator, stubber: Stubber) -> None:
    add_stream(stubber, answer_events("The 10k took under", stop="max_tokens"))
    events = await events_of(generator)
    assert events[-1] == Done("The 10k took under", MODEL)


async def test_stopping_early_closes_the_stream(generator: BedrockGenerator, stubber: Stubber) -> None:
    raw = add_stream(stubber, answer_events(*ANSWER))
    stream = generator.stream(QUESTION, PASSAGES)
    first = await stream.__anext__()
    await stream.aclose()  # type: ignore[attr-defined]
    assert first == Delta(ANSWER[0]) and raw.closed


async def test_errors_carry_no_secrets_passages_or_botocore_chain(
    generator: BedrockGenerator, stubber: Stubber
) -> None:
    stubber.add_client_error(
        "converse_stream", "AccessDeniedException", f"User {ACCESS_KEY} may not call this", 403
    )
    error, _ = await failure_of(generator)
    for leak in (ACCESS_KEY, SECRET_KEY, "55 minutes", "green tea"):
        assert leak not in str(error) and leak not in repr(error)
    assert error.__cause__ is None and error.__context__ is None
