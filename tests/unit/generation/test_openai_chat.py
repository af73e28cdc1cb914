"""OpenAIChat (JSON-mode chat completions) against scripted servers: parsing, retries, failures."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from cairn.adapters.local.openai_chat import OpenAIChat, parse_json_object
from cairn.domain.text import holds_secret
from cairn.ports.generator import GenerationError
from tests.unit.generation.helpers import SECRET, Server


def completion(content: str | None, finish: str = "stop") -> httpx.Response:
    message = {"role": "assistant", "content": content}
    return httpx.Response(200, json={"choices": [{"index": 0, "message": message, "finish_reason": finish}]})


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def chat(server: Server, sleeps: Sleeps | None = None, **kwargs: Any) -> OpenAIChat:
    return OpenAIChat(
        "http://model.test/v1",
        "test-model",
        api_key=SECRET,
        transport=httpx.MockTransport(server),
        sleep=sleeps or Sleeps(),
        **kwargs,
    )


def failure(client: OpenAIChat) -> GenerationError:
    with pytest.raises(GenerationError) as caught:
        client.complete_json("system", "user")
    return caught.value


def test_returns_the_reply_as_an_object_and_asks_for_json_mode() -> None:
    server = Server(completion('{"facts": [{"text": "Bob likes tea"}]}'))
    reply = chat(server).complete_json("You extract facts.", "Bob: I like tea.")
    assert reply == {"facts": [{"text": "Bob likes tea"}]}
    request, body = server.requests[0], server.body()
    assert request.url == "http://model.test/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert body["model"] == "test-model" and body["temperature"] == 0 and body["stream"] is False
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == [
        {"role": "system", "content": "You extract facts."},
        {"role": "user", "content": "Bob: I like tea."},
    ]


def test_no_key_means_no_authorization_header() -> None:
    server = Server(completion("{}"))
    OpenAIChat("http://model.test/v1", "m", transport=httpx.MockTransport(server)).complete_json("s", "u")
    assert "authorization" not in server.requests[0].headers


@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"ok": true}\n```',
        'Here it is:\n```\n{"ok": true}\n```\nAnything else?',
        '<think>The user wants {json}.</think>\n{"ok": true}',
        'Sure! {"ok": true} Hope that helps.',
        '  {"ok": true}\n',
    ],
)
def test_tolerates_fences_and_chatter_around_the_object(content: str) -> None:
    assert chat(Server(completion(content))).complete_json("s", "u") == {"ok": True}


def test_retries_rate_limits_server_errors_and_refused_connections_then_succeeds() -> None:
    server = Server(
        httpx.Response(429, json={"error": {"message": "slow down"}}),
        httpx.Response(500, text="overloaded"),
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.Response(503),
        completion('{"ok": 1}'),
    )
    sleeps = Sleeps()
    assert chat(server, sleeps, backoff_s=1.0, max_retries=4).complete_json("s", "u") == {"ok": 1}
    assert len(server.requests) == 5
    # exponential backoff with jitter: attempt k waits backoff * 2**k * [0.5, 1.5)
    assert [0.5 * 2**k <= d < 1.5 * 2**k for k, d in enumerate(sleeps.delays)] == [True] * 4


def test_retry_after_is_honoured() -> None:
    server = Server(httpx.Response(429, headers={"Retry-After": "7"}), completion("{}"))
    sleeps = Sleeps()
    assert chat(server, sleeps).complete_json("s", "u") == {}
    assert sleeps.delays == [7.0]


def test_retry_after_beyond_the_limit_fails_at_once() -> None:
    server = Server(httpx.Response(429, headers={"Retry-After": "3600"}))
    sleeps = Sleeps()
    error = failure(chat(server, sleeps))
    assert (error.code, error.retryable) == ("rate_limited", True)
    assert len(server.requests) == 1 and sleeps.delays == []


def test_server_errors_until_retries_run_out() -> None:
    server = Server(httpx.Response(500, json={"error": {"message": "CUDA out of memory"}}))
    sleeps = Sleeps()
    error = failure(chat(server, sleeps, max_retries=2))
    assert (error.code, error.retryable) == ("generation_failed", True)
    assert "HTTP 500" in error.message and "CUDA out of memory" in error.message
    assert len(server.requests) == 3 and len(sleeps.delays) == 2


def test_client_errors_are_not_retried() -> None:
    server = Server(httpx.Response(404, json={"error": {"message": "model 'x' not found"}}))
    error = failure(chat(server))
    assert (error.code, error.retryable) == ("generation_failed", False)
    assert "HTTP 404" in error.message and "not found" in error.message and len(server.requests) == 1


def test_a_server_without_json_mode_is_asked_again_without_it() -> None:
    refusal = httpx.Response(400, json={"error": {"message": "unknown field: response_format"}})
    server = Server(refusal, completion('{"a": 1}'), completion('{"b": 2}'))
    client = chat(server)
    assert client.complete_json("s", "u") == {"a": 1}
    assert client.complete_json("s", "u") == {"b": 2}
    sent = [json.loads(r.content) for r in server.requests]
    assert ["response_format" in body for body in sent] == [True, False, False]


def test_read_timeout_is_a_retryable_timeout_not_retried_here() -> None:
    server = Server(httpx.ReadTimeout("timed out"))
    error = failure(chat(server, timeout_s=0.5))
    assert (error.code, error.retryable) == ("generation_timeout", True)
    assert len(server.requests) == 1


def test_connect_timeout_is_retried_then_reported() -> None:
    server = Server(httpx.ConnectTimeout("connect timed out"))
    error = failure(chat(server, max_retries=1))
    assert error.code == "generation_timeout" and len(server.requests) == 2


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(200, text="<html>gateway</html>"),
        httpx.Response(200, json={"id": "x"}),
        httpx.Response(200, json={"choices": []}),
        httpx.Response(200, json={"choices": [{"message": {"role": "assistant"}}]}),
        completion("I could not find any facts."),
        completion('{"facts": [ {"text": "unterminated'),
        completion('["a list", "not an object"]'),
    ],
)
def test_malformed_replies_are_bad_responses(reply: httpx.Response) -> None:
    server = Server(reply)
    error = failure(chat(server))
    assert (error.code, error.retryable) == ("bad_response", False)
    assert len(server.requests) == 1


def test_a_reply_cut_off_at_the_token_limit_says_so() -> None:
    error = failure(chat(Server(completion('{"facts": [{"text": "Bob', finish="length"))))
    assert error.code == "bad_response" and "token limit" in error.message


def test_an_error_object_in_a_200_is_a_generation_failure() -> None:
    server = Server(httpx.Response(200, json={"error": {"message": "context length exceeded"}}))
    error = failure(chat(server))
    assert error.code == "generation_failed" and "context length exceeded" in error.message


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {SECRET}"}}),
        httpx.Response(500, text=f"upstream rejected Authorization: Bearer {SECRET}"),
        httpx.Response(200, json={"error": {"message": f"bad key {SECRET}"}}),
        httpx.Response(401, json={"error": {"message": f"Bad key: {SECRET[:10]}****{SECRET[-6:]}"}}),
        httpx.Response(403, text=f"no such key {SECRET.upper()}"),
        httpx.ConnectError(f"refused while sending Bearer {SECRET}"),
        httpx.ReadTimeout(f"timed out for Bearer {SECRET}"),
    ],
)
def test_errors_never_carry_the_api_key(reply: httpx.Response | Exception) -> None:
    error = failure(chat(Server(reply), max_retries=0))
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    # nothing chained to it either: an httpx exception would hold the request and its headers
    assert chain == [error]
    assert SECRET not in str(error) and SECRET not in repr(error)
    assert not holds_secret(str(error), [SECRET]), str(error)  # no part of it, in any case


def test_parse_json_object_prefers_the_whole_text_and_rejects_non_objects() -> None:
    assert parse_json_object('{"a": "```x```"}') == {"a": "```x```"}
    assert parse_json_object("no json here") is None
    assert parse_json_object("[1, 2]") is None


@pytest.mark.parametrize(
    "exc",
    [
        httpx.LocalProtocolError("Illegal header value b'Bearer sk-proj-SUPERSECRETkey1234\\n'"),
        httpx.RemoteProtocolError("peer closed: Bearer sk-proj-SUPERSECRETkey1234"),
    ],
)
def test_a_transport_failure_names_its_kind_never_its_text(exc: httpx.HTTPError) -> None:
    """httpx quotes the request's header in some of its errors: the API key. The error (shown to
    whoever asked, kept on a failed job) names the failure's kind only."""
    error = failure(chat(Server(exc, exc, exc, exc), Sleeps()))
    assert type(exc).__name__ in error.message and "SUPERSECRET" not in error.message
