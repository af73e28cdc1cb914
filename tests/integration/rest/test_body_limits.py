"""Request bodies are capped before anything parses them: by Content-Length when there is one, by
counting as they stream when there is none (chunked), on every JSON route and on /mcp; the routes
with caps of their own keep them."""

from __future__ import annotations

import base64
import gzip
import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cairn.bootstrap import Container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.integration.rest.helpers import OCTET, docs_url
from tests.integration.rest.live import serve

MiB = 1024 * 1024
CAP = MiB
HUGE = 50_000_000
SEARCH = "/v1/brains/notes/search"


def _container(tmp_path: Path, **settings: Any) -> Container:
    container = fake_container(tmp_path, **settings)
    container.brains.create("Notes", slug="notes")
    return container


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[str]:
    """A live server whose JSON cap is 1 MiB, file uploads 64 KiB."""
    with serve(create_app(_container(tmp_path, max_json_body_bytes=CAP, max_file_bytes=64 * 1024))) as base:
        yield base


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def _head(port: int, target: str, framing: str, content_type: str = "application/json") -> bytes:
    lines = [f"POST {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Type: {content_type}", framing]
    if target.startswith("/mcp"):
        lines.append("Accept: application/json, text/event-stream")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before a response"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines)}
    while len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(65536)
    return int(status_line.split()[1]), headers, body


def _declared(base: str, target: str, length: int) -> tuple[int, dict[str, str], bytes]:
    """Announce `length` bytes, send none: only a server that refuses before reading answers."""
    port = _port(base)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_head(port, target, f"Content-Length: {length}"))
        return _response(sock)


def _chunked(base: str, target: str, total: int) -> tuple[int, tuple[int, dict[str, str], bytes]]:
    """Stream `total` bytes chunked, stopping as soon as a response arrives; returns the bytes sent."""
    port = _port(base)
    piece = b" " * 65536
    frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_head(port, target, "Transfer-Encoding: chunked"))
        while sent < total and not select.select([sock], [], [], 0)[0]:
            sock.sendall(frame)
            sent += len(piece)
        if sent >= total:
            sock.sendall(b"0\r\n\r\n")
        return sent, _response(sock)


def _problem(response: tuple[int, dict[str, str], bytes], status: int, code: str) -> dict[str, Any]:
    got, headers, body = response
    assert got == status, body[:300]
    assert headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = json.loads(body)
    assert problem["status"] == status and problem["code"] == code
    return problem


def test_a_declared_length_above_the_cap_is_refused_without_reading(capped: str) -> None:
    problem = _problem(_declared(capped, SEARCH, HUGE), 413, "payload_too_large")
    assert str(CAP) in problem["detail"]


def test_a_chunked_body_above_the_cap_is_refused_while_it_streams(capped: str) -> None:
    sent, response = _chunked(capped, SEARCH, HUGE)
    _problem(response, 413, "payload_too_large")
    # Answered once the cap was passed, not after the 50 MB (kernel buffers hold a few MB in flight).
    assert sent < HUGE // 4, sent


def test_mcp_bodies_are_capped_too(capped: str) -> None:
    for status, _, body in (_declared(capped, "/mcp", HUGE), _chunked(capped, "/mcp", HUGE)[1]):
        assert status == 413
        error = json.loads(body)
        assert error["jsonrpc"] == "2.0" and error["error"]["code"] == -32600


def test_bodies_under_the_cap_still_work(capped: str) -> None:
    with httpx.Client(base_url=capped, timeout=30) as http:
        found = http.post(SEARCH, json={"query": "kettle " * 500})
        assert found.status_code == 200
        streamed = http.post(
            SEARCH,
            content=iter([b'{"query": "kettle', b' cupboard"}']),  # no Content-Length: chunked
            headers={"Content-Type": "application/json"},
        )
        assert streamed.status_code == 200, streamed.text


def test_routes_with_caps_of_their_own_keep_them(capped: str) -> None:
    """Store writes (2 MiB) and batch-ops take more than the 1 MiB JSON cap; an upload above its
    own cap is still `file_too_large`."""
    big = b"x" * (CAP + MiB // 2)
    with httpx.Client(base_url=capped, timeout=30) as http:
        put = http.put(docs_url("notes"), params={"path": "big.md"}, content=big, headers=OCTET)
        assert put.status_code == 204, put.text
        op = {"type": "write", "path": "batch.md", "content_base64": base64.b64encode(big).decode()}
        batch = http.post(docs_url("notes", "/batch-ops"), json={"reason": "r", "ops": [op]})
        assert batch.status_code == 200, batch.text
        upload = http.post(docs_url("notes", "/ingest/file"), files={"file": ("a.md", b"x" * 200_000)})
        assert upload.status_code == 413 and upload.json()["code"] == "file_too_large"
        too_big = http.put(docs_url("notes"), params={"path": "b.md"}, content=big * 2, headers=OCTET)
        assert too_big.status_code == 413 and too_big.json()["code"] == "payload_too_large"


def test_the_default_cap_takes_the_largest_note_escaped_and_no_more(tmp_path: Path) -> None:
    """5,000,000 characters, each written as a 6-byte \\u escape by an ASCII-only JSON encoder."""
    assert Settings().json_body_limit == 6 * 5_000_000 + MiB
    body = json.dumps({"content": ("é" * 99 + "\n") * 50_000}).encode()  # ensure_ascii: 29.8 MB
    with serve(create_app(_container(tmp_path))) as base:
        created = httpx.post(
            f"{base}{docs_url('notes')}",
            content=body,
            headers={"Content-Type": "application/json"},
            timeout=60,
        )
        assert created.status_code == 201, created.text[:300]
        _problem(_declared(base, SEARCH, 6 * 5_000_000 + MiB + 1), 413, "payload_too_large")


def test_data_after_a_compressed_body_is_refused(capped: str) -> None:
    """zlib would keep whatever follows the stream in memory, and the body would be cut silently."""
    headers = {**OCTET, "Content-Encoding": "gzip"}
    trailing = gzip.compress(b"hello") + b"more bytes after the stream"
    with httpx.Client(base_url=capped, timeout=30) as http:
        response = http.put(docs_url("notes"), params={"path": "g.md"}, content=trailing, headers=headers)
        assert response.status_code == 400 and response.json()["code"] == "validation_error"
        assert http.head(docs_url("notes"), params={"path": "g.md"}).status_code == 404
