"""moto's HTTP server on 127.0.0.1 and a free port, for what the in-process `mock_aws` (it patches
botocore) never sees: a presigned POST from a plain HTTP client, a pool another process reaches."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from moto.server import ThreadedMotoServer

from tests.contract.aws_storage import fake_credentials


@contextmanager
def moto_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The server's URL while the block runs; its state is reset after (moto's is process-wide)."""
    fake_credentials(monkeypatch)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        yield endpoint
    finally:
        httpx.post(f"{endpoint}/moto-api/reset")
        server.stop()
