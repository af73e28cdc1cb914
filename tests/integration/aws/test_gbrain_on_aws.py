"""The gbrain surface (/mcp/gbrain) on the AWS stack (tests/support/aws_stack.py): MCP JSON-RPC in API
Gateway HTTP API v2 events to the API function, a Cairn API key as the bearer token, pages and
links on DynamoDB, page text and raw data on S3 (moto), chunks on OpenSearchChunkIndex over the
fake cluster."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.domain.errors import VersionConflict
from cairn.services.gbrain.pages import PageService
from tests.contract.aws_storage import BUCKET, serialized_moto
from tests.support.aws_stack import Stack, aws_stack, mcp_client, mcp_session, text_of

PATH = "/mcp/gbrain"
WRITERS = 8


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with aws_stack(tmp_path, monkeypatch, key_name="gbrain") as built:
        yield built


def page(title: str, body: str, **frontmatter: str) -> str:
    lines = [f"title: {title}", *(f"{k}: {v}" for k, v in frontmatter.items())]
    return "---\n" + "\n".join(lines) + f"\n---\n{body}\n"


def answer(response: dict[str, Any]) -> str:
    """The text of a successful call (gbrain answers one text block)."""
    assert "result" in response, response
    result = response["result"]
    assert not result.get("isError"), result
    value: str = result["content"][0]["text"]
    return value


def refusal(response: dict[str, Any]) -> tuple[int, str, Any]:
    """A refused call's JSON-RPC error: code, message, data (gbrain never answers isError)."""
    assert "error" in response, response
    error = response["error"]
    return error["code"], error["message"], error.get("data")


def test_put_with_occ_get_tags_raw_on_dynamodb_and_s3_and_memory_search_finds_the_page(
    stack: Stack,
) -> None:
    g = mcp_client(stack, PATH)
    alice = page("Alice", "Alice runs the anvil lab in Berlin.", type="person")
    created = answer(g("brain_put", {"slug": "people/alice", "content": alice}))
    exists = refusal(g("brain_put", {"slug": "people/alice", "content": "again"}))
    updated = answer(
        g(
            "brain_put",
            {"slug": "people/alice", "content": alice + "\nShe forges anvils.", "expected_version": 1},
        )
    )
    stale = refusal(g("brain_put", {"slug": "people/alice", "content": "stale", "expected_version": 1}))
    rendered = answer(g("brain_get", {"slug": "people/alice"}))
    tagged = text_of(g("brain_tags", {"slug": "people/alice", "add": ["founder", "lab"]})["result"])
    untagged = text_of(g("brain_tags", {"slug": "people/alice", "remove": ["lab"]})["result"])
    listed = text_of(g("brain_tags", {"slug": "people/alice"})["result"])
    first = text_of(g("brain_raw", {"slug": "people/alice", "source": "exa", "data": {"v": 1}})["result"])
    duplicate = refusal(g("brain_raw", {"slug": "people/alice", "source": "exa", "data": {"v": 2}}))
    replaced = text_of(
        g("brain_raw", {"slug": "people/alice", "source": "exa", "data": {"v": 3}, "overwrite": True})[
            "result"
        ]
    )

    assert created == "Created default::people/alice (version 1)"
    assert updated == "Updated default::people/alice (version 2)"
    assert exists[0] == -32009 and exists[2] == {"current_version": 1}
    assert stale == (-32009, "conflict: page updated elsewhere (current version: 2)", {"current_version": 2})
    head, compiled = rendered.split("\n---\n")[:2]
    assert head.startswith("---\ngbrain_id: ") and "\nslug: default::people/alice\ntitle: Alice" in head
    assert "type: person" in head and "She forges anvils." in compiled and "stale" not in rendered
    assert tagged == ["founder", "lab"] and untagged == listed == ["founder"]
    assert first == {"id": 1} and replaced == {"id": 2}
    assert duplicate[0] == -32003 and "set overwrite=true to replace" in duplicate[1]

    # The page is a document on DynamoDB (each tag change a version) with its text in the bucket.
    brain = stack.brain()
    doc = stack.core.documents.get(brain, "people/alice")
    assert doc.version == 4 and doc.tags == ["founder"]
    text = stack.blobs.client.get_object(Bucket=BUCKET, Key=f"blobs/{doc.blob_key}")["Body"].read()
    assert b"She forges anvils." in text
    row = stack.core.raw_data.get(brain, doc.id, "exa")
    assert row is not None and row[0].id == 2 and row[1] == {"v": 3}

    # memory_search on the canonical surface finds the page put through gbrain.
    (hits,) = mcp_session(stack, "/mcp", [("memory_search", {"brain": brain.slug, "query": "anvil lab"})])
    assert [h["path"] for h in hits["structuredContent"]["hits"]][:1] == ["people/alice"]


def test_eight_concurrent_put_writers_at_one_version_on_dynamodb_leave_one_winner(stack: Stack) -> None:
    """Each writer is its own container (its own path locks), as concurrent Lambda instances are:
    only DynamoDB's conditional transaction keeps them apart."""
    brain = stack.core.brains.create("Pages", slug="pages")
    writers = [PageService(p.brains, p.documents) for p in (stack.process() for _ in range(WRITERS))]
    writers[0].put("pages::people/alice", "# Alice\n\nfirst\n")
    start = threading.Barrier(WRITERS)
    won: list[int] = []
    lost: list[VersionConflict] = []
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            start.wait()
            outcome = writers[n].put("pages::people/alice", f"# Alice\n\nwriter {n}\n", expected_version=1)
            won.append(n)
            assert outcome.page.version == 2
        except VersionConflict as exc:
            lost.append(exc)
        except BaseException as exc:
            errors.append(exc)

    with serialized_moto():  # each DynamoDB request atomic, as the service guarantees
        threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    assert errors == [] and len(won) == 1 and len(lost) == WRITERS - 1
    assert {(c.current_version, c.expected_version) for c in lost} == {(2, 1)}
    winner = stack.core.pages.get("pages::people/alice")
    assert winner.version == 2 and winner.text.compiled_truth.strip() == f"# Alice\n\nwriter {won[0]}"
    chunks = stack.core.adapters.chunks.get_chunks(brain.id, winner.document.id)
    assert chunks and {c.text.strip() for c in chunks} == {f"# Alice\n\nwriter {won[0]}"}


