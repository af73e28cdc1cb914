"""memory_search over MCP (the fakes) and REST search (the embedded store) read the Jeffs Brain
query language: a NOT keeps its documents out of the answer, a phrase and AND narrow the keyword
leg, a prefix finds the words it starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, ok
from tests.support.shapes import served

pytestmark = pytest.mark.anyio

NOTES = {  # a folder each: notes of one folder lend each other context words
    "k8s/steps.md": "Kubernetes rollout steps for the billing cluster.",
    "manual/deploy.md": "Deploy the billing service by hand with rsync.",
    "office/move.md": "The New York office moved to a new floor.",
    "team/york.md": "York is new to the team this spring.",
}


def keyword(hits: list[dict[str, Any]]) -> list[str]:
    """The paths the keyword leg found, sorted."""
    return sorted(h["path"] for h in hits if h["component_scores"]["bm25_rank"] is not None)


async def test_memory_search_speaks_the_query_language(live: LiveServer) -> None:
    c = live.container
    brain = c.brains.create("Notes", slug="notes")
    for path, text in NOTES.items():
        c.documents.write(brain, path, text.encode())

    async def hits(query: str) -> list[dict[str, Any]]:
        async with Client(live.url) as client:
            found = ok(
                await client.call_tool("memory_search", {"query": query, "brain": "notes", "top_k": 10})
            )
        return list(found["hits"])

    excluded = await hits("billing NOT kubernetes")
    assert excluded and "k8s/steps.md" not in [h["path"] for h in excluded]
    assert keyword(excluded) == ["manual/deploy.md"]
    assert "k8s/steps.md" in [h["path"] for h in await hits("billing not kubernetes")]  # a plain question
    assert keyword(await hits('"new york"')) == ["office/move.md"]
    assert keyword(await hits("new york")) == ["office/move.md", "team/york.md"]
    assert keyword(await hits("york AND spring")) == ["team/york.md"]
    assert keyword(await hits("kube*")) == ["k8s/steps.md"]


def test_rest_search_speaks_the_query_language_on_the_embedded_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with served("embedded", request, tmp_path) as (c, client):
        brain = c.brains.create("Notes", slug="notes")
        for path, text in NOTES.items():
            c.documents.write(brain, path, text.encode())

        def hits(query: str) -> list[dict[str, Any]]:
            answer = client.post("/v1/brains/notes/search", json={"query": query, "top_k": 10})
            assert answer.status_code == 200, answer.text
            return list(answer.json()["hits"])

        excluded = hits("billing NOT kube*")
        assert excluded and "k8s/steps.md" not in [h["path"] for h in excluded]
        assert keyword(excluded) == ["manual/deploy.md"]
        assert keyword(hits('"new york" OR rsync')) == ["manual/deploy.md", "office/move.md"]
        assert keyword(hits("billing AND cluster")) == ["k8s/steps.md"]
        assert keyword(hits("kube*")) == ["k8s/steps.md"]


async def test_zengram_search_reads_a_query_as_plain_words(live: LiveServer) -> None:
    """zengram's protocol has no query language: a capital NOT or a quote there is a word."""
    async with Client(f"{live.base}/mcp/zengram") as z:
        for content in ("Kubernetes runs the billing cluster", "Billing invoices go out monthly"):
            await z.call_tool("brain_store", {"type": "fact", "content": content})
        found = await z.call_tool("brain_search", {"query": "billing NOT kubernetes", "format": "full"})
    texts = [r["text"] for r in json.loads(found.content[0].text)["results"]]  # type: ignore[union-attr]
    assert "Kubernetes runs the billing cluster" in texts
