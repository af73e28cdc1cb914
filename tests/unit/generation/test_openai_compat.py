"""OpenAICompatGenerator against scripted servers (httpx.MockTransport): parsing, citations, failures."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from cairn.adapters.grounded import SYSTEM_PROMPT
from cairn.domain.text import holds_secret
from cairn.ports.generator import Citation, Delta, Done, Passage
from tests.unit.generation.helpers import (
    SECRET,
    SSE_HEADERS,
    Server,
    Sleeps,
    broken_stream,
    drain,
    frame,
    generator,
    sse,
    text_of,
)

pytestmark = pytest.mark.anyio

RUN = Passage("chk_run", "doc_run", "It rained all day. I finished the 10k route in under 55 minutes.", 0.8)
TEA = Passage("chk_tea", "doc_tea", "Bob prefers green tea in the morning.", 0.4)
PASSAGES = [RUN, TEA]


async def test_streams_content_deltas_then_done_with_the_whole_answer() -> None:
    server = Server(sse("You ran", " it in under", " 55 minutes."))
    events, error = await drain(generator(server), PASSAGES)
    assert error is None
    assert [e.text for e in events if isinstance(e, Delta)] == ["You ran", " it in under", " 55 minutes."]
    assert events[-1] == Done("You ran it in under 55 minutes.", "test-model")


async def test_request_numbers_the_passages_and_asks_to_cite_them() -> None:
    server = Server(sse("ok."))
    await drain(generator(server), PASSAGES, question="How fast was the 10k?")
    request, body = server.requests[0], server.body()
    assert request.url == "http://model.test/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert body["model"] == "test-model" and body["stream"] is True
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert f"[1] {RUN.text}" in user["content"] and f"[2] {TEA.text}" in user["content"]
    assert user["content"].endswith("Question: How fast was the 10k?")


async def test_markers_become_citations_spanning_their_sentence() -> None:
    # Given markers split across deltas, after and before the full stop, and one out of range
    server = Server(
        sse("You finished in under", " 55 minutes [", "1]. Bob drinks", " green tea.[2][7] Done.")
    )
    events, _ = await drain(generator(server), PASSAGES)
    answer = text_of(events)
    citations = [e for e in events if isinstance(e, Citation)]
    assert [(c.chunk_id, c.document_id) for c in citations] == [
        ("chk_run", "doc_run"),
        ("chk_tea", "doc_tea"),
    ]
    assert (
        answer[citations[0].answer_start : citations[0].answer_end] == "You finished in under 55 minutes [1]."
    )
    assert answer[citations[1].answer_start : citations[1].answer_end] == "Bob drinks green tea.[2][7]"
    # the quote is the passage sentence that supports the answer sentence, not the passage's first
    assert citations[0].quote == "I finished the 10k route in under 55 minutes."
    assert citations[1].quote == TEA.text


async def test_a_citation_is_released_only_once_its_sentence_has_streamed() -> None:
    server = Server(sse("Under 55 minutes [1]", " according to the log. Next."))
    events, _ = await drain(generator(server), PASSAGES)
    first_citation = next(i for i, e in enumerate(events) if isinstance(e, Citation))
    seen = text_of(events[:first_citation])
    citation = events[first_citation]
    assert isinstance(citation, Citation)
    assert seen.startswith("Under 55 minutes [1] according to the log.")
    assert citation.answer_end == len("Under 55 minutes [1] according to the log.")


async def test_a_caller_that_stops_reading_closes_the_connection() -> None:
    closed = []

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for piece in ("One. ", "Two. ", "Three."):
                yield frame(piece).encode()
            yield b"data: [DONE]\n\n"

        async def aclose(self) -> None:
            closed.append(True)

    server = Server(httpx.Response(200, stream=Body(), headers=SSE_HEADERS))
    stream = generator(server).stream("q?", PASSAGES)
    assert isinstance(await anext(stream), Delta)
    await stream.aclose()  # type: ignore[attr-defined]
    assert closed == [True]


async def test_retries_rate_limits_and_server_errors_before_any_text_then_succeeds() -> None:
    server = Server(
        httpx.Response(429, json={"error": {"message": "slow down"}}),
        httpx.Response(500, text="overloaded"),
        httpx.Response(503),
        sse("Fine [1]."),
    )
    sleeps = Sleeps()
    events, error = await drain(generator(server, sleeps, backoff_s=1.0), PASSAGES)
    assert error is None and text_of(events) == "Fine [1]."
    assert len(server.requests) == 4
    # exponential backoff with jitter: attempt k waits backoff * 2**k * [0.5, 1.5)
    assert [0.5 * 2**k <= d < 1.5 * 2**k for k, d in enumerate(sleeps.delays)] == [True] * 3


async def test_retry_after_is_honoured() -> None:
    server = Server(httpx.Response(429, headers={"Retry-After": "7"}), sse("ok."))
    sleeps = Sleeps()
    _, error = await drain(generator(server, sleeps), PASSAGES)
    assert error is None and sleeps.delays == [7.0]


async def test_gives_up_after_max_retries_with_a_retryable_error() -> None:
    server = Server(httpx.Response(429, json={"error": {"message": "quota"}}))
    sleeps = Sleeps()
    events, error = await drain(generator(server, sleeps, max_retries=2), PASSAGES)
    assert events == [] and error is not None
    assert (error.code, error.retryable) == ("rate_limited", True)
    assert "quota" in error.message and len(server.requests) == 3 and len(sleeps.delays) == 2


async def test_retry_after_beyond_the_limit_fails_at_once() -> None:
    server = Server(httpx.Response(429, headers={"Retry-After": "3600"}))
    sleeps = Sleeps()
    _, error = await drain(generator(server, sleeps), PASSAGES)
    assert error is not None and error.code == "rate_limited" and error.retryable
    assert len(server.requests) == 1 and sleeps.delays == []


async def test_connection_refused_is_retried() -> None:
    refused = httpx.ConnectError("[Errno 111] Connection refused")
    server = Server(refused, refused, sse("Back [1]."))
    events, error = await drain(generator(server), PASSAGES)
    assert error is None and text_of(events) == "Back [1]." and len(server.requests) == 3


async def test_client_errors_are_not_retried() -> None:
    server = Server(httpx.Response(400, json={"error": {"message": "model 'x' not found"}}))
    _, error = await drain(generator(server), PASSAGES)
    assert error is not None and (error.code, error.retryable) == ("generation_failed", False)
    assert "HTTP 400" in error.message and "not found" in error.message
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "failure",
    [
        httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
        httpx.ReadError("connection reset"),
    ],
)
async def test_no_retry_once_text_was_streamed(failure: Exception) -> None:
    # Given a server that drops the connection after two deltas, then would answer fine
    server = Server(broken_stream("Half an ", "answer", error=failure), sse("A second answer."))
    sleeps = Sleeps()
    events, error = await drain(generator(server, sleeps), PASSAGES)
    # Then the caller saw the partial deltas, no Done, and an error; nothing was asked twice
    assert text_of(events) == "Half an answer"
    assert not any(isinstance(e, Done) for e in events)
    assert error is not None and error.code == "generation_failed" and error.retryable
    assert len(server.requests) == 1 and sleeps.delays == []


async def test_a_server_error_reported_mid_stream_ends_the_answer() -> None:
    body = frame("Partial") + 'data: {"error": {"message": "CUDA out of memory", "code": 500}}\n\n'
    server = Server(httpx.Response(200, content=body.encode(), headers=SSE_HEADERS), sse("again"))
    events, error = await drain(generator(server), PASSAGES)
    assert text_of(events) == "Partial" and not any(isinstance(e, Done) for e in events)
    assert error is not None and error.code == "generation_failed" and "CUDA out of memory" in error.message
    assert len(server.requests) == 1


async def test_a_disconnect_before_any_text_is_retried() -> None:
    server = Server(broken_stream(error=httpx.RemoteProtocolError("closed")), sse("Whole."))
    events, error = await drain(generator(server), PASSAGES)
    assert error is None and text_of(events) == "Whole." and len(server.requests) == 2


async def test_read_timeout_is_a_retryable_timeout_error() -> None:
    server = Server(httpx.ReadTimeout("timed out"))
    events, error = await drain(generator(server, timeout_s=0.5), PASSAGES)
    assert events == [] and error is not None
    assert (error.code, error.retryable) == ("generation_timeout", True)
    assert len(server.requests) == 1  # a slow model is not asked again behind the caller's back


async def test_connect_timeout_is_retried_then_reported() -> None:
    server = Server(httpx.ConnectTimeout("connect timed out"))
    _, error = await drain(generator(server, max_retries=1), PASSAGES)
    assert error is not None and error.code == "generation_timeout" and len(server.requests) == 2


async def test_malformed_json_is_a_bad_response() -> None:
    body = frame("Hello") + "data: {not json\n\n"
    server = Server(httpx.Response(200, content=body.encode(), headers=SSE_HEADERS))
    events, error = await drain(generator(server), PASSAGES)
    assert text_of(events) == "Hello" and not any(isinstance(e, Done) for e in events)
    assert error is not None and error.code == "bad_response"


@pytest.mark.parametrize(
    "payload", ['{"id": "x"}', '{"choices": [{"index": 0}]}', '{"choices": [{"delta": {"content": 5}}]}']
)
async def test_chunks_missing_fields_are_a_bad_response(payload: str) -> None:
    server = Server(httpx.Response(200, content=f"data: {payload}\n\n".encode(), headers=SSE_HEADERS))
    _, error = await drain(generator(server), PASSAGES)
    assert error is not None and error.code == "bad_response"


async def test_a_stream_ending_without_done_or_finish_reason_is_a_bad_response() -> None:
    server = Server(sse("Cut off mid", done=False, finish=None))
    events, error = await drain(generator(server), PASSAGES)
    assert text_of(events) == "Cut off mid" and not any(isinstance(e, Done) for e in events)
    assert error is not None and error.code == "bad_response"


async def test_finish_reason_without_done_marker_completes() -> None:
    server = Server(sse("Complete.", done=False, finish="stop"))
    events, error = await drain(generator(server), PASSAGES)
    assert error is None and events[-1] == Done("Complete.", "test-model")


async def test_usage_only_chunks_and_comments_are_skipped() -> None:
    body = ": keep-alive\n\n" + frame("Hi.") + 'data: {"choices": [], "usage": {"total_tokens": 3}}\n\n'
    body += "event: message\n" + frame(None, "stop") + "data: [DONE]\n\n"
    server = Server(httpx.Response(200, content=body.encode(), headers=SSE_HEADERS))
    events, error = await drain(generator(server), PASSAGES)
    assert error is None and events[-1] == Done("Hi.", "test-model")


async def test_a_server_that_ignores_stream_true_still_answers() -> None:
    completion = {"choices": [{"message": {"role": "assistant", "content": "All at once [2]."}}]}
    server = Server(httpx.Response(200, json=completion))
    answer = await generator(server).complete("q?", PASSAGES)
    assert answer.text == "All at once [2]." and [c.chunk_id for c in answer.citations] == ["chk_tea"]


async def test_no_passages_means_no_request() -> None:
    server = Server(sse("invented"))
    answer = await generator(server).complete("q?", [])
    assert server.requests == [] and answer.citations == []
    assert "no supporting memory" in answer.text.lower()


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {SECRET}"}}),
        httpx.Response(500, text=f"upstream rejected Authorization: Bearer {SECRET}"),
        httpx.Response(401, json={"error": {"message": f"Bad key: {SECRET[:10]}****{SECRET[-6:]}"}}),
        httpx.Response(403, text=f"no such key {SECRET.upper()}"),
        httpx.ConnectError(f"refused while sending Bearer {SECRET}"),
    ],
)
async def test_errors_never_carry_the_api_key(reply: httpx.Response | Exception) -> None:
    _, error = await drain(generator(Server(reply), max_retries=0), PASSAGES)
    assert error is not None
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    # Then neither the error nor anything chained to it (an httpx exception would hold the request
    # and its Authorization header) mentions the key
    assert chain == [error]
    assert SECRET not in str(error) and SECRET not in repr(error)
    assert not holds_secret(str(error), [SECRET]), str(error)  # no part of it, in any case
