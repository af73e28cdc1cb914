"""A live Cairn (uvicorn on 127.0.0.1) that signs MCP clients in through the fake Cognito: JWTs from
the fake's issuer, Cairn's own authorization-server metadata naming the fake's sign-in domain, and
dynamic registration making app clients in the pool on moto. Plus the official Python MCP SDK's
OAuth client, with no client id configured: it discovers, registers, signs in, calls tools."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.integration.mcp.conftest import LiveServer, start_server
from tests.support.cognito_pool import CognitoPool, cognito_pool
from tests.support.fake_cognito import FakeCognito, fake_cognito

TENANT = "dev"


@dataclass
class SignInStack:
    live: LiveServer
    pool: CognitoPool
    cognito: FakeCognito

    @property
    def base(self) -> str:
        return self.live.base


@contextmanager
def sign_in_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> Iterator[SignInStack]:
    with cognito_pool(monkeypatch) as pool, fake_cognito(pool.app_client, pool.pool_id) as cognito:
        configured: dict[str, Any] = {
            "jwt_issuer": cognito.issuer,
            "jwt_audience": [pool.static_client_id],
            "jwt_scope_prefix": "cairn/",
            "jwt_user_groups": True,
            "jwt_default_tenant": TENANT,
            "cognito_domain": cognito.domain,
            "cognito_user_pool_id": pool.pool_id,
            "aws_endpoint_url": pool.endpoint,
            "aws_region": "us-east-1",
            "oauth_registrations_per_hour": 100,
            **settings,
        }
        with contextmanager(start_server)(tmp_path, **configured) as live:
            yield SignInStack(live, pool, cognito)


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """Stands in for the user's browser: opens the authorize URL (the fake signs the test user in
    at once) and hands the code its redirect carries to the SDK's callback."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.callbacks: list[str] = []

    async def open(self, authorization_url: str) -> None:
        self.opened.append(authorization_url)
        async with httpx.AsyncClient() as http:
            answer = await http.get(authorization_url)
        assert answer.status_code == 302, (answer.status_code, answer.text)
        self.callbacks.append(answer.headers["location"])

    async def callback(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(self.callbacks[-1]).query)
        assert "code" in query, f"the sign-in did not come back with a code: {self.callbacks[-1]}"
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])


def python_client(url: str, redirect_uri: str, storage: MemoryStorage, browser: Browser) -> Client:
    """The official MCP client with the SDK's OAuth provider and no client id: it registers itself."""
    metadata = OAuthClientMetadata(
        client_name="Cairn sign-in test (Python SDK)",
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    provider = OAuthClientProvider(url, metadata, storage, browser.open, browser.callback)
    http = httpx2.AsyncClient(auth=provider, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


def register(base: str, **metadata: Any) -> httpx.Response:
    """POST <base>/register without a credential, as a client does before it has a token."""
    return httpx.post(f"{base}/register", json=metadata, timeout=30)


def authorize(
    cognito: FakeCognito, client_id: str, redirect_uri: str, challenge: str | None
) -> httpx.Response:
    """The browser at the sign-in domain's authorize endpoint (the redirect is not followed)."""
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "s1"}
    if challenge is not None:
        params |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    return httpx.get(f"{cognito.domain}/oauth2/authorize", params=params, timeout=30)


def pkce() -> tuple[str, str]:
    """A code verifier and its S256 challenge."""
    import base64
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sign_in_by_hand(
    cognito: FakeCognito, client_id: str, redirect_uri: str, *, secret: str | None = None
) -> dict[str, Any]:
    """The authorization code flow with PKCE, step by step: what any client does after registering.
    A confidential client sends its secret in the body (client_secret_post)."""
    verifier, challenge = pkce()
    answer = authorize(cognito, client_id, redirect_uri, challenge)
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(redirect_uri), location
    code = parse_qs(urlsplit(location).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": client_id,
        "code_verifier": verifier,
    }
    if secret is not None:
        form["client_secret"] = secret
    tokens = httpx.post(f"{cognito.domain}/oauth2/token", data=form, timeout=30)
    assert tokens.status_code == 200, tokens.text
    issued: dict[str, Any] = tokens.json()
    return issued


def bearer_client(url: str, access_token: str) -> Client:
    """The official MCP client sending a token obtained by hand."""
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {access_token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))
