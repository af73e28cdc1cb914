"""`cairn serve` closes a connection whose request head does not arrive in time (entrypoints/cli/
request_heads.py): one that sends nothing, one that sends its head a byte at a time, and one that
starts its next request that way after an answer; a request that came in time is answered
however long it takes."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.entrypoints.cli import request_heads
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.support.serve_config import served_as_cairn_serve

HEALTH = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture
def port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(request_heads, "HEAD_TIMEOUT_S", 0.5)
    container = fake_container(tmp_path)
    container.brains.create("Notes", slug="notes")
    search = container.search.search

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.5)  # three head deadlines
        return search(*args, **kwargs)

    monkeypatch.setattr(container.search, "search", slow)
    with served_as_cairn_serve(create_app(container), Settings(data_dir=tmp_path / "unused")) as port:
        yield port


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.settimeout(5)
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closed the connection within `seconds` (reading what it sent first)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            return False
    return False


def _status(sock: socket.socket) -> bytes:
    """The status line of the next whole response (its body read past by its length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head.split(b"\r\n")[0]


def _trickled(sock: socket.socket, data: bytes, seconds: float) -> bool:
    """Whether the server closed the connection while `data` was sent a byte each 50 ms."""
    for byte in data[: int(seconds / 0.05)]:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return True
        if _closed_within(sock, 0.05):
            return True
    return False


def test_a_connection_that_sends_nothing_is_closed(port: int) -> None:
    with _connect(port) as sock:
        assert _closed_within(sock, 3)


def test_a_head_sent_a_byte_at_a_time_is_cut_off(port: int) -> None:
    with _connect(port) as sock:
        assert _trickled(sock, HEALTH * 4, 3)


def test_the_next_head_after_an_answer_has_a_deadline_too(port: int) -> None:
    with _connect(port) as sock:
        sock.sendall(HEALTH)
        assert _status(sock) == b"HTTP/1.1 200 OK"
        assert _trickled(sock, HEALTH * 4, 3)


def test_a_request_that_came_in_time_is_answered_however_long_it_takes(port: int) -> None:
    body = b'{"query": "kettle"}'
    request = (
        b"POST /v1/brains/notes/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    with _connect(port) as sock:
        sock.sendall(request)
        answer = _status(sock)
        sock.sendall(HEALTH)  # and the connection is kept for the next request
        again = _status(sock)
    assert answer == again == b"HTTP/1.1 200 OK"


def test_an_idle_connection_outlives_the_clients_own_keep_alive(tmp_path: Path) -> None:
    """A client's pool gives up an idle connection after a few seconds (httpx's 5 s): the server
    keeps it longer, so a request never meets the server closing the connection it reuses."""
    import httpx

    idle = httpx.Limits().keepalive_expiry
    assert idle is not None
    container = fake_container(tmp_path)
    app, settings = create_app(container), Settings(data_dir=tmp_path / "unused")
    with served_as_cairn_serve(app, settings) as port, _connect(port) as sock:
        sock.sendall(HEALTH)
        assert _status(sock) == b"HTTP/1.1 200 OK"
        assert not _closed_within(sock, idle + 1)
        sock.sendall(HEALTH)
        assert _status(sock) == b"HTTP/1.1 200 OK"
