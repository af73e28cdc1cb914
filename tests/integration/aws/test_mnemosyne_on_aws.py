"""The Mnemosyne surface (/mcp/mnemosyne/) on the AWS stack (tests/support/aws_stack.py): libraries
and collections on DynamoDB, item bytes on S3 (moto), chunks on OpenSearchChunkIndex over the fake
cluster, concept links on DynamoDB; a large item queued through the ingest state machine (Step
Functions under moto) is listed queued and never found until its finalize step commits it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.auth import access
from cairn.auth.principal import ADMIN, SCOPES, Principal, Via
from cairn.domain.models import JobStatus
from cairn.services.mnemosyne.libraries import Library
from tests.events.apigw import body_of, http_event
from tests.support.aws_stack import CTX, MCP_HEADERS, Stack, aws_stack, mcp_client

PATH = "/mcp/mnemosyne/"
NOVEL = (
    "# Chapter One\n\nElizabeth Bennet walked the three miles to Netherfield Park in the rain. Mr. Darcy "
    "watched from the window."
)
PADDING = "The Bennet sisters argued at Longbourn about bonnets and officers. " * 60


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with aws_stack(tmp_path, monkeypatch, key_name="mnemosyne") as built:
        yield built


def austen(stack: Stack) -> Library:
    """A fiction library of the API key's tenant (acme), as its admin would make it."""
    c = stack.core
    with access.acting_as(Principal("acme", "admin", frozenset(SCOPES), Via.jwt), ADMIN):
        return c.libraries.describe(
            c.brains.create("Austen", slug="austen", visibility="tenant").id, library_type="fiction"
        )


def answer(response: dict[str, Any]) -> Any:
    assert "result" in response, response
    result = response["result"]
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


def test_libraries_search_chunks_and_health_on_dynamodb_s3_and_opensearch(stack: Stack) -> None:
    c = stack.core
    novels = austen(stack)
    series = c.libraries.create_collection(novels, "Pride and Prejudice")
    c.ingest.ingest_bytes(novels.brain, NOVEL.encode(), name="c1.md", path=f"{series.folder}/c1.md")

    m = mcp_client(stack, PATH)
    libraries = answer(m("list_libraries", {}))["libraries"]
    collections = answer(m("list_collections", {"library_uid": novels.uid}))["collections"]
    items = answer(m("list_items", {"collection_uid": series.uid}))["items"]
    graph = answer(m("search", {"query": "Netherfield Park", "search_types": ["graph"]}))
    fused = answer(m("search", {"query": "Netherfield Park rain", "collection_uid": series.uid}))
    chunk = answer(m("get_chunk", {"chunk_uid": fused["candidates"][0]["chunk_uid"]}))
    health = answer(m("get_health", {}))

    assert [(lib["name"], lib["library_type"]) for lib in libraries] == [("Austen", "fiction")]
    assert [col["name"] for col in collections] == ["Pride and Prejudice"]
    assert [(i["title"], i["embedding_status"]) for i in items] == [("Chapter One", "completed")]
    assert [x["source"] for x in graph["candidates"]] == ["graph"]
    assert fused["candidates"][0]["item_title"] == "Chapter One"
    assert "Netherfield Park" in chunk["text"] and chunk["library_type"] == "fiction"
    assert set(health["checks"]) == {"neo4j", "s3", "embedding"}
    assert health["status"] == "ok"
    assert "cairn-jobs" not in json.dumps(health)


def test_a_queued_item_on_step_functions_is_invisible_until_finalize(stack: Stack) -> None:
    c = stack.core
    novels = austen(stack)
    c.ingest.queue_above_bytes = 1000
    queued = c.ingest.ingest_bytes(
        novels.brain, (NOVEL + "\n\n" + PADDING).encode(), name="long.md", path="long.md"
    )
    m = mcp_client(stack, PATH)

    def status() -> list[str]:
        return [i["embedding_status"] for i in answer(m("list_items", {}))["items"]]

    def found() -> list[str]:
        result = answer(m("search", {"query": "Netherfield Park", "search_types": ["fulltext", "graph"]}))
        return [x["item_uid"] for x in result["candidates"]]

    # Step Functions may already be running its first steps: queued or processing, never found.
    assert queued.status == "queued" and status()[0] in ("queued", "processing") and found() == []
    c.jobs.run_pending()
    job = c.jobs.status(queued.job_id or "")
    assert job.status is JobStatus.completed, job.error
    steps = stack.steps()
    assert steps[:4] == ["begin", "validate", "extract", "chunk"] and steps[-1] == "finalize"
    assert status() == ["completed"] and found() == [queued.document_id]


def test_without_a_credential_only_get_health_answers_through_the_api_function(stack: Stack) -> None:
    def call(tool: str) -> dict[str, Any]:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {}},
        }
        headers = {**MCP_HEADERS, "mcp-protocol-version": "2025-06-18"}
        event = http_event("POST", PATH, body=json.dumps(message), headers=headers, anonymous=True)
        response: dict[str, Any] = stack.api(event, CTX)
        return response

    health, listed = call("get_health"), call("list_libraries")
    assert health["statusCode"] == 200, body_of(health)
    answered = json.loads(body_of(health))["result"]
    assert not answered.get("isError") and json.loads(answered["content"][0]["text"])["status"] == "ok"
    assert listed["statusCode"] == 401  # asked to sign in, as on every endpoint
    challenge = {k.lower(): v for k, v in listed["headers"].items()}["www-authenticate"]
    assert challenge.startswith('Bearer resource_metadata="') and challenge.endswith('/mcp/mnemosyne"')


def test_a_queued_document_captions_the_images_it_shows(stack: Stack) -> None:
    import io

    from PIL import Image

    from cairn.services.mnemosyne.library_search import SearchRequest

    c = stack.core
    library = austen(stack)
    png = io.BytesIO()
    Image.new("RGB", (4, 4), "white").save(png, format="PNG")
    c.ingest.ingest_bytes(library.brain, png.getvalue(), name="plate-7.png", path="plates/plate-7.png")
    c.ingest.queue_above_bytes = 1000
    doc = f"# Letters\n\n![A heron on the weir at Pemberley](../plates/plate-7.png)\n\n{PADDING}"
    queued = c.ingest.ingest_bytes(library.brain, doc.encode(), name="letters.md", path="notes/letters.md")
    assert queued.status == "queued"
    c.jobs.run_pending()

    assert c.jobs.status(queued.job_id or "").status is JobStatus.completed
    letters = c.documents.get(library.brain, "notes/letters.md")
    assert letters.metadata.get("image_count") == 1
    found = c.library_search.search(
        SearchRequest("heron weir", [c.libraries.library(library.uid)], rerank=False)
    )
    assert [i.document.path for i in found.images] == ["plates/plate-7.png"]
    assert "A heron on the weir at Pemberley" in found.images[0].chunk.text
