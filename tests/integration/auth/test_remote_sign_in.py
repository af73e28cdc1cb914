"""Remote sign-in end to end, with no client id configured anywhere: a live Cairn whose tokens come
from a fake Cognito (tests/support/fake_cognito.py: Cognito's own discovery document, exact
redirect matching, PKCE, the `resource` parameter) and whose app clients are made in a user pool on
moto. The official Python and TypeScript MCP SDKs discover Cairn's authorization-server metadata
from the 401, register, sign in and call a tool on every MCP endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.auth import OAuthRegistrationError

from cairn.entrypoints.mcp.registry import SURFACES, http_paths
from tests.integration.mcp.conftest import start_server
from tests.integration.mcp.node_clients import run_node
from tests.support.sign_in import (
    TENANT,
    Browser,
    MemoryStorage,
    SignInStack,
    authorize,
    bearer_client,
    pkce,
    python_client,
    register,
    sign_in_by_hand,
    sign_in_stack,
)

pytestmark = pytest.mark.integration
USER = "<the signed-in user's sub>"
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "/mcp": ("memory_create_brain", {"name": "Signed in"}),
    "/mcp/admin": ("admin_list_brains", {}),
    "/mcp/zengram": ("brain_stats", {}),
    "/mcp/gbrain": ("brain_list", {}),
    "/mcp/mnemosyne/": ("list_libraries", {}),  # its handshake needs no token: the call does
    "/mcp/thoughtmcp": ("search", {"userId": USER, "text": "anything"}),
}
"""One tool per MCP endpoint, in this order: /mcp makes a brain the later calls see."""
PY_REDIRECT = "http://127.0.0.1:41234/callback"
TS_REDIRECT = "http://localhost:45678/callback"


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SignInStack]:
    with sign_in_stack(tmp_path, monkeypatch) as running:
        yield running


def calls_for(stack: SignInStack) -> list[tuple[str, str, dict[str, Any]]]:
    sub = stack.cognito.user.sub
    return [
        (path, tool, {k: sub if v == USER else v for k, v in args.items()})
        for path, (tool, args) in CALLS.items()
    ]


def test_every_mcp_endpoint_is_covered() -> None:
    served = {path for surface in SURFACES for path in http_paths(surface)}
    assert set(CALLS) <= served
    assert {p.rstrip("/") for p in served} == {p.rstrip("/") for p in CALLS}


def test_cairn_is_the_authorization_server_its_resource_metadata_names(stack: SignInStack) -> None:
    base, cognito = stack.base, stack.cognito
    for path in ("/mcp", "/mcp/admin", "/mcp/mnemosyne"):
        resource = httpx.get(f"{base}/.well-known/oauth-protected-resource{path}").json()
        assert resource["authorization_servers"] == [base] and resource["resource"] == f"{base}{path}"
    for form in (
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server/mcp/zengram",  # path-suffixed, as some clients derive it
        "/.well-known/openid-configuration/mcp",
    ):
        answer = httpx.get(f"{base}{form}")  # no credential
        assert answer.status_code == 200, (form, answer.text)
        document = answer.json()
        assert document["issuer"] == base
        assert document["code_challenge_methods_supported"] == ["S256"]
        assert document["registration_endpoint"] == f"{base}/register"
        assert document["authorization_endpoint"] == f"{cognito.domain}/oauth2/authorize"
        assert document["token_endpoint"] == f"{cognito.domain}/oauth2/token"
        assert document["jwks_uri"] == f"{cognito.issuer}/.well-known/jwks.json"
    # What Cairn makes up for: Cognito's own document, which MCP clients refuse or cannot register with.
    upstream = httpx.get(f"{cognito.issuer}/.well-known/openid-configuration").json()
    assert "code_challenge_methods_supported" not in upstream and "registration_endpoint" not in upstream


@pytest.mark.anyio
async def test_the_python_sdk_registers_signs_in_and_calls_a_tool_on_every_endpoint(
    stack: SignInStack,
) -> None:
    outcomes: dict[str, Any] = {}
    for path, tool, args in calls_for(stack):
        storage, browser = MemoryStorage(), Browser()
        async with python_client(f"{stack.base}{path}", PY_REDIRECT, storage, browser) as client:
            result = await client.call_tool(tool, args)
        assert not result.is_error, (path, result.content)
        outcomes[path] = result.structured_content
        # It registered a client of its own for exactly its redirect URI, and signed in with PKCE.
        assert storage.client_info is not None and storage.client_info.token_endpoint_auth_method == "none"
        app = stack.pool.app_client(storage.client_info.client_id)
        assert app is not None and app["CallbackURLs"] == [PY_REDIRECT]
        signed_in = stack.cognito.authorize_requests[-1]
        assert signed_in["client_id"] == storage.client_info.client_id
        assert signed_in["code_challenge_method"] == "S256"
        assert signed_in["resource"] == f"{stack.base}{path.rstrip('/')}"  # RFC 8707, recorded by the fake
    brain = outcomes["/mcp"]
    owners = {item["id"]: item for item in outcomes["/mcp/admin"]["items"]}
    assert (
        owners[brain["id"]]["owner"] == stack.cognito.user.sub
        and owners[brain["id"]]["owner_tenant"] == TENANT
    )
    assert [lib["uid"] for lib in outcomes["/mcp/mnemosyne/"]["libraries"]] == [brain["id"]]
    assert len(stack.pool.client_ids()) == 1 + len(
        CALLS
    )  # the template's sign-in client, and one per endpoint


def test_the_typescript_sdk_registers_signs_in_and_calls_a_tool_on_every_endpoint(stack: SignInStack) -> None:
    calls = [
        {"url": f"{stack.base}{path}", "tool": tool, "args": args} for path, tool, args in calls_for(stack)
    ]
    report = json.loads(run_node(["sign_in.mjs", TS_REDIRECT, json.dumps(calls)]))
    assert report["errors"] == []
    by_url = {r["url"]: r for r in report["results"]}
    for path, _, _ in calls_for(stack):
        result = by_url[f"{stack.base}{path}"]
        assert not result["isError"], (path, result["text"])
        app = stack.pool.app_client(result["client_id"])
        assert app is not None and app["CallbackURLs"] == [TS_REDIRECT]
        assert result["callback"].startswith(f"{TS_REDIRECT}?code=")
        asked = httpx.URL(result["authorize"]).params
        assert asked["code_challenge_method"] == "S256" and asked["client_id"] == result["client_id"]
        assert asked["resource"] == f"{stack.base}{path.rstrip('/')}"
    brain = by_url[f"{stack.base}/mcp"]["structured"]
    assert brain["name"] == "Signed in"
    assert {lib["uid"] for lib in by_url[f"{stack.base}/mcp/mnemosyne/"]["structured"]["libraries"]} == {
        brain["id"]
    }


@pytest.mark.anyio
async def test_a_redirect_uri_not_allowed_is_refused_with_a_clear_error(stack: SignInStack) -> None:
    before = stack.pool.client_ids()
    answer = register(stack.base, redirect_uris=["https://evil.example/callback"], client_name="x")
    assert answer.status_code == 400
    body = answer.json()
    assert body["error"] == "invalid_redirect_uri"
    assert "'https://evil.example/callback' is not allowed" in body["error_description"]
    assert "CAIRN_OAUTH_ALLOWED_REDIRECTS" in body["error_description"]
    assert answer.headers["cache-control"] == "no-store"
    # The SDK reports the same refusal to its user, and nothing was made in the pool.
    refusal = pytest.RaisesExc(OAuthRegistrationError, match="invalid_redirect_uri")
    with pytest.RaisesGroup(refusal, allow_unwrapped=True, flatten_subgroups=True):
        async with python_client(
            f"{stack.base}/mcp", "https://evil.example/callback", MemoryStorage(), Browser()
        ) as client:
            await client.list_tools()
    assert stack.pool.client_ids() == before


def test_malformed_registrations_are_invalid_client_metadata(stack: SignInStack) -> None:
    for body in (
        {},
        {"redirect_uris": "http://127.0.0.1:1/cb"},
        {"redirect_uris": [PY_REDIRECT], "grant_types": ["password"]},
    ):
        answer = register(stack.base, **body)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_client_metadata", answer.text
        assert "127.0.0.1:1" not in answer.text  # what was sent is not echoed back
    not_json = httpx.post(
        f"{stack.base}/register", content=b"{", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 400 and not_json.json()["error"] == "invalid_client_metadata"
    huge = httpx.post(f"{stack.base}/register", content=b"{" + b" " * 20_000 + b"}")
    assert huge.status_code == 413


def test_a_registered_clients_uris_are_exactly_what_cognito_accepts(stack: SignInStack) -> None:
    registered = register(stack.base, redirect_uris=["http://127.0.0.1:50001/callback"]).json()
    client_id = registered["client_id"]
    _, challenge = pkce()
    # Its own URI: signed in, and sent back with a code and the state.
    own = authorize(stack.cognito, client_id, "http://127.0.0.1:50001/callback", challenge)
    assert own.status_code == 302 and own.headers["location"].startswith(
        "http://127.0.0.1:50001/callback?code="
    )
    assert "state=s1" in own.headers["location"]
    # Another port, another path, localhost for 127.0.0.1: Cognito's exact matching refuses each,
    # on its own error page, never redirecting to the URI asked for.
    for other in (
        "http://127.0.0.1:50002/callback",
        "http://127.0.0.1:50001/callback/",
        "http://localhost:50001/callback",
    ):
        refused = authorize(stack.cognito, client_id, other, challenge)
        assert refused.status_code == 302
        assert refused.headers["location"].startswith(f"{stack.cognito.domain}/error?error=redirect_mismatch")
    # A public client must use PKCE.
    bare = authorize(stack.cognito, client_id, "http://127.0.0.1:50001/callback", None)
    assert "error=invalid_request" in bare.headers["location"] and "code=" not in bare.headers["location"]


def test_an_operator_allowed_redirect_registers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    allowed = ["https://agents.example.test/oauth/*", "myagent://callback"]
    with sign_in_stack(tmp_path, monkeypatch, oauth_allowed_redirects=allowed) as stack:
        uris = ["https://agents.example.test/oauth/callback", "myagent://callback"]
        answer = register(stack.base, redirect_uris=uris)
        assert answer.status_code == 201, answer.text
        assert stack.pool.app_client(answer.json()["client_id"])["CallbackURLs"] == uris  # type: ignore[index]
        refused = register(stack.base, redirect_uris=["https://agents.example.test/other"])
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri"


def test_registration_is_rate_limited_per_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with sign_in_stack(tmp_path, monkeypatch, oauth_registrations_per_hour=2) as stack:
        made = [register(stack.base, redirect_uris=[f"http://127.0.0.1:{6000 + i}/cb"]) for i in range(2)]
        assert [a.status_code for a in made] == [201, 201]
        third = register(stack.base, redirect_uris=["http://127.0.0.1:6002/cb"])
        assert third.status_code == 429 and third.json()["error"] == "too_many_registrations"
        assert 0 < int(third.headers["retry-after"]) <= 3600
        assert len(stack.pool.client_ids()) == 3  # the template's client and the two registrations


@pytest.mark.anyio
async def test_a_refreshed_token_works_and_a_revoked_clients_tokens_do_not(stack: SignInStack) -> None:
    client_id = register(stack.base, redirect_uris=[PY_REDIRECT]).json()["client_id"]
    tokens = sign_in_by_hand(stack.cognito, client_id, PY_REDIRECT)
    refreshed = httpx.post(
        f"{stack.cognito.domain}/oauth2/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": client_id,
        },
    ).json()
    async with bearer_client(f"{stack.base}/mcp", refreshed["access_token"]) as client:
        assert not (await client.call_tool("memory_list_brains", {})).is_error
    assert stack.live.container.sign_in is not None
    registration = stack.live.container.sign_in.registration
    assert registration is not None
    assert [c.client_id for c in registration.list() if c.active] == [client_id]
    registration.revoke(client_id)
    assert stack.pool.app_client(client_id) is None
    answer = httpx.post(
        f"{stack.base}/mcp",
        headers={
            "authorization": f"Bearer {refreshed['access_token']}",
            "accept": "application/json, text/event-stream",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )
    assert answer.status_code == 401 and "client_id" in answer.json()["error_description"]


def test_without_sign_in_configured_nothing_is_served(tmp_path: Path) -> None:
    # The laptop: open on loopback, nothing about OAuth.
    for live in start_server(tmp_path):
        for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            assert httpx.get(f"{live.base}{path}").status_code == 404
        assert httpx.post(f"{live.base}/register", json={"redirect_uris": [PY_REDIRECT]}).status_code == 404
        assert (
            "authorization_servers"
            not in httpx.get(f"{live.base}/.well-known/oauth-protected-resource/mcp").json()
        )
    # An issuer without its sign-in domain: the resource metadata names the issuer, as before.
    issuer = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x"
    (tmp_path / "b").mkdir()
    for live in start_server(tmp_path / "b", jwt_issuer=issuer, jwt_audience=["c"]):
        resource = httpx.get(f"{live.base}/.well-known/oauth-protected-resource/mcp").json()
        assert resource["authorization_servers"] == [issuer]
        assert httpx.get(f"{live.base}/.well-known/oauth-authorization-server").status_code == 401
        assert httpx.post(f"{live.base}/register", json={"redirect_uris": [PY_REDIRECT]}).status_code == 401
