"""The stack's Cognito user pool as far as machines see it, for scripts/aws_local.py: the issuer's
signing keys and discovery document, and the token endpoint's client-credentials grant for the app
clients template.yaml creates (their ids from aws_local_template.client_id, their scopes from the
template). The API function verifies its tokens with the stack's own JWT settings, so a token
from here is accepted exactly where a Cognito access token would be.

    <issuer>/.well-known/jwks.json            the pool's public key (RS256, generated at start)
    <issuer>/.well-known/openid-configuration  issuer, jwks_uri, token_endpoint
    <base>/oauth2/token                        grant_type=client_credentials, the client's id and
                                               secret as HTTP Basic (or client_id/client_secret
                                               form fields), optional `scope`

Access tokens are shaped like Cognito's: `sub` and `client_id` the client's id, `token_use`
`access`, `scope` the granted scopes (space-separated, `cairn/...`), `iss`, `iat`, `exp` (one
hour), `auth_time`, `jti`, `version` 2, no `aud`. Errors are RFC 6749 5.2's. Only the client
credentials grant is offered: the user sign-in flows need a browser and a user directory.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from aws_local_template import LocalStack, Template, client_id

PREFIX = "/_cognito"
"""Where the stand-in answers on the emulation's port: no route of the stack starts with it."""
TOKEN_TTL_S = 3600


@dataclass(frozen=True)
class AppClient:
    id: str
    secret: str | None
    flows: tuple[str, ...]
    scopes: tuple[str, ...]


def app_clients(template: Template, machine_secret: str) -> dict[str, AppClient]:
    """The template's app clients by id; the one that generates a secret gets `machine_secret`."""
    clients = {}
    for logical, props in template.app_clients().items():
        secret = machine_secret if props.get("GenerateSecret") else None
        flows = tuple(props.get("AllowedOAuthFlows") or ())
        scopes = tuple(props.get("AllowedOAuthScopes") or ())
        clients[client_id(logical)] = AppClient(client_id(logical), secret, flows, scopes)
    return clients


class CognitoStandIn:
    def __init__(self, stack: LocalStack, clients: dict[str, AppClient]) -> None:
        self.stack = stack
        self.clients = clients
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = uuid.uuid4().hex

    @property
    def token_url(self) -> str:
        return f"{self.stack.cognito_url}/oauth2/token"

    def machine_client(self) -> AppClient | None:
        return next((c for c in self.clients.values() if "client_credentials" in c.flows), None)

    def routes(self) -> list[Route]:
        issuer_path = f"{PREFIX}/{self.stack.pool_id}"
        return [
            Route(f"{issuer_path}/.well-known/jwks.json", self.jwks, methods=["GET"]),
            Route(f"{issuer_path}/.well-known/openid-configuration", self.discovery, methods=["GET"]),
            Route(f"{PREFIX}/oauth2/token", self.token, methods=["POST"]),
        ]

    async def jwks(self, request: Request) -> Response:
        jwk: dict[str, Any] = RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        jwk.pop("key_ops", None)
        return JSONResponse({"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]})

    async def discovery(self, request: Request) -> Response:
        scopes = sorted({s for c in self.clients.values() for s in c.scopes})
        return JSONResponse(
            {
                "issuer": self.stack.issuer,
                "jwks_uri": f"{self.stack.issuer}/.well-known/jwks.json",
                "token_endpoint": self.token_url,
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "scopes_supported": scopes,
                "response_types_supported": ["code", "token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            }
        )

    async def token(self, request: Request) -> Response:
        form = await request.form()
        basic = _basic(request.headers.get("authorization", ""))
        if basic is False:
            return _error(401, "invalid_client", "malformed HTTP Basic credentials")
        posted = (str(form.get("client_id", "")), str(form.get("client_secret", "")))
        claimed_id, claimed_secret = basic or posted
        client = self.clients.get(claimed_id)
        if client is None or client.secret is None:
            return _error(401, "invalid_client", "unknown client or a client without a secret")
        if not hmac.compare_digest(claimed_secret.encode(), client.secret.encode()):
            return _error(401, "invalid_client", "the client secret does not match")
        if form.get("grant_type") != "client_credentials":
            return _error(400, "unsupported_grant_type", "only grant_type=client_credentials is offered here")
        if "client_credentials" not in client.flows:
            return _error(400, "unauthorized_client", "this client may not use client credentials")
        asked = str(form.get("scope") or "").split()
        if any(scope not in client.scopes for scope in asked):
            return _error(400, "invalid_scope", "a scope asked for is not one of the client's")
        granted = asked or list(client.scopes)
        now = int(time.time())
        claims = {
            "sub": client.id,
            "client_id": client.id,
            "token_use": "access",
            "scope": " ".join(granted),
            "auth_time": now,
            "iss": self.stack.issuer,
            "exp": now + TOKEN_TTL_S,
            "iat": now,
            "jti": str(uuid.uuid4()),
            "version": 2,
        }
        token = jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": self.kid})
        answer = {"access_token": token, "expires_in": TOKEN_TTL_S, "token_type": "Bearer"}
        return JSONResponse(answer, headers={"cache-control": "no-store"})


def _basic(header: str) -> tuple[str, str] | bool | None:
    """(id, secret) from `Basic ...`; None without one; False when it is malformed."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        client, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return (client, secret) if sep else False


def _error(status: int, code: str, description: str) -> Response:
    headers = {"www-authenticate": 'Basic realm="cognito"'} if status == 401 else {}
    return JSONResponse({"error": code, "error_description": description}, status, headers=headers)
