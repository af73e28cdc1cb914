"""The MCP transports fuzzed below the client: JSON-RPC envelopes with any id, method, version and
params (batches and notifications too) and bodies that are no JSON-RPC at all.

- Over HTTP, with the headers a client sends (accept, content type, protocol version, session id,
  credentials) in every variant, to every surface's path and paths beneath it of any characters,
  on a live server open on loopback and on one that wants a credential: the answer is the transport's own, a
  status under 500 and a JSON body that is a JSON-RPC response or error; nothing is logged as an
  error, and every endpoint still initializes afterwards.
- Over stdio (`cairn mcp`, a line each): nothing but JSON-RPC on stdout, a ping sent after each
  line still answered, no traceback on stderr, and a clean exit when the client leaves.

CAIRN_FUZZ_EXAMPLES sets the examples per path (default 15) for a longer hunt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.entrypoints.mcp.registry import SURFACES, http_paths
from tests.integration.mcp.conftest import LiveServer, start_server
from tests.integration.mcp.test_stdio_bad_lines import StdioProcess
from tests.integration.mcp.test_transport import INIT
from tests.support.fuzzing import EXAMPLES, ErrorLog, errors_logged, fixed
from tests.support.schema_args import NASTY, json_values

PATHS = tuple(path for surface in SURFACES for path in http_paths(surface))
METHODS = (
    "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
    "resources/templates/list", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
    "notifications/initialized", "notifications/cancelled", "notifications/progress",
    "notifications/roots/list_changed", "sampling/createMessage", "", "tools/", "rpc.discover",
)  # fmt: skip
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01", "", "latest")

ids = (
    st.none() | st.integers(-(2**70), 2**70) | st.text(max_size=10) | st.floats(allow_nan=False) | json_values
)


def _params() -> st.SearchStrategy[Any]:
    call = st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(("memory_search", "brain_search", "remember", "nope", ""))
            | st.text(max_size=8),
            "arguments": json_values,
            "_meta": st.dictionaries(
                st.sampled_from(("progressToken", "x")), st.integers() | st.text(max_size=5), max_size=2
            ),
            "protocolVersion": st.sampled_from(VERSIONS),
            "capabilities": json_values,
            "clientInfo": json_values,
            "cursor": st.sampled_from(NASTY) | st.text(max_size=10),
            "uri": st.sampled_from(NASTY),
            "level": st.sampled_from(("debug", "emergency", "loud")),
        },
    )
    return call | json_values


def _message() -> st.SearchStrategy[Any]:
    envelope = st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.sampled_from(("2.0", "1.0", "2", None)) | json_values,
            "id": ids,
            "method": st.sampled_from(METHODS) | st.text(max_size=12) | json_values,
            "params": _params(),
            "result": json_values,
            "error": json_values,
        },
    )
    return envelope | st.lists(envelope, max_size=3) | json_values


TOKEN = "envelope-fuzz-static-token-0123456789"
RAW = (b"", b"{", b"\xff\xfe", b"[]", b"[" * 5000, b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 2, b"\x00")


def _body() -> st.SearchStrategy[bytes]:
    return _message().map(lambda m: json.dumps(m).encode()) | st.sampled_from(RAW)


def _headers() -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "accept": st.sampled_from(
                (
                    "application/json, text/event-stream",
                    "application/json",
                    "text/event-stream",
                    "*/*",
                    "text/html",
                )
            ),
            "content-type": st.sampled_from(
                (
                    "application/json",
                    "application/json; charset=latin-1",
                    "APPLICATION/JSON",
                    "text/plain",
                    "multipart/form-data",
                )
            ),
            "mcp-protocol-version": st.sampled_from(VERSIONS),
            "mcp-session-id": st.sampled_from(("abc", "0" * 200, "a b", "%C3%A9")),
            "last-event-id": st.sampled_from(("1", "x")),
            "authorization": st.sampled_from((f"Bearer {TOKEN}", "Bearer wrong", "Basic eA==", "Bearer")),
        },
    )


@pytest.fixture
def errors() -> Iterator[ErrorLog]:
    with errors_logged("cairn", "mcp", "uvicorn.error", "starlette") as log:
        yield log


def _answered(response: httpx.Response) -> None:
    """A JSON answer is JSON-RPC: a response or error (one, or a list), or an empty batch's nothing;
    a refused credential is answered as OAuth answers (RFC 6750: a challenge and an `error`)."""
    if not response.content or not response.headers.get("content-type", "").startswith("application/json"):
        return
    body = response.json()
    if response.status_code in (401, 403):
        assert (
            response.headers.get("www-authenticate", "").startswith("Bearer") or response.status_code == 403
        )
        assert isinstance(body.get("error"), str), body
        return
    for message in body if isinstance(body, list) else [body]:
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", body
        assert ("result" in message) != ("error" in message), body


def _client(live: LiveServer) -> httpx.Client:
    """A connection per request: after a 500 the server closes its connection, and a reused one
    would fail the next request by chance rather than by what it sent."""
    return httpx.Client(base_url=live.base, timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def _paths(paths: tuple[str, ...]) -> st.SearchStrategy[str]:
    """A surface's path, or one beneath it of any characters (percent-encoded, as a client sends)."""
    beneath = st.tuples(st.sampled_from(paths), st.text(min_size=1, max_size=12)).map(
        lambda drawn: drawn[0].rstrip("/") + "/" + quote(drawn[1], safe="")
    )
    return st.sampled_from(paths) | beneath


