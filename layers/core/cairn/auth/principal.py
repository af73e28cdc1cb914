"""The caller as the core sees it, whatever proved who it is (JWT, IAM, API key, static token)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

READ = "documents:read"
WRITE = "documents:write"
ADMIN = "brains:admin"
SCOPES = (READ, WRITE, ADMIN)  # the Jeffs store protocol's names
PUBLIC = "public"
"""What an operation that needs no credential declares (a health check): every caller has it, the
anonymous one included. Never granted, so never in SCOPES."""


class Via(StrEnum):
    jwt = "jwt"
    iam = "iam"
    api_key = "api_key"
    static_token = "static_token"
    open = "open"  # no authentication: the embedded server on loopback only
    anonymous = "anonymous"  # no credential, on an endpoint that lets it reach public operations
    job = "job"  # a background job, acting for the principal that started it


@dataclass(frozen=True)
class Principal:
    tenant: str
    subject: str
    scopes: frozenset[str]
    via: Via
    brains: frozenset[str] | None = None
    """An explicit allow-list of brain ids (an API key limited to some brains); None: no list."""

    def has(self, scope: str) -> bool:
        return scope == PUBLIC or scope in self.scopes

    @property
    def key(self) -> str:
        """Who it is for what is counted per caller (its rate, its requests running): tenant and
        subject."""
        return f"{self.tenant}\x00{self.subject}"


ANONYMOUS = Principal("", "anonymous", frozenset(), Via.anonymous, frozenset())
"""The caller without a credential where one may come in at all (Mnemosyne's endpoint): it may do
what needs PUBLIC and nothing else, and reads no brain (an empty allow-list)."""
