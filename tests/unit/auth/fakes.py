"""An issuer's JWKS endpoint behind httpx.MockTransport (no sockets), and a clock the test moves."""

from __future__ import annotations

from typing import Any

import httpx

from cairn.auth.jwks import JwksCache

JWKS_URL = "https://alice:s3cret@issuer.example.test/pool/.well-known/jwks.json?api_key=k3y"


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeIssuer:
    """Serves `document` with `status`; `fail_with` raises instead; counts requests."""

    def __init__(self, document: Any) -> None:
        self.document = document
        self.status = 200
        self.body: bytes | None = None
        self.fail_with: Exception | None = None
        self.requests = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.fail_with is not None:
            raise self.fail_with
        if self.body is not None:
            return httpx.Response(self.status, content=self.body)
        return httpx.Response(self.status, json=self.document)

    def cache(self, clock: FakeClock, **options: Any) -> JwksCache:
        http = httpx.Client(transport=httpx.MockTransport(self.handle))
        return JwksCache(JWKS_URL, http, clock=clock, **options)
