"""Concurrent writers through the store protocol: no lost appends, no torn PUTs."""

from __future__ import annotations

import asyncio

import httpx

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from tests.integration.rest.helpers import OCTET, docs_url

WRITERS = 8


async def _gather(container: Container, requests: list[tuple[str, str, bytes]]) -> list[httpx.Response]:
    transport = httpx.ASGITransport(app=create_app(container))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        calls = [
            client.request(m, url, params={"path": "shared.md"}, content=data, headers=OCTET)
            for m, url, data in requests
        ]
        responses = await asyncio.gather(*calls)
        final = await client.get(docs_url("notes", "/read"), params={"path": "shared.md"})
    return [*responses, final]


def test_concurrent_appends_lose_nothing(container: Container, brain: Brain) -> None:
    # Given 8 writers appending distinct payloads to one path at the same time
    payloads = [f"<writer {i}: {'x' * 2000}>\n".encode() for i in range(WRITERS)]
    requests = [("POST", docs_url("notes", "/append"), p) for p in payloads]
    *responses, final = asyncio.run(_gather(container, requests))
    # Then every append succeeded and every payload is present exactly once
    assert [r.status_code for r in responses] == [204] * WRITERS
    content = final.content
    assert len(content) == sum(len(p) for p in payloads)
    assert all(content.count(p) == 1 for p in payloads)


def test_concurrent_puts_never_tear(container: Container, brain: Brain) -> None:
    # Given 8 writers replacing one path with distinct large bodies at the same time
    bodies = [bytes([65 + i]) * (512 * 1024) + f"\nwriter {i}\n".encode() for i in range(WRITERS)]
    requests = [("PUT", docs_url("notes"), b) for b in bodies]
    *responses, final = asyncio.run(_gather(container, requests))
    # Then the final content is exactly one writer's body
    assert [r.status_code for r in responses] == [204] * WRITERS
    assert final.content in bodies
