"""An issuer's JWKS endpoint on 127.0.0.1 (http.server in a thread), started and stopped by the test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback import Loopback

JWKS_PATH = "/.well-known/jwks.json"


class JwksServer:
    """Serves `document` at JWKS_PATH with `status`; counts the requests that reached it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.status = 200
        self.requests = 0
        self._lock = threading.Lock()
        self._server = Loopback(self._handler())
        self.start, self.stop = self._server.start, self._server.stop

    @property
    def url(self) -> str:
        return f"{self._server.base}{JWKS_PATH}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with server._lock:
                    server.requests += 1
                    status, document = server.status, server.document
                body = json.dumps(document).encode() if self.path == JWKS_PATH else b"{}"
                self.send_response(status if self.path == JWKS_PATH else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextmanager
def jwks_server(document: dict[str, Any]) -> Iterator[JwksServer]:
    server = JwksServer(document)
    server.start()
    try:
        yield server
    finally:
        server.stop()
