"""Each way a memory leaked or was written past its owner before the access rule moved into the
core, tried again over HTTP (on the embedded store and under moto) and, where a surface has one, over
stdio: none leaks or writes any more.

The world (tests/support/visibility_world.py): brain A public and the ThoughtMCP brain, with the
memories of users X and Y; brain B private to the machine's owner; principals as in the matrix."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.thoughtmcp.brain import BRAIN_MARK
from tests.integration.mcp.node_clients import CAIRN
from tests.support.live_world import Live, live
from tests.support.visibility_world import USERS

pytestmark = pytest.mark.anyio
__all__ = ["live"]


async def test_a_key_limited_to_the_library_never_reads_its_users_memories(live: Live) -> None:
    x, y = live.sets["X"], live.sets["Y"]
    answers = [
        await live.tool(
            "/mcp/mnemosyne/", "search", {"query": f"{x.probe} {y.probe} vault code"}, who="key_a"
        ),
        await live.tool("/mcp/mnemosyne/", "list_items", {"limit": 200}, who="key_a"),
        await live.tool(
            "/mcp", "memory_search", {"query": f"{x.probe} vault", "brain": "alpha"}, who="key_a"
        ),
        await live.tool("/mcp/thoughtmcp", "search", {"userId": USERS["Y"], "text": "vault"}, who="key_a"),
        live.rest("POST", "/v1/brains/alpha/search", who="key_a", json={"query": f"{y.probe} vault"}).text,
        live.rest("GET", "/v1/brains/alpha/documents", who="key_a", params={"recursive": "true"}).text,
    ]
    for answer in answers:
        assert x.marker not in answer and y.marker not in answer, answer[:300]
        assert not any(i in answer for i in x.ids | y.ids), answer[:300]
    items = json.loads(json.loads(answers[1])["content"][0]["text"])["items"]
    assert items and all(item["item_type"] != "memory" or "vault" not in item["title"] for item in items)


async def test_another_tenants_admin_key_never_writes_into_a_public_brain(live: Live) -> None:
    a = live.sets["A"]
    fact = a.values["memory_id"]
    headers = {"x-api-key": live.credentials["other_tenant"]}
    z = f"{live.base}/zengram"
    stored = httpx.post(
        f"{z}/memory", headers=headers, json={"type": "event", "content": "defaced", "source_agent": "m"}
    )
    patched = httpx.patch(f"{z}/memory/{fact}", headers=headers, json={"content": "defaced too"})
    deleted = httpx.request("DELETE", f"{z}/memory/{fact}", headers=headers, json={})
    by_tool = await live.tool_json(
        "/mcp/zengram",
        "brain_store",
        {"type": "event", "content": "defaced", "source_agent": "m"},
        who="other_tenant",
    )
    remembered = await live.tool_json(
        "/mcp/thoughtmcp",
        "remember",
        {
            "content": "defaced by another tenant",
            "userId": "mallory",
            "sessionId": "s",
            "primarySector": "semantic",
        },
        who="other_tenant",
    )
    put = live.rest(
        "PUT", "/v1/brains/alpha/documents", who="other_tenant", params={"path": "x.md"}, content=b"x"
    )

    assert stored.status_code == 201  # into a brain of its own tenant, made for it
    assert patched.status_code == 404 and deleted.status_code == 404  # alpha's memory is not its to touch
    assert "id" in by_tool and remembered["success"] is True
    assert put.status_code == 403
    c = live.container
    defaced = {
        b.owner_tenant
        for b in c.brains.repo.page(after=None, limit=100)[0]
        for d in c.documents.repo.list(b.id)
        if d.deleted_at is None and b"defaced" in c.documents.content(d)
    }
    assert defaced == {"acme"}
    kept = c.memories.text(c.documents.repo.get_by_id(fact))
    assert kept == f"The {a.probe} staging database ({a.marker}) of Harlowcorp lives in eu-west-1."


def test_another_brains_consolidation_job_is_nobodys_business(live: Live) -> None:
    job = live.sets["B"].values["job"]
    for who in ("key_a", "other_tenant"):
        answer = httpx.get(
            f"{live.base}/zengram/consolidate/job/{job}", headers={"x-api-key": live.credentials[who]}
        )
        assert answer.status_code == 404 and answer.json() == {"error": "Job not found or expired"}
    for who in ("key_a", "other_tenant"):  # as if there were no such job, its brain unnamed
        rest = live.rest("GET", f"/v1/jobs/{job}", who=who)
        assert rest.status_code == 404 and rest.json()["detail"] == f"job {job!r} not found"
    mine = httpx.get(
        f"{live.base}/zengram/consolidate/job/{job}", headers={"x-api-key": live.credentials["owner"]}
    )
    assert mine.status_code == 200 and mine.json()["job_id"] == job  # the owner may read brain B


def test_a_key_is_never_limited_to_another_tenants_brain(live: Live) -> None:
    refused = live.rest(
        "POST",
        "/v1/admin/keys",
        who="other_tenant",
        json={"name": "k", "scopes": ["documents:read"], "brains": [live.sets["A"].brain.id]},
    )
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"  # not a brain it administers
    by_slug = live.rest(  # a key's slugs are its own tenant's, and acme has no `alpha`
        "POST",
        "/v1/admin/keys",
        who="other_tenant",
        json={"name": "k", "scopes": ["documents:read"], "brains": ["alpha"]},
    )
    assert by_slug.status_code == 404 and by_slug.json()["code"] == "not_found"
    assert [k["name"] for k in live.rest("GET", "/v1/admin/keys", who="other_tenant").json()["items"]] == [
        "acme"
    ]


async def test_thoughtmcp_memories_land_in_a_brain_of_their_own_not_the_first(tmp_path: Path) -> None:
    data = tmp_path / "data"
    c = build_container(Settings(data_dir=data))
    first = c.brains.create("Team Notes", slug="team-notes", visibility="tenant")
    c.ingest.remember(first, "# Standup\n\nThe standup moved to ten.", path="notes/standup.md")

    params = StdioServerParameters(
        command=CAIRN, args=["mcp", "--surface", "thoughtmcp", "--data-dir", str(data)]
    )
    async with Client(params) as stdio:
        made = await stdio.call_tool(
            "remember",
            {
                "content": "Ada's locker code is 2718.",
                "userId": "ada",
                "sessionId": "s",
                "primarySector": "semantic",
            },
        )
        assert not made.is_error, made.content

    reopened = build_container(Settings(data_dir=data))
    brains = {b.slug: b for b in reopened.brains.list()}
    assert set(brains) == {"team-notes", "thoughtmcp"} and brains["thoughtmcp"].metadata[BRAIN_MARK] is True
    team = reopened.search.search(brains["team-notes"], "Ada locker code 2718", top_k=10)
    assert [h.path for h in team.hits] == ["notes/standup.md"] or all(
        "2718" not in h.content for h in team.hits
    )
    mine = reopened.search.search(brains["thoughtmcp"], "Ada locker code 2718", top_k=10)
    assert any("2718" in h.content for h in mine.hits)


async def test_the_change_stream_tells_no_one_of_a_memory_they_may_not_see(live: Live) -> None:
    import threading

    heard: dict[str, list[str]] = {"owner": [], "key_a": [], "user_x": []}
    ready = threading.Barrier(4)

    def listen(who: str) -> None:
        headers = {"authorization": f"Bearer {live.credentials[who]}"}
        with httpx.stream("GET", f"{live.base}/v1/brains/alpha/events", headers=headers, timeout=5) as stream:
            lines = stream.iter_lines()
            for line in lines:
                if line.startswith("event: ready"):
                    ready.wait()
                    break
            try:
                for line in lines:
                    if line.startswith("data: {"):
                        heard[who].append(line)
            except httpx.ReadTimeout:
                return

    threads = [threading.Thread(target=listen, args=(who,)) for who in heard]
    for t in threads:
        t.start()
    ready.wait()
    said = {
        "content": "Xavier's xraytell is 31.",
        "userId": USERS["X"],
        "sessionId": "s",
        "primarySector": "semantic",
    }
    assert (await live.tool_json("/mcp/thoughtmcp", "remember", said, who="user_x"))["success"] is True
    put = live.rest(
        "PUT",
        "/v1/brains/alpha/documents",
        params={"path": "notes/open.md"},
        content=b"# Open\n\nFor all.",
        headers={"content-type": "application/octet-stream"},
    )
    assert put.status_code < 300, put.text
    for t in threads:
        t.join(timeout=20)

    assert any("thoughts/" in line for line in heard["owner"]) and any(
        "thoughts/" in line for line in heard["user_x"]
    )
    assert not any("thoughts/" in line for line in heard["key_a"])
    assert any("notes/open.md" in line for line in heard["key_a"])  # what it may see, it hears of


async def test_a_thoughtmcp_memorys_chunk_is_fetched_by_those_who_may_see_it_and_nobody_else(
    live: Live,
) -> None:
    x, y = live.sets["X"], live.sets["Y"]
    own = await live.tool_json("/mcp/mnemosyne/", "get_chunk", {"chunk_uid": x.values["chunk"]}, who="user_x")
    owner = await live.tool_json(
        "/mcp/mnemosyne/", "get_chunk", {"chunk_uid": y.values["chunk"]}, who="owner"
    )
    assert x.marker in json.dumps(own) and y.marker in json.dumps(owner)  # chk_mem_… ids resolve
    for who, chunk in (
        ("user_x", y.values["chunk"]),
        ("key_a", x.values["chunk"]),
        ("other_tenant", x.values["chunk"]),
    ):
        answer = await live.tool("/mcp/mnemosyne/", "get_chunk", {"chunk_uid": chunk}, who=who)
        assert x.marker not in answer and y.marker not in answer, (who, answer[:300])
