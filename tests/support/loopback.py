"""A request handler served on 127.0.0.1 at a free port, in a thread, until the test stops it:
what every fake HTTP peer of the tests (model servers, re-rankers, JWKS, a Cognito pool, web pages)
runs on."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Loopback:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    @property
    def base(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)


@contextmanager
def loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The server's base URL while the block runs."""
    server = Loopback(handler)
    server.start()
    try:
        yield server.base
    finally:
        server.stop()
