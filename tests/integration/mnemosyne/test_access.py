"""Fail closed: no credential reaches only get_health; an empty library list sees nothing; another
tenant's library, collection and chunk ids match nothing in every argument; a workspace narrows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from tests.integration.mcp.conftest import LiveServer, start_server
from tests.integration.mnemosyne.conftest import body, failure, ingest, mnemosyne, stock

pytestmark = pytest.mark.anyio
NEEDS_AUTH = "authentication required: send Authorization: Bearer <token>"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, token="sekret-owner-token", rate_limit_per_s=0)


MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _post(live: LiveServer, message: dict[str, Any], path: str = "/mcp/mnemosyne/") -> Any:
    import httpx

    return httpx.post(f"{live.base}{path}", json={"jsonrpc": "2.0", "id": 1, **message}, headers=MCP_HEADERS)


async def test_without_a_credential_get_health_answers_and_every_other_tool_asks_to_sign_in(
    live: LiveServer,
) -> None:
    stock(live.container)
    health = _post(live, {"method": "tools/call", "params": {"name": "get_health", "arguments": {}}})
    handshake = [
        _post(live, {"method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                         "clientInfo": {"name": "poller", "version": "1"}}}),
        _post(live, {"method": "tools/list", "params": {}}),
        _post(live, {"method": "ping"}),
    ]  # fmt: skip
    refused = [
        _post(live, {"method": "tools/call", "params": {"name": name, "arguments": args}}, path)
        for path in ("/mcp/mnemosyne/", "/mcp/mnemosyne")
        for name, args in (
            ("search", {"query": "Bennet"}),
            ("get_chunk", {"chunk_uid": "chk_x_0"}),
            ("list_libraries", {}),
            ("list_collections", {}),
            ("list_items", {}),
        )
    ]
    odd = [_post(live, {"method": "resources/list"}), _post(live, {"method": "tools/call"})]

    assert health.status_code == 200 and health.json()["result"]["structuredContent"]["status"] == "ok"
    assert [r.status_code for r in handshake] == [200, 200, 200]
    assert {t["name"] for t in handshake[1].json()["result"]["tools"]} >= {"search", "get_health"}
    for response in [*refused, *odd]:  # as every other endpoint answers a caller without a credential
        assert response.status_code == 401, response.text
        challenge = response.headers["www-authenticate"]
        assert (
            challenge
            == f'Bearer resource_metadata="{live.base}/.well-known/oauth-protected-resource/mcp/mnemosyne"'
        )
        assert "Bennet" not in response.text
    for suffix in ("/mcp/mnemosyne", "/mcp/mnemosyne/"):  # the challenge's, and the one derived from the URL
        metadata = __import__("httpx").get(f"{live.base}/.well-known/oauth-protected-resource{suffix}")
        assert metadata.status_code == 200 and metadata.json()["resource"] == f"{live.base}/mcp/mnemosyne"
    async with mnemosyne(live, credential=None) as m:  # a poller on the official client: health only
        assert body(await m.call_tool("get_health", {}))["status"] == "ok"
    with pytest.raises(ExceptionGroup) as refused_client:
        async with mnemosyne(live, credential=None) as m:
            await m.call_tool("list_libraries", {})
    assert refused_client.group_contains(MCPError)


async def test_an_open_loopback_server_lets_the_anonymous_caller_reach_get_health_only(
    tmp_path: Path,
) -> None:
    for live in start_server(tmp_path):  # no token: open on loopback, nothing to sign in to
        shelf = stock(live.container)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("search", {"query": "Bennet"}),
            ("get_chunk", {"chunk_uid": "chk_x_0"}),
            ("list_libraries", {}),
            ("list_collections", {"library_uid": shelf.novels.uid}),
            ("list_items", {}),
        ]
        async with mnemosyne(live, credential=None) as m:
            refusals = [failure(await m.call_tool(name, args)) for name, args in calls]
            health = body(await m.call_tool("get_health", {}))
        async with mnemosyne(live, credential="anything-at-all") as m:
            listed = body(await m.call_tool("list_libraries", {}))
        # the refusal says what to send, and that on this server any token will do
        assert len(set(refusals)) == 1 and refusals[0].startswith(NEEDS_AUTH)
        assert "no authentication configured" in refusals[0]
        assert "any non-empty token is accepted" in refusals[0]
        assert health["status"] == "ok"
        assert {lib["uid"] for lib in listed["libraries"]} == {shelf.novels.uid, shelf.manuals.uid}


async def test_a_refused_credential_is_not_taken_for_none(live: LiveServer) -> None:
    import httpx

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_health", "arguments": {}},
    }
    headers = {"accept": "application/json, text/event-stream", "authorization": "Bearer wrong"}
    response = httpx.post(f"{live.base}/mcp/mnemosyne/", json=request, headers=headers)
    assert response.status_code == 401 and 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_an_empty_library_list_sees_nothing_and_a_list_sees_only_its_libraries(
    live: LiveServer,
) -> None:
    c = live.container
    shelf = stock(c)
    nothing = c.keys.create(name="nothing", tenant="local", scopes=[READ], brains=[]).plaintext
    novels_only = c.keys.create(
        name="novels", tenant="local", scopes=[READ], brains=[shelf.novels.uid]
    ).plaintext
    chunk = c.adapters.chunks.get_chunks(shelf.manuals.uid, _doc(c, shelf.manuals.uid))[0]

    async with mnemosyne(live, nothing) as m:
        empty = [
            body(await m.call_tool("list_libraries", {}))["libraries"],
            body(await m.call_tool("list_collections", {}))["collections"],
            body(await m.call_tool("list_items", {}))["items"],
            body(await m.call_tool("search", {"query": "Bennet pump"}))["candidates"],
        ]
        hidden = failure(await m.call_tool("get_chunk", {"chunk_uid": chunk.id}))
    async with mnemosyne(live, novels_only) as m:
        names = [lib["name"] for lib in body(await m.call_tool("list_libraries", {}))["libraries"]]
        found = body(await m.call_tool("search", {"query": "pump Hydrex bolts"}))["candidates"]
        other = body(await m.call_tool("search", {"query": "pump", "library_uid": shelf.manuals.uid}))
        items = body(await m.call_tool("list_items", {"library_uid": shelf.manuals.uid}))["items"]
        also_hidden = failure(await m.call_tool("get_chunk", {"chunk_uid": chunk.id}))

    assert empty == [[], [], [], []] and hidden.startswith("chunk not found")
    assert names == ["Austen novels"]
    assert {c["library_type"] for c in found} <= {"fiction"}
    assert other["candidates"] == [] and items == [] and also_hidden.startswith("chunk not found")


async def test_another_tenants_ids_match_nothing_in_every_argument(live: LiveServer) -> None:
    c = live.container
    stranger = Principal("globex", "mallory", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(stranger, ADMIN):
        secret = c.libraries.describe(
            c.brains.create("Globex secrets", slug="globex").id, library_type="business"
        )
        vault = c.libraries.create_collection(secret, "Vault")
    doc_id = ingest(
        c, secret.brain, f"{vault.folder}/plan.md", "# Plan\n\nGlobex will acquire Initech in May."
    )
    chunk_id = c.adapters.chunks.get_chunks(secret.uid, doc_id)[0].id
    key = c.keys.create(name="acme", tenant="acme", scopes=[READ]).plaintext

    async with mnemosyne(live, key) as m:
        results = [
            body(await m.call_tool("search", {"query": "Initech", "library_uid": secret.uid}))["candidates"],
            body(await m.call_tool("search", {"query": "Initech", "collection_uid": vault.uid}))[
                "candidates"
            ],
            body(await m.call_tool("search", {"query": "Globex acquire Initech"}))["candidates"],
            body(await m.call_tool("list_collections", {"library_uid": secret.uid}))["collections"],
            body(await m.call_tool("list_items", {"library_uid": secret.uid}))["items"],
            body(await m.call_tool("list_items", {"collection_uid": vault.uid}))["items"],
            body(await m.call_tool("list_libraries", {}))["libraries"],
        ]
        chunk = failure(await m.call_tool("get_chunk", {"chunk_uid": chunk_id}))
    assert results == [[]] * len(results) and chunk == f"chunk not found: {chunk_id}"


async def test_a_workspace_narrows_to_its_libraries(live: LiveServer) -> None:
    c = live.container
    shelf = stock(c)
    c.libraries.describe(shelf.manuals.uid, workspace_id="plant-7")
    async with mnemosyne(live) as m:
        everything = body(await m.call_tool("list_libraries", {}))["libraries"]
        plant = body(await m.call_tool("list_libraries", {"workspace_id": "plant-7"}))["libraries"]
        blank = body(await m.call_tool("list_libraries", {"workspace_id": ""}))["libraries"]
        elsewhere = body(await m.call_tool("search", {"query": "Bennet", "workspace_id": "plant-7"}))
    assert len(everything) == len(blank) == 2
    assert [lib["name"] for lib in plant] == ["Pump manuals"]
    assert {x["library_type"] for x in elsewhere["candidates"]} <= {"technical"}


def _doc(c: Any, brain_id: str) -> str:
    return next(d.id for d in c.documents.documents(c.brains.get(brain_id)))


async def test_a_per_turn_jwt_reads_only_the_libraries_its_libs_claim_names(tmp_path: Path) -> None:
    import time

    from tests.integration.auth.jwks_server import jwks_server
    from tests.unit.auth.tokens import AUDIENCE, ISSUER, claims, jwks, rsa_key

    signer = rsa_key("k1")
    (tmp_path / "ingest-root").mkdir()
    with jwks_server(jwks(signer)) as keys:
        gen = start_server(
            tmp_path, jwt_issuer=ISSUER, jwt_jwks_url=keys.url, jwt_audience=[AUDIENCE], rate_limit_per_s=0
        )
        live = next(gen)
        try:
            c = live.container
            admin = Principal("acme", "user-1", frozenset({READ, WRITE, ADMIN}), Via.jwt)
            with access.acting_as(admin, ADMIN):
                made = [
                    c.libraries.describe(c.brains.create(n, visibility="tenant").id, library_type="journal")
                    for n in ("Diary", "Logbook")
                ]

            def token(**extra: Any) -> str:
                return signer.sign(claims(now=time.time(), scope="documents:read", **extra))

            async with mnemosyne(live, token(libs=[made[1].uid])) as m:
                one = body(await m.call_tool("list_libraries", {}))["libraries"]
            async with mnemosyne(live, token(libs=[])) as m:
                none = body(await m.call_tool("list_libraries", {}))["libraries"]
            async with mnemosyne(live, token()) as m:
                both = body(await m.call_tool("list_libraries", {}))["libraries"]
        finally:
            next(gen, None)
    assert [lib["name"] for lib in one] == ["Logbook"] and none == []
    assert [lib["name"] for lib in both] == ["Diary", "Logbook"]
