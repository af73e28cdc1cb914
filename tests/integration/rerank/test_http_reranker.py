"""HttpReranker against a fake `/v1/rerank` server on 127.0.0.1: request, reply shapes, retries,
timeouts, malformed replies, and no document text or API key in errors or logs.

The fake is a stdlib ThreadingHTTPServer on a free loopback port, answering each request with the
next scripted reply (the last one repeats); each test starts and stops its own.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from cairn.adapters.local.http_reranker import HttpReranker
from cairn.domain.text import holds_secret
from cairn.ports.reranker import Ranked, RerankError
from tests.support.loopback import Loopback

SECRET = "sk-rerank-5ecret-do-not-leak"
QUERY = "how long did the 10k route take"
DOCS = [
    "Green tea is best steeped at eighty degrees for three minutes.",
    "I finished the 10k route along the river in under 55 minutes.",
    "The quarterly budget review moved to the second Thursday of May.",
]


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    """JSON-encoded unless bytes."""
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeRerankServer:
    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.seen: list[Seen] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length))
                with fake._lock:
                    fake.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    reply = fake.replies[min(len(fake.seen), len(fake.replies)) - 1]
                if reply.stall:
                    fake.release.wait(30)
                    return
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client hung up first

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = Loopback(Handler)
        self.port = self.server.port

    @property
    def base_url(self) -> str:
        return f"{self.server.base}/v1"

    def bodies(self) -> list[dict[str, Any]]:
        return [s.body for s in self.seen]


@contextmanager
def serving(*replies: Reply) -> Iterator[FakeRerankServer]:
    fake = FakeRerankServer(*replies)
    fake.server.start()
    try:
        yield fake
    finally:
        fake.release.set()
        fake.server.stop()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def reranker(fake_url: str, sleeps: list[float], **kwargs: Any) -> HttpReranker:
    kwargs.setdefault("timeout_s", 5.0)
    kwargs.setdefault("max_retries", 2)
    return HttpReranker(fake_url, kwargs.pop("model", "bge-reranker"), sleep=sleeps.append, **kwargs)


def results(*pairs: tuple[int, float], key: str = "relevance_score") -> list[dict[str, Any]]:
    return [{"index": i, key: s} for i, s in pairs]


GOOD = Reply(body={"results": results((2, 0.1), (1, 0.93), (0, 0.2))})
BEST_FIRST = [Ranked(1, 0.93), Ranked(0, 0.2), Ranked(2, 0.1)]


def failure(fake_url: str, sleeps: list[float], **kwargs: Any) -> RerankError:
    top_n = kwargs.pop("top_n", None)
    with pytest.raises(RerankError) as caught:
        reranker(fake_url, sleeps, **kwargs).rerank(QUERY, DOCS, top_n=top_n)
    return caught.value


def test_posts_the_common_rerank_request_and_returns_documents_best_first(sleeps: list[float]) -> None:
    with serving(GOOD) as fake:
        ranked = reranker(fake.base_url, sleeps).rerank(QUERY, DOCS)
    assert ranked == BEST_FIRST
    (seen,) = fake.seen
    assert seen.path == "/v1/rerank"
    assert seen.body == {
        "model": "bge-reranker",
        "query": QUERY,
        "documents": DOCS,
        "top_n": 3,
        "return_documents": False,
    }
    assert "authorization" not in seen.headers


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            {"id": "r-1", "results": results((1, 0.93), (0, 0.2), (2, 0.1)), "meta": {"billed_units": {}}},
            id="cohere",
        ),
        pytest.param(
            {
                "model": "jina-reranker-v2",
                "usage": {"total_tokens": 42},
                "results": [
                    {"index": 1, "document": {"text": DOCS[1]}, "relevance_score": 0.93},
                    {"index": 0, "document": {"text": DOCS[0]}, "relevance_score": 0.2},
                    {"index": 2, "document": {"text": DOCS[2]}, "relevance_score": 0.1},
                ],
            },
            id="jina",
        ),
        pytest.param(
            {"model": "m", "results": results((0, 0.2), (2, 0.1), (1, 0.93), key="score")}, id="score"
        ),
        pytest.param(results((1, 0.93), (2, 0.1), (0, 0.2), key="score"), id="tei-bare-list"),
    ],
)
def test_reads_each_servers_reply_shape(body: Any, sleeps: list[float]) -> None:
    with serving(Reply(body=body)) as fake:
        assert reranker(fake.base_url, sleeps).rerank(QUERY, DOCS) == BEST_FIRST


def test_top_n_is_sent_and_a_server_that_ignores_it_is_cut_to_it(sleeps: list[float]) -> None:
    honours = Reply(body={"results": results((1, 0.93), (0, 0.2))})
    with serving(honours, GOOD) as fake:
        rr = reranker(fake.base_url, sleeps)
        assert rr.rerank(QUERY, DOCS, top_n=2) == BEST_FIRST[:2]
        assert rr.rerank(QUERY, DOCS, top_n=2) == BEST_FIRST[:2]  # GOOD returns all three
        assert rr.rerank(QUERY, DOCS, top_n=10) == BEST_FIRST
    assert [b["top_n"] for b in fake.bodies()] == [2, 2, 3]


def test_instruction_is_sent_only_when_given(sleeps: list[float]) -> None:
    with serving(GOOD) as fake:
        rr = reranker(fake.base_url, sleeps)
        rr.rerank(QUERY, DOCS, instruction="Rank diary entries by how well they answer the question.")
        rr.rerank(QUERY, DOCS)
    with_it, without = fake.bodies()
    assert with_it["instruction"] == "Rank diary entries by how well they answer the question."
    assert "instruction" not in without


def test_sends_the_api_key_as_a_bearer_token(sleeps: list[float]) -> None:
    with serving(GOOD) as fake:
        reranker(fake.base_url, sleeps, api_key=SECRET).rerank(QUERY, DOCS)
    assert fake.seen[0].headers["authorization"] == f"Bearer {SECRET}"


def test_no_documents_makes_no_request_and_top_n_must_be_positive(sleeps: list[float]) -> None:
    with serving(GOOD) as fake:
        rr = reranker(fake.base_url, sleeps)
        assert rr.rerank(QUERY, []) == []
        with pytest.raises(ValueError):
            rr.rerank(QUERY, DOCS, top_n=0)
    assert fake.seen == []


def test_a_rate_limit_is_retried_after_the_servers_retry_after(sleeps: list[float]) -> None:
    limited = Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "1.5"})
    with serving(limited, GOOD) as fake:
        assert reranker(fake.base_url, sleeps).rerank(QUERY, DOCS) == BEST_FIRST
    assert len(fake.seen) == 2
    assert sleeps == [1.5]


def test_a_retry_after_given_as_an_http_date_is_honoured(sleeps: list[float]) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    with serving(Reply(503, {"error": {"message": "warming up"}}, {"Retry-After": when}), GOOD) as fake:
        assert reranker(fake.base_url, sleeps, max_wait_s=60).rerank(QUERY, DOCS) == BEST_FIRST
    assert len(sleeps) == 1 and 17 <= sleeps[0] <= 20


def test_server_errors_are_retried_then_rerank_failed(sleeps: list[float]) -> None:
    with serving(Reply(500, {"error": {"message": "CUDA out of memory"}})) as fake:
        error = failure(fake.base_url, sleeps, max_retries=2)
    assert error.code == "rerank_failed" and error.retryable
    assert "HTTP 500" in error.message and "CUDA out of memory" in error.message
    assert len(fake.seen) == 3 and len(sleeps) == 2
    assert error.__context__ is None and error.__cause__ is None  # no chain back to the request


def test_a_server_that_stalls_is_rerank_timeout_without_a_retry(sleeps: list[float]) -> None:
    with serving(Reply(stall=True)) as fake:
        error = failure(fake.base_url, sleeps, timeout_s=0.3)
    assert error.code == "rerank_timeout"
    assert len(fake.seen) == 1 and sleeps == []


def test_refused_credentials_are_rerank_unavailable_at_once(sleeps: list[float]) -> None:
    with serving(Reply(401, {"detail": "invalid api key"})) as fake:
        error = failure(fake.base_url, sleeps, api_key="wrong")
    assert error.code == "rerank_unavailable" and not error.retryable
    assert "HTTP 401" in error.message and "invalid api key" in error.message
    assert len(fake.seen) == 1


def test_a_refusal_echoing_part_of_the_key_says_nothing_of_it(sleeps: list[float]) -> None:
    key = "rk-live-0123456789abcdef"
    with serving(Reply(401, {"detail": f"unknown key {key[:12].upper()}...{key[-4:]}"})) as fake:
        error = failure(fake.base_url, sleeps, api_key=key)
    assert error.code == "rerank_unavailable" and "HTTP 401" in error.message
    assert not holds_secret(error.message, [key]) and "unknown key" not in error.message


def test_a_refusal_echoing_the_urls_user_and_password_says_nothing_of_them(sleeps: list[float]) -> None:
    """A user and password in the URL go as Basic credentials, which a server may echo."""
    basic = base64.b64encode(b"ruser:URL-PASSWORD-MARKER").decode()
    with serving(Reply(401, {"detail": f"Invalid credentials: Basic {basic}"})) as fake:
        url = fake.base_url.replace("http://", "http://ruser:URL-PASSWORD-MARKER@")
        error = failure(url, sleeps)
    assert fake.seen[0].headers["authorization"] == f"Basic {basic}"
    assert error.code == "rerank_unavailable" and "HTTP 401" in error.message
    assert basic not in error.message and "URL-PASSWORD-MARKER" not in error.message


def test_a_server_that_is_not_there_is_rerank_unavailable_after_retries(sleeps: list[float]) -> None:
    with socket.socket() as sock:  # a free port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = failure(f"http://127.0.0.1:{port}/v1", sleeps, max_retries=1)
    assert error.code == "rerank_unavailable"
    assert len(sleeps) == 1


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param(b"<html>oops</html>", "malformed JSON", id="not-json"),
        pytest.param({"error": "no results here"}, "without results", id="no-results"),
        pytest.param({"results": {"index": 0}}, "without a list of results", id="results-not-a-list"),
        pytest.param({"results": results((0, 0.5), (3, 0.9))}, "index 3, but 3 documents", id="out-of-range"),
        pytest.param({"results": results((0, 0.5), (-1, 0.9))}, "index -1", id="negative"),
        pytest.param({"results": results((1, 0.5), (1, 0.4))}, "two results for index 1", id="duplicate"),
        pytest.param({"results": [{"relevance_score": 0.3}]}, "without an integer index", id="no-index"),
        pytest.param({"results": [{"index": "0", "score": 0.3}]}, "without an integer index", id="index-str"),
        pytest.param({"results": [{"index": 0}]}, "without relevance_score or score", id="no-score"),
        pytest.param({"results": [{"index": 0, "score": "high"}]}, "not a finite number", id="score-str"),
    ],
)
def test_malformed_replies_are_rerank_bad_response(body: Any, words: str, sleeps: list[float]) -> None:
    with serving(Reply(body=body)) as fake:
        error = failure(fake.base_url, sleeps)
    assert error.code == "rerank_bad_response" and not error.retryable
    assert words in error.message
    assert len(fake.seen) == 1  # a bad reply is not asked for again


def test_a_servers_own_words_that_are_safe_are_kept(sleeps: list[float]) -> None:
    with serving(Reply(422, {"detail": "top_n must be at most 100 for this model"})) as fake:
        error = failure(fake.base_url, sleeps)
    assert error.code == "rerank_failed" and not error.retryable
    assert error.message.endswith("refused the request (HTTP 422): top_n must be at most 100 for this model")


@pytest.mark.parametrize("status", [400, 413, 500])
def test_errors_and_logs_never_carry_a_document_or_the_api_key(
    status: int, sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    # Given a server whose error echoes a document (quoted, unquoted, cut short), the query and the key
    echo = (
        f"bad input {DOCS[1]!r}; also {DOCS[2][:40]} for query {QUERY} "
        f"(Authorization: Bearer {SECRET}) {json.dumps(DOCS)}"
    )
    caplog.set_level(logging.DEBUG)
    with serving(Reply(status, {"error": {"message": echo}})) as fake:
        error = failure(fake.base_url, sleeps, api_key=SECRET, max_retries=1)
    shown = [error.message, str(error), repr(error), *(r.getMessage() for r in caplog.records)]
    for text in shown:
        assert SECRET not in text
        for doc in [*DOCS, QUERY]:
            assert doc not in text and doc[:16] not in text and doc[-16:] not in text
    assert f"HTTP {status}" in error.message  # the status still says what happened
