"""Erasing a subject over HTTP, on the embedded store and on the AWS adapters: one call with a
receipt; afterwards no surface finds anything of it and no store holds it (records, blobs, every
S3 version, the embedded store's files and vector rows); what others stored is untouched; the audit
says an erasure happened and by whom, never whose data it was."""

from __future__ import annotations

import json

import pytest

from tests.support.live_world import Live
from tests.support.visibility_world import USERS

pytestmark = pytest.mark.anyio


async def _found_anywhere(live: Live, text: str, user: str, ids: set[str]) -> list[str]:
    """Every surface's search for the text, word for word, as the owner: the surfaces whose answer
    names one of `ids` (the memories' and their chunks': a query's echo never holds them)."""
    a = live.sets["A"].brain
    answers = {
        "rest": live.rest("POST", f"/v1/brains/{a.slug}/search", json={"query": text, "top_k": 50}).text,
        "canonical": await live.tool("/mcp", "memory_search", {"query": text, "brain": a.slug, "top_k": 50}),
        "mnemosyne": await live.tool("/mcp/mnemosyne/", "search", {"query": text, "limit": 200}),
        "gbrain": await live.tool("/mcp/gbrain", "brain_search", {"query": text, "collection": a.slug}),
        "zengram": await live.tool("/mcp/zengram", "brain_search", {"query": text, "limit": 100}),
        "thoughtmcp": await live.tool("/mcp/thoughtmcp", "search", {"userId": user, "text": text}),
        "recall": await live.tool(
            "/mcp/thoughtmcp", "recall", {"userId": user, "text": text, "minSimilarity": 0}
        ),
    }
    return [surface for surface, answer in answers.items() if any(i in answer for i in ids)]


async def test_a_thoughtmcp_user_is_gone_from_every_surface_and_every_store(live: Live) -> None:
    x, y = live.sets["X"], live.sets["Y"]
    remember = {
        "content": f"The {x.probe} safe word ({x.marker}) is heliotrope.",
        "userId": USERS["X"],
        "sessionId": "s9",
        "primarySector": "semantic",
    }
    said = await live.tool_json("/mcp/thoughtmcp", "remember", remember, who="user_x")
    assert said["success"] is True, said
    x_ids = {*x.ids, said["data"]["memoryId"]}
    for text in x.texts:
        assert await _found_anywhere(live, text, USERS["X"], x_ids), text  # found before
    vectors = live.vectors_of(x) if live.shape == "embedded" else None

    response = live.rest("POST", "/v1/erasures", json={"kind": "thoughtmcp_user", "subject": USERS["X"]})

    assert response.status_code == 200, response.text
    receipt = response.json()
    assert receipt["status"] == "completed" and receipt["kind"] == "thoughtmcp_user"
    assert receipt["removed"]["documents"] == 3 and receipt["removed"]["memory_rows"] == 3
    assert receipt["removed"]["chunks"] >= 3 and receipt["removed"]["blobs"] == 3
    assert receipt["removed"]["audit_entries"] >= 1  # user_x's own remember, by name and memory id
    assert USERS["X"] not in response.text and x.marker not in response.text
    for text in [*x.texts, remember["content"]]:
        assert await _found_anywhere(live, text, USERS["X"], x_ids) == [], text
    for text in y.texts:  # the other user's memories stay, found as before
        assert "thoughtmcp" in await _found_anywhere(live, text, USERS["Y"], y.ids), text
    assert live.records_holding(x.marker, USERS["X"], *x.ids) == []
    archive = json.dumps(list(live.container.archive.export(x.brain)), default=str)  # `cairn export`
    assert x.marker not in archive and USERS["X"] not in archive and y.marker in archive
    zengram_export = await live.tool("/mcp/zengram", "brain_export", {})
    assert x.marker not in zengram_export
    assert live.blobs_holding(x.marker.encode()) == []
    if live.shape == "embedded":
        assert live.files_holding(x.marker.encode()) == []
        assert live.files_holding(USERS["X"].encode()) == []
        assert vectors is not None and live.vector_rows_near(vectors) == 0
        assert live.vector_rows_near(live.vectors_of(y)) > 0  # the check sees a stored vector
    audit = live.rest("GET", "/v1/admin/audit", params={"limit": 1000}).json()["items"]
    erasures = [e for e in audit if e["action"] == "erasure"]
    assert erasures and erasures[0]["target"] == receipt["id"] and erasures[0]["subject"] == "local"
    assert USERS["X"] not in json.dumps(audit) and "[erased]" in json.dumps(audit)
    kept = live.rest("GET", f"/v1/erasures/{receipt['id']}")
    assert kept.status_code == 200 and kept.json()["removed"] == receipt["removed"]


