"""What authentication adds per request on the embedded server (cached JWKS).

Runs four servers on 127.0.0.1 (fake adapters, so the route itself costs little) and times
GET /v1/brains/{id} over one keep-alive connection: open (no authentication), a static token,
an API key, and an RS256 JWT verified against a JWKS served on loopback (fetched once, then
cached). Prints p50 / p95 per mode and the difference to open:

    python bench/auth_overhead.py [--n 2000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fakes.container import fake_container
from tests.integration.auth.jwks_server import jwks_server
from tests.integration.mcp.conftest import ServerThread
from tests.unit.auth.tokens import AUDIENCE, ISSUER, claims, jwks, rsa_key

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via


def timed(url: str, headers: dict[str, str], n: int) -> list[float]:
    with httpx.Client(headers=headers) as http:
        for _ in range(50):  # warm up: connection, JWKS fetch, caches
            http.get(url).raise_for_status()
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            http.get(url).raise_for_status()
            out.append((time.perf_counter() - t0) * 1000)
    return out


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    signer = rsa_key("k1")
    owner = Principal("local", "user-1", frozenset({READ, WRITE, ADMIN}), Via.jwt)  # every mode's tenant
    results: dict[str, list[float]] = {}
    with jwks_server(jwks(signer)) as keys:
        day = claims(now=time.time(), exp=int(time.time()) + 86400, tenant="local")
        modes = {
            "open": ({}, {}),
            "static token": ({"token": "t" * 32}, {"authorization": "Bearer " + "t" * 32}),
            "API key": ({"token": "unused-admin-token"}, None),
            "JWT (RS256)": (
                {"jwt_issuer": ISSUER, "jwt_jwks_url": keys.url, "jwt_audience": [AUDIENCE]},
                {"authorization": "Bearer " + signer.sign(day)},
            ),
        }
        for name, (settings, headers) in modes.items():
            container = fake_container(Path(tempfile.mkdtemp()), rate_limit_per_s=0, **settings)
            with access.acting_as(owner, ADMIN):
                brain = container.brains.create("Bench", visibility="tenant")
            if headers is None:
                key = container.keys.create(name="bench", tenant="local", scopes=[READ])
                headers = {"authorization": f"Bearer {key.plaintext}"}
            with ServerThread(container) as st:
                results[name] = timed(f"http://127.0.0.1:{st.port}/v1/brains/{brain.id}", headers, args.n)
    base = results["open"]
    print(f"GET /v1/brains/{{id}} on the embedded server, {args.n} requests each (ms)")
    for name, values in results.items():
        extra = p95(values) - p95(base)
        p50 = statistics.median(values)
        print(f"  {name:<14} p50 {p50:6.2f}  p95 {p95(values):6.2f}  p95 - open {extra:+6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
