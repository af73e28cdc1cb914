"""The documented path of each client in docs/SIGN_IN.md: the registration it sends (its redirect
URIs and token endpoint authentication, as the client sends them), the app client Cognito gets for
exactly those URIs, the sign-in through the redirect URI the client then uses, and a tool call with
the token. Where Cognito's exact matching bites (a loopback port that changes), the test shows it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.sign_in import (
    SignInStack,
    authorize,
    bearer_client,
    pkce,
    register,
    sign_in_by_hand,
    sign_in_stack,
)

pytestmark = pytest.mark.integration


@dataclass
class ClientShape:
    name: str
    registration: dict[str, Any]
    signs_in_at: str
    """The redirect URI the client sends to the authorize endpoint."""
    refused_at: list[str] = field(default_factory=list)
    """Redirect URIs the same client may also use, which Cognito's exact matching refuses."""


CLIENTS = [
    ClientShape(
        "Claude Code",
        {
            "client_name": "Claude Code (cairn)",
            "redirect_uris": ["http://localhost:54212/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        "http://localhost:54212/callback",
        # A later session picks another port unless --callback-port / MCP_OAUTH_CALLBACK_PORT fixes it.
        ["http://localhost:61001/callback"],
    ),
    ClientShape(
        "Cursor",
        {
            "client_name": "Cursor",
            "redirect_uris": [
                "cursor://anysphere.cursor-mcp/oauth/callback",
                "https://www.cursor.com/agents/mcp/oauth/callback",
                "http://localhost:8787/callback",
            ],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        "cursor://anysphere.cursor-mcp/oauth/callback",
    ),
    ClientShape(
        "VS Code",
        {
            "client_name": "Visual Studio Code",
            "redirect_uris": [
                "https://insiders.vscode.dev/redirect",
                "https://vscode.dev/redirect",
                "http://127.0.0.1/",
                "http://127.0.0.1:33418/",
            ],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        "http://127.0.0.1:33418/",
        # When 33418 is taken VS Code listens on a random port, which it did not register.
        ["http://127.0.0.1:59656/"],
    ),
    ClientShape(
        "MCP Inspector",
        {
            "client_name": "MCP Inspector",
            "client_uri": "https://github.com/modelcontextprotocol/inspector",
            "redirect_uris": ["http://localhost:6274/oauth/callback/debug"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        "http://localhost:6274/oauth/callback/debug",
    ),
    ClientShape(
        "claude.ai",
        {
            "client_name": "claudeai",
            "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post",
        },
        "https://claude.ai/api/mcp/auth_callback",
    ),
]


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SignInStack]:
    with sign_in_stack(tmp_path, monkeypatch) as running:
        yield running


@pytest.mark.anyio
@pytest.mark.parametrize("shape", CLIENTS, ids=[c.name for c in CLIENTS])
async def test_each_documented_client_registers_and_signs_in(shape: ClientShape, stack: SignInStack) -> None:
    answer = register(stack.base, **shape.registration)
    assert answer.status_code == 201, answer.text
    info = answer.json()
    uris = shape.registration["redirect_uris"]
    assert info["redirect_uris"] == uris
    assert info["token_endpoint_auth_method"] == shape.registration["token_endpoint_auth_method"]
    app = stack.pool.app_client(info["client_id"])
    assert app is not None and app["CallbackURLs"] == uris  # exactly, and nothing else
    secret = info.get("client_secret")
    assert (secret is not None) == (shape.registration["token_endpoint_auth_method"] != "none")

    tokens = sign_in_by_hand(stack.cognito, info["client_id"], shape.signs_in_at, secret=secret)

    async with bearer_client(f"{stack.base}/mcp", tokens["access_token"]) as client:
        result = await client.call_tool("memory_list_brains", {})
    assert not result.is_error, result.content
    _, challenge = pkce()
    for other in shape.refused_at:
        refused = authorize(stack.cognito, info["client_id"], other, challenge)
        assert "error=redirect_mismatch" in refused.headers["location"]


def test_a_confidential_client_must_present_its_secret(stack: SignInStack) -> None:
    shape = next(c for c in CLIENTS if c.name == "claude.ai")
    info = register(stack.base, **shape.registration).json()
    verifier, challenge = pkce()
    location = authorize(stack.cognito, info["client_id"], shape.signs_in_at, challenge).headers["location"]
    code = httpx.URL(location).params["code"]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": shape.signs_in_at,
        "client_id": info["client_id"],
        "code_verifier": verifier,
    }
    refused = httpx.post(f"{stack.cognito.domain}/oauth2/token", data=form)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_client"