async def test_an_agent_is_gone_whichever_surface_recorded_it(live: Live) -> None:
    a, b = live.sets["A"], live.sets["B"]
    brain = a.brain.slug
    session = live.rest(
        "POST", f"/v1/brains/{brain}/sessions", json={"title": "sync", "actor_id": "scout"}
    ).json()
    live.rest(
        "POST",
        f"/v1/brains/{brain}/sessions/{session['id']}/messages",
        json={
            "role": "user",
            "content": "Scout says the zebracode is 9981.",
            "metadata": {"skip_extract": True},
        },
    )
    fact = {"type": "fact", "content": "Scout owns the Quillfeather account.", "source_agent": "scout"}
    assert "id" in await live.tool_json("/mcp/zengram", "brain_store", {**fact, "key": "quill-owner"})
    edited = {"type": "event", "content": "Scout set the vault code to ochre-4417.", "source_agent": "scout"}
    edited_id = (await live.tool_json("/mcp/zengram", "brain_store", edited))["id"]
    change = {"memory_id": edited_id, "content": "Scout rotated the vault code."}
    assert (await live.tool_json("/mcp/zengram", "brain_update", change))["updated"] is True
    assert live.blobs_holding(b"ochre-4417")  # the first version's bytes are kept while it lives
    other = {"type": "fact", "content": "Pilot owns the Quillfeather ledger.", "source_agent": "pilot"}
    assert "id" in await live.tool_json("/mcp/zengram", "brain_store", other)

    response = live.rest("POST", "/v1/erasures", json={"kind": "any", "subject": "scout"})

    assert response.status_code == 200, response.text
    removed = response.json()["removed"]
    # each brain: a fact, an agent-scope note and a session with its message; A: one more of each,
    # and the edited event, whose two versions' bytes both go
    assert removed["documents"] == 6 and removed["sessions"] == 3 and removed["messages"] == 3
    assert removed["blobs"] >= 7
    assert live.blobs_holding(b"ochre-4417") == [] and live.blobs_holding(b"rotated the vault") == []
    for gone in (
        "zebracode",
        "Quillfeather account",
        f"prefers {a.probe} answers",
        f"prefers {b.probe} answers",
    ):
        for slug in (brain, b.brain.slug):
            found = live.rest("POST", f"/v1/brains/{slug}/search", json={"query": gone, "top_k": 50}).json()
            assert gone not in json.dumps(found["hits"]), gone
    assert live.records_holding("zebracode", "Quillfeather account", "scout") == []
    kept = live.rest("POST", f"/v1/brains/{brain}/search", json={"query": "Quillfeather ledger"}).json()
    assert "Pilot owns the Quillfeather ledger." in json.dumps(kept["hits"])
    entities = await live.tool("/mcp/zengram", "brain_entities", {"action": "list"})
    assert "Harlowcorp" not in entities  # mentioned by scout's facts alone: gone with them


async def test_an_actors_extraction_jobs_go_with_the_facts_drawn_from_their_words(live: Live) -> None:
    brain = live.sets["A"].brain.slug
    session = live.rest(
        "POST", f"/v1/brains/{brain}/sessions", json={"title": "chat", "actor_id": "marlow"}
    ).json()
    said = {"role": "user", "content": "I keep my tidewrack savings at the Harbourside bank."}
    assert live.rest("POST", f"/v1/brains/{brain}/sessions/{session['id']}/messages", json=said).is_success
    other = live.rest("POST", f"/v1/brains/{brain}/sessions", json={"title": "c2", "actor_id": "nell"}).json()
    kept = {"role": "user", "content": "I keep my kelpwhistle flute in the attic."}
    assert live.rest("POST", f"/v1/brains/{brain}/sessions/{other['id']}/messages", json=kept).is_success
    live.container.jobs.run_pending()
    assert live.records_holding("tidewrack") or live.files_holding(b"tidewrack")  # the job's drafts

    response = live.rest("POST", "/v1/erasures", json={"kind": "session_actor", "subject": "marlow"})

    assert response.status_code == 200, response.text
    assert response.json()["removed"]["jobs"] >= 1
    assert live.records_holding("tidewrack", "marlow") == []
    if live.shape == "embedded":
        assert live.files_holding(b"tidewrack") == []  # jobs.sqlite3 among them
    assert live.records_holding("kelpwhistle") or live.files_holding(b"kelpwhistle")  # nell's job stays


