"""A loopback web server for URL-ingest tests: each path prefix answers its (status, body) as
markdown; any other path is a 404."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

from tests.support.loopback import loopback


@contextmanager
def serving(pages: Mapping[str, tuple[int, bytes]]) -> Iterator[str]:
    """The server's base URL (`http://127.0.0.1:<port>`) while the block runs."""

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = next(
                (answer for prefix, answer in pages.items() if self.path.startswith(prefix)), (404, b"")
            )
            self.send_response(status)
            self.send_header("Content-Type", "text/markdown")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with loopback(Pages) as base:
        yield base