def _fuzz(client: httpx.Client, paths: tuple[str, ...], errors: ErrorLog) -> None:
    @fixed(EXAMPLES * len(paths))
    @given(
        _paths(paths),
        st.sampled_from(("POST",) * 6 + ("GET", "DELETE", "PUT", "OPTIONS")),
        _body(),
        _headers(),
    )
    def call(path: str, method: str, body: bytes, headers: dict[str, str]) -> None:
        errors.seen.clear()
        try:
            response = client.request(method, path, content=body, headers=headers)
        except httpx.TransportError as exc:  # the server dropped the connection
            raise AssertionError(f"{method} {path} {headers} {body!r:.300}: {exc!r}") from exc
        shown = f"{method} {path} {headers} {body!r:.300}: {response.status_code} {response.text:.300}"
        assert response.status_code < 500, shown
        assert not errors.seen, f"{shown}: {errors.seen}"
        if method == "POST" and response.content:  # a refusal too is JSON-RPC, never plain text
            assert response.headers.get("content-type", "").startswith(
                ("application/json", "text/event-stream")
            ), shown
        _answered(response)

    call()


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[LiveServer]:
    """A server that wants a credential (its static token). The fuzz sends wrong ones from this one
    address, which would have the right one refused unchecked afterwards (auth/test_failed_sign_ins.py)."""
    yield from start_server(tmp_path, token=TOKEN, auth_failures_per_min=0)


@pytest.mark.parametrize("server", ["live", "guarded"])
def test_no_request_breaks_an_endpoint(server: str, errors: ErrorLog, request: pytest.FixtureRequest) -> None:
    served: LiveServer = request.getfixturevalue(server)
    credential = {"authorization": f"Bearer {TOKEN}"} if server == "guarded" else {}
    with _client(served) as client:
        _fuzz(client, PATHS, errors)
        for path in PATHS:  # still serving
            headers = {"accept": "application/json, text/event-stream", **credential}
            response = client.post(path, json=INIT, headers=headers)
            assert response.status_code == 200 and "result" in response.json(), path


def test_an_endpoint_that_fails_is_caught(
    live: LiveServer, errors: ErrorLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("cairn.entrypoints.mcp.http._as_json", fail)  # every POST reaches it
    with (
        _client(live) as client,
        pytest.raises(AssertionError, match=": 500 "),
    ):
        _fuzz(client, PATHS[:1], errors)


def test_no_line_breaks_stdio(tmp_path: Path) -> None:
    server = StdioProcess(tmp_path / "data")
    try:
        server.request(0, "initialize", INIT["params"])
        assert server.next()["id"] == 0
        probes = iter(range(10**6, 2 * 10**6))

        @fixed(EXAMPLES * 4)
        @given(_body().filter(lambda b: b"\n" not in b and b"\r" not in b))
        def line(body: bytes) -> None:
            probe = next(probes)
            server.send(body)
            server.request(probe, "ping")
            while (answer := server.next()).get("id") != probe:  # next() fails on anything but JSON-RPC
                assert ("result" in answer) != ("error" in answer) or "method" in answer, answer
            assert answer == {"jsonrpc": "2.0", "id": probe, "result": {}}, body

        line()
    finally:
        code = server.close() if server.process.poll() is None else server.process.returncode
    assert code == 0, server.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-2000:]
