"""Cairn API keys behind API Gateway. Every route of the HTTP API is open at the gateway
(template.yaml), so the API function decides: a Cairn key as `Authorization: Bearer cairn_key_…` on
/v1 (the Jeffs Brain store SDK's `apiKey`) or as `x-api-key` on /zengram (zengram's wrapper), a
Cognito JWT it verifies against the pool's JWKS, or nothing, which it refuses with 401. The events
carry no authorizer context, as API Gateway sends them for those routes; the function runs with the
environment the template gives it. The key is made the way docs/DEPLOY.md shows: POST
/v1/admin/keys with an administrator's token."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.entrypoints.aws_lambda import Handler, api_handler
from tests.events.apigw import LambdaContext, body_of, http_event, json_of
from tests.fakes.container import fake_container
from tests.integration.auth.jwks_server import jwks_server
from tests.unit.auth.tokens import SigningKey, jwks, rsa_key
from tests.unit.test_template_settings import environments

CTX = LambdaContext()
BASE = "https://abc123.execute-api.us-east-1.amazonaws.com"


@pytest.fixture(scope="module")
def pool_key() -> SigningKey:
    return rsa_key("cognito-2026")


@pytest.fixture
def stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool_key: SigningKey
) -> Iterator[tuple[Handler, str]]:
    """The API function with the template's environment; Cognito's JWKS served on loopback."""
    env = environments()["ApiFunction"]
    with jwks_server(jwks(pool_key)) as keys:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("CAIRN_JWT_JWKS_URL", keys.url)
        yield api_handler(lambda: fake_container(tmp_path)), env["CAIRN_JWT_ISSUER"]


def user_token(key: SigningKey, issuer: str, *groups: str, name: str = "alice") -> str:
    """A Cognito access token of a signed-in user (the sign-in client, the user's groups)."""
    now = int(time.time())
    return key.sign(
        {"iss": issuer, "client_id": "SignInClient", "token_use": "access", "iat": now, "exp": now + 3600,
         "sub": f"u-{name}", "username": name, "scope": "openid cairn/documents:read cairn/documents:write "
         "cairn/brains:admin", "cognito:groups": list(groups)}
    )  # fmt: skip


def call(h: Handler, method: str, path: str, *, headers: dict[str, str] | None = None, **event: Any) -> Any:
    """What API Gateway hands the function on a route without an authorizer."""
    return h(http_event(method, path, headers=headers, anonymous=True, **event), CTX)


def bearer(credential: str) -> dict[str, str]:
    return {"authorization": f"Bearer {credential}"}


def make_key(h: Handler, admin: str, scopes: list[str]) -> str:
    created = call(
        h, "POST", "/v1/admin/keys", headers=bearer(admin), body={"name": "agents", "scopes": scopes}
    )
    assert created["statusCode"] == 201, body_of(created)
    key: str = json_of(created)["key"]
    assert key.startswith("cairn_key_")
    return key


def test_a_key_made_by_an_admin_reaches_v1_and_zengram_through_the_function(
    stack: tuple[Handler, str], pool_key: SigningKey
) -> None:
    h, issuer = stack
    admin = user_token(pool_key, issuer, "documents:read", "documents:write", "brains:admin")
    made = call(h, "POST", "/v1/brains", headers=bearer(admin), body={"name": "Team", "visibility": "tenant"})
    assert made["statusCode"] == 201, body_of(made)  # a JWT on /v1, verified by the function
    key = make_key(h, admin, ["documents:read", "documents:write"])

    listed = call(h, "GET", "/v1/brains", headers=bearer(key))
    raw = {**bearer(key), "content-type": "application/octet-stream"}
    kiln = {"path": "notes/kiln.md"}
    put = call(h, "PUT", "/v1/brains/team/documents", query=kiln, body=b"The kiln is hot.", headers=raw)
    read = call(
        h, "GET", "/v1/brains/team/documents/read", query={"path": "notes/kiln.md"}, headers=bearer(key)
    )
    memory = {"type": "fact", "content": "Glaze fires at 1240 C.", "source_agent": "potter"}
    stored = call(h, "POST", "/zengram/memory", headers={"x-api-key": key}, body=memory)
    denied = call(h, "POST", "/v1/brains", headers=bearer(key), body={"name": "Mine"})

    assert listed["statusCode"] == 200 and [b["slug"] for b in json_of(listed)["items"]] == ["team"]
    assert put["statusCode"] == 204 and body_of(read) == b"The kiln is hot."
    assert stored["statusCode"] in (200, 201), body_of(stored)
    assert denied["statusCode"] == 403 and json_of(denied)["code"] == "forbidden"  # the key's scopes hold


def test_without_a_valid_credential_the_function_refuses_every_route(
    stack: tuple[Handler, str], pool_key: SigningKey
) -> None:
    h, issuer = stack
    forged = user_token(rsa_key("cognito-2026"), issuer, "brains:admin")  # the pool's kid, another key
    metadata = f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource'

    nothing = call(h, "GET", "/v1/brains")
    unknown = call(h, "GET", "/v1/brains", headers=bearer("cairn_key_" + "0" * 40))
    bad_jwt = call(h, "GET", "/v1/brains", headers=bearer(forged))
    zengram = call(h, "GET", "/zengram/stats")
    zengram_bad = call(h, "GET", "/zengram/stats", headers={"x-api-key": "cairn_key_nope"})

    for refused in (nothing, unknown, bad_jwt):
        assert refused["statusCode"] == 401
        assert refused["headers"]["www-authenticate"].startswith(metadata)
    assert "invalid_token" not in nothing["headers"]["www-authenticate"]
    assert 'error="invalid_token"' in unknown["headers"]["www-authenticate"]
    assert 'error="invalid_token"' in bad_jwt["headers"]["www-authenticate"]
    assert zengram["statusCode"] == 401 and json_of(zengram) == {"error": "Missing API key"}
    assert zengram_bad["statusCode"] == 401 and json_of(zengram_bad) == {"error": "Invalid API key"}


def test_a_revoked_key_is_refused_at_once(stack: tuple[Handler, str], pool_key: SigningKey) -> None:
    h, issuer = stack
    admin = user_token(pool_key, issuer, "documents:read", "brains:admin")
    key = make_key(h, admin, ["documents:read"])
    (record,) = json_of(call(h, "GET", "/v1/admin/keys", headers=bearer(admin)))["items"]

    assert call(h, "GET", "/v1/brains", headers=bearer(key))["statusCode"] == 200
    revoked = call(h, "DELETE", f"/v1/admin/keys/{record['id']}", headers=bearer(admin))
    assert revoked["statusCode"] == 200 and json_of(revoked)["revoked_at"], body_of(revoked)
    assert call(h, "GET", "/v1/brains", headers=bearer(key))["statusCode"] == 401
