"""OAuthClients: app clients of the authorization server users sign in with, made one per
registering MCP client (RFC 7591 dynamic registration, services in auth/oauth/).

Adapters: Cognito's `CreateUserPoolClient` (AWS, adapters/aws/cognito_clients.py) and an in-memory
fake (tests). The authorization server matches redirect URIs exactly, so a client is made for
exactly the URIs it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cairn.domain.errors import CairnError


@dataclass(frozen=True)
class ClientRequest:
    name: str
    """A label for the operator (already cut to what the authorization server takes)."""
    redirect_uris: Sequence[str]
    scopes: Sequence[str]
    confidential: bool = False
    """True: the client authenticates at the token endpoint with a secret; False: public (PKCE)."""


@dataclass(frozen=True)
class IssuedClient:
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    """Only for a confidential client; handed to the registering client once, never stored."""


class ClientRefused(CairnError):
    """The authorization server refused the request (a redirect URI it will not take): `message`
    is its reason, safe to show the registering client."""

    code = "invalid_client_metadata"


class OAuthClients(Protocol):
    def create(self, request: ClientRequest) -> IssuedClient:
        """A new app client for exactly `request.redirect_uris`. Raises ClientRefused when the
        authorization server will not make it, Unavailable when it cannot be reached or is full."""

    def delete(self, client_id: str) -> None:
        """Remove the app client (idempotent: an unknown id is not an error)."""