async def test_erasing_twice_or_nobody_is_not_found_and_changes_nothing(live: Live) -> None:
    first = live.rest("POST", "/v1/erasures", json={"kind": "thoughtmcp_user", "subject": USERS["Y"]})
    again = live.rest("POST", "/v1/erasures", json={"kind": "thoughtmcp_user", "subject": USERS["Y"]})
    nobody = await live.tool(
        "/mcp/admin", "admin_erase_subject", {"kind": "source_agent", "subject": "nobody"}
    )
    bad_kind = live.rest("POST", "/v1/erasures", json={"kind": "person", "subject": "x"})
    empty = await live.tool("/mcp/admin", "admin_erase_subject", {"kind": "any", "subject": ""})
    unknown_brain = live.rest(
        "POST", "/v1/erasures", json={"kind": "any", "subject": "scout", "brains": ["nope"]}
    )

    assert first.status_code == 200
    assert again.status_code == 404 and again.json()["code"] == "not_found"
    assert "erased already" in again.json()["detail"]
    assert json.loads(nobody)["structured"] is None and '\\"code\\": \\"not_found\\"' in nobody
    assert bad_kind.status_code == 400 and bad_kind.json()["code"] == "validation_error"
    assert json.loads(json.loads(empty)["content"][0]["text"])["code"] == "validation_error"
    assert unknown_brain.status_code == 404
    assert live.records_holding("scout")  # the refused calls removed nothing


async def test_only_an_owner_or_an_admin_of_the_brain_may_erase(live: Live) -> None:
    x = live.sets["X"]
    body = {"kind": "thoughtmcp_user", "subject": USERS["X"]}
    as_key = live.rest("POST", "/v1/erasures", who="key_a", json=body)  # read+write, no brains:admin
    as_user = live.rest("POST", "/v1/erasures", who="user_x", json=body)
    as_stranger = live.rest("POST", "/v1/erasures", who="other_tenant", json={**body, "brains": ["alpha"]})
    as_stranger_anywhere = live.rest("POST", "/v1/erasures", who="other_tenant", json=body)
    by_tool = await live.tool("/mcp/admin", "admin_erase_subject", body, who="key_a")

    assert [r.status_code for r in (as_key, as_user, as_stranger, as_stranger_anywhere)] == [
        403,
        403,
        403,
        403,
    ]
    assert json.loads(json.loads(by_tool)["content"][0]["text"])["code"] == "forbidden"
    assert live.records_holding(x.marker)  # nothing was erased
    for text in x.texts:
        assert await _found_anywhere(live, text, USERS["X"], x.ids)


async def test_asking_for_an_erasure_left_running_finishes_it(live: Live) -> None:
    from cairn.services.erasure.subjects import Subject

    c = live.container
    y = live.sets["Y"]
    subject = Subject.of("thoughtmcp_user", USERS["Y"])
    receipt = c.erasure._receipt(
        subject.kind, subject.digest(c.erasure.erased.secret), [y.brain]
    )  # as a process that then died
    c.erasure.erasures.start(receipt, subject.value)
    stranger = live.rest("GET", f"/v1/erasures/{receipt.id}", who="other_tenant")
    assert stranger.status_code == 404  # another tenant's erasure is not told apart from none
    assert live.records_holding(y.marker)  # and asking did not run it

    answer = live.rest("GET", f"/v1/erasures/{receipt.id}")

    assert answer.status_code == 200 and answer.json()["status"] == "completed"
    assert answer.json()["removed"]["memory_rows"] == 2
    assert live.records_holding(y.marker, USERS["Y"]) == []
