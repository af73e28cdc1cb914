"""An issuer's JWKS endpoint on 127.0.0.1 (http.server in a thread), started and stopped by the test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JWKS_PATH = "/.well-known/jwks.json"


class JwksServer:
    """Serves `document` at JWKS_PATH with `status`; counts the requests that reached it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.status = 200
        self.requests = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}{JWKS_PATH}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

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
