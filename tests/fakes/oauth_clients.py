"""OAuthClients in memory: app clients by id, each with exactly the redirect URIs it was made for."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from cairn.ports.oauth_clients import ClientRefused, ClientRequest, IssuedClient


@dataclass
class MemoryOAuthClients:
    clients: dict[str, ClientRequest] = field(default_factory=dict)
    refuse: str | None = None
    """When set, `create` refuses with this reason (as Cognito refuses a callback it will not take)."""

    def create(self, request: ClientRequest) -> IssuedClient:
        if self.refuse is not None:
            raise ClientRefused(self.refuse)
        client_id = secrets.token_hex(13)
        self.clients[client_id] = request
        return IssuedClient(client_id, secrets.token_urlsafe(32) if request.confidential else None)

    def delete(self, client_id: str) -> None:
        self.clients.pop(client_id, None)
