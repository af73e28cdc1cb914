"""Cairn's own authorization-server metadata (RFC 8414, and the OpenID Connect discovery form).

Cognito's discovery document names no `code_challenge_methods_supported` (MCP clients refuse
metadata without it) and no registration endpoint (clients without a client id then give up).
So Cairn publishes its own, with itself as the issuer: Cognito's sign-in domain endpoints (users
still sign in at Cognito, and Cognito still issues and signs the tokens), S256, and Cairn's
registration endpoint. The issuer is this server's base URL as the client reached it, the same
URL the protected-resource metadata names, so the two documents agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cairn.auth.jwks import redact
from cairn.auth.oauth.registered import RegisteredClients
from cairn.auth.oauth.registration import AUTH_METHODS, GRANTS, ClientRegistration

REGISTER_PATH = "/register"
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
OPENID_PATH = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class SignInEndpoints:
    """Where the user pool signs users in and issues tokens."""

    authorize: str
    token: str
    revoke: str
    userinfo: str
    jwks: str
    scopes: tuple[str, ...]

    @classmethod
    def cognito(cls, domain: str, jwks: str, scopes: Sequence[str]) -> SignInEndpoints:
        """`domain`: the user pool's sign-in domain (`https://<prefix>.auth.<region>.amazoncognito.com`);
        `jwks` is published without the user, password or query it may be configured with (the
        document is public, and a JWKS fetched with credentials is none of its readers' business)."""
        base = domain.rstrip("/")
        return cls(
            authorize=f"{base}/oauth2/authorize",
            token=f"{base}/oauth2/token",
            revoke=f"{base}/oauth2/revoke",
            userinfo=f"{base}/oauth2/userInfo",
            jwks=redact(jwks),
            scopes=tuple(scopes),
        )


@dataclass(frozen=True)
class SignIn:
    """What the composition root hands the HTTP app when Cairn is the clients' authorization server."""

    endpoints: SignInEndpoints
    registered: RegisteredClients
    """The clients registration made (still honoured while registration is switched off)."""
    registration: ClientRegistration | None = None
    """None: no dynamic registration (clients need a client id configured)."""


def server_metadata(issuer: str, sign_in: SignIn) -> dict[str, Any]:
    """The RFC 8414 document for `issuer` (this server's base URL)."""
    e = sign_in.endpoints
    document: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": e.authorize,
        "token_endpoint": e.token,
        "revocation_endpoint": e.revoke,
        "jwks_uri": e.jwks,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(GRANTS),
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": list(e.scopes),
    }
    if sign_in.registration is not None:
        document["registration_endpoint"] = f"{issuer}{REGISTER_PATH}"
    return document


def openid_configuration(issuer: str, sign_in: SignIn) -> dict[str, Any]:
    """The same, with the members OpenID Connect discovery requires (clients that look there)."""
    return {
        **server_metadata(issuer, sign_in),
        "userinfo_endpoint": sign_in.endpoints.userinfo,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }
