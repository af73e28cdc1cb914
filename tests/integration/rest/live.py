"""A real uvicorn server on a free 127.0.0.1 port, run in a background thread, and an SSE reader."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    # proto IPPROTO_TCP, as `cairn serve` binds it (getaddrinfo's): only then does asyncio set TCP_NODELAY
    # on the connections it accepts; with proto 0 each answer on a kept-alive connection waited ~40 ms
    # for the client's delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=3)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass
class Frame:
    id: int
    event: str
    data: str


class SseReader:
    """Parses `id:`/`event:`/`data:` lines into frames; comment lines are skipped."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines

    def next(self) -> Frame:
        fields: dict[str, list[str]] = {}
        for line in self._lines:
            if line == "":
                if fields:
                    return Frame(int(fields["id"][0]), fields["event"][0], "\n".join(fields.get("data", [])))
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value.removeprefix(" "))
        raise EOFError("stream ended")
