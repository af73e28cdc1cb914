"""A document whose bytes an erase removed and whose record it did not (a process killed between the
two steps, services/documents/writes.py `erase`) is read through every surface without an internal
error: its own reads answer that its content is missing (503 `damaged_content`, or the surface's
own error), listings and searches answer without it (zengram's listings naming it in `unreadable`),
and the next erase finishes it."""

from __future__ import annotations

import json

import pytest

from cairn.services.documents.blob_keys import own_folder
from tests.support.live_world import Live
from tests.support.visibility_world import USERS

pytestmark = pytest.mark.anyio


async def test_a_half_erased_document_reads_without_internal_error_and_the_next_erase_finishes_it(
    live: Live,
) -> None:
    c = live.container
    a, x = live.sets["A"], live.sets["X"]
    half = [d for d in c.documents.repo.list(a.brain.id) if d.id in a.ids | x.ids]
    for doc in half:
        folder = own_folder(doc)
        assert folder is not None
        c.adapters.blobs.delete_prefix(folder)  # the erase's first step, and no second
    v = a.values
    answers = [
        live.rest("GET", "/v1/brains/alpha/documents/read", params={"path": v["path"]}),
        live.rest("GET", "/v1/brains/alpha/documents/stat", params={"path": v["path"]}),
        live.rest("POST", "/v1/brains/alpha/search", json={"query": v["text"]}),
        live.rest("GET", "/zengram/memory/search", params={"q": "staging database"}),
        live.rest("GET", "/zengram/memory/query", params={"type": "fact"}),
        live.rest("GET", "/zengram/briefing", params={"since": "2000-01-01"}),
    ]
    assert [r.status_code for r in answers if r.status_code >= 500] == [503]  # the document read alone
    assert all("damaged" in r.text or "missing" in r.text for r in answers if r.status_code == 503)
    fact = v["memory_id"]
    for listing in (answers[4], answers[5]):  # zengram's listings answer, naming the memory left out
        assert fact in [u["id"] for u in listing.json()["unreadable"]], listing.text
    calls = [
        ("/mcp", "memory_search", {"query": v["text"], "brain": "alpha"}),
        ("/mcp", "memory_recall", {"query": v["text"], "brain": "alpha"}),
        ("/mcp/zengram", "brain_search", {"query": "staging database"}),
        ("/mcp/zengram", "brain_query", {"type": "fact"}),
        ("/mcp/zengram", "brain_export", {}),
        ("/mcp/gbrain", "brain_get", {"slug": v["slug"]}),
        ("/mcp/gbrain", "brain_query", {"query": "team"}),
        ("/mcp/mnemosyne/", "get_chunk", {"chunk_uid": v["chunk"]}),
        ("/mcp/mnemosyne/", "list_items", {"library_uid": v["library"]}),
        ("/mcp/thoughtmcp", "recall", {"userId": USERS["X"], "text": "vault code"}),
        ("/mcp/thoughtmcp", "search", {"userId": USERS["X"], "text": "vault code"}),
    ]
    for path, tool, args in calls:
        said = await live.tool(path, tool, args)
        assert "internal_error" not in said and "Internal" not in said, (tool, said)
        assert json.loads(said).get("error") is None or "missing" in said, (tool, said)

    for doc in half:
        erased = c.documents.erase(a.brain, doc.path)
        assert erased is not None and erased.blobs == 0  # its bytes went before
        assert c.documents.repo.stored_by_id(doc.id) is None
    gone = live.rest("GET", "/v1/brains/alpha/documents/read", params={"path": v["path"]})
    assert gone.status_code == 404