def test_numbered_links_backlinks_graph_and_close_on_dynamodb(stack: Stack) -> None:
    g = mcp_client(stack, PATH)
    for slug in ("people/alice", "people/bob", "companies/acme", "places/berlin"):
        answer(g("brain_put", {"slug": slug, "content": page(slug.split("/")[1].title(), slug)}))
    linked = answer(
        g(
            "brain_link",
            {
                "from_slug": "people/alice",
                "to_slug": "companies/acme",
                "relationship": "works_at",
                "valid_from": "2020-01",
            },
        )
    )
    answer(
        g("brain_link", {"from_slug": "people/bob", "to_slug": "companies/acme", "relationship": "advises"})
    )
    answer(g("brain_link", {"from_slug": "companies/acme", "to_slug": "places/berlin", "relationship": "in"}))
    both = text_of(g("brain_backlinks", {"slug": "companies/acme"})["result"])
    graph = text_of(g("brain_graph", {"slug": "people/alice", "depth": 3})["result"])
    shallow = text_of(g("brain_graph", {"slug": "people/alice", "depth": 1})["result"])
    closed = answer(g("brain_link_close", {"link_id": 1, "valid_until": "2021-06-30"}))
    current = text_of(g("brain_backlinks", {"slug": "companies/acme"})["result"])
    history = text_of(g("brain_backlinks", {"slug": "companies/acme", "temporal": "all"})["result"])
    after = text_of(g("brain_graph", {"slug": "people/alice", "depth": 3})["result"])
    missing = refusal(g("brain_link_close", {"link_id": 99, "valid_until": "2021-06-30"}))

    assert linked == "Linked default::people/alice → default::companies/acme (works_at)"
    assert [(b["id"], b["from_slug"], b["relationship"]) for b in both] == [
        (2, "default::people/bob", "advises"),
        (1, "default::people/alice", "works_at"),
    ]
    assert [n["slug"] for n in graph["nodes"]] == [
        "default::people/alice",
        "default::companies/acme",
        "default::places/berlin",
    ]
    assert [(e["from"], e["to"], e["relationship"]) for e in graph["edges"]] == [
        ("default::people/alice", "default::companies/acme", "works_at"),
        ("default::companies/acme", "default::places/berlin", "in"),
    ]
    assert len(shallow["nodes"]) == 2 and len(shallow["edges"]) == 1
    assert closed == "Closed link 1 valid_until=2021-06-30"
    assert [b["id"] for b in current] == [2]
    assert [(b["id"], b["valid_until"]) for b in history] == [(2, None), (1, "2021-06-30")]
    assert after == {"nodes": [graph["nodes"][0]], "edges": []}  # the closed link is not active
    assert missing[:2] == (-32001, "link not found: id 99")
    # the links are numbered records on DynamoDB, both ways and by id
    brain = stack.brain()
    record = stack.core.graph.links.numbered(brain.id, 1)
    assert record is not None and record.valid_until == "2021-06-30"


def test_search_query_and_gaps_on_opensearch(stack: Stack) -> None:
    g = mcp_client(stack, PATH)
    pages = {
        "companies/acme": page("Acme", "Acme forges anvils for the desert trade."),
        "people/wile": page("Wile", "Wile buys anvils, anvils and rockets."),
        "people/road": page("Road", "Meep meep, says the runner."),
    }
    for slug, content in pages.items():
        answer(g("brain_put", {"slug": slug, "content": content}))
    found = text_of(g("brain_search", {"query": "anvils"})["result"])
    people = text_of(g("brain_search", {"query": "anvils", "wing": "people"})["result"])
    exact = text_of(g("brain_query", {"query": "people/road"})["result"])
    hybrid = text_of(g("brain_query", {"query": "anvils desert", "limit": 2})["result"])
    first = text_of(g("brain_gap", {"query": "Who funds Acme?", "context": "board prep"})["result"])
    again = text_of(g("brain_gap", {"query": "Who funds Acme?"})["result"])
    bound = text_of(g("brain_gap", {"query": "Acme's age?", "slug": "companies/acme"})["result"])
    listed = text_of(g("brain_gaps", {})["result"])

    assert {h["slug"] for h in found} == {"default::companies/acme", "default::people/wile"}
    assert found[0]["score"] >= found[1]["score"] > 0
    assert [h["slug"] for h in people] == ["default::people/wile"]
    assert [(h["slug"], h["score"]) for h in exact] == [("default::people/road", 1.0)]
    assert len(hybrid) == 2 and hybrid[0]["slug"] == "default::companies/acme"
    assert {h["slug"] for h in hybrid} == {"default::companies/acme", "default::people/wile"}
    digest = hashlib.sha256(b"Who funds Acme?").hexdigest()
    assert first == again == {"id": 1, "query_hash": digest, "page_id": None}
    assert bound["id"] == 2 and bound["page_id"] == stack.core.pages.get("companies/acme").document.id
    assert [x["id"] for x in listed] == [2, 1] and "Who funds" not in str(listed)
