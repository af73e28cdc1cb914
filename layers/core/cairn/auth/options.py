"""What the Authenticator is told by the composition root: which credentials this server accepts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AuthOptions:
    open: bool = False
    """Requests without a credential are the open owner (a loopback bind, or allow_open)."""
    token: str | None = field(default=None, repr=False)
    token_tenant: str = "local"
    jwt_issuer: str | None = None
    jwt_jwks_url: str | None = None
    """Default: `<issuer>/.well-known/jwks.json`."""
    jwt_audience: Sequence[str] = ()
    jwt_id_token_audience: Sequence[str] | None = None
    jwt_leeway_s: float = 60.0
    jwt_tenant_claim: str = "tenant"
    jwt_default_tenant: str | None = None
    jwt_scope_prefix: str | None = None
    jwt_user_groups: bool = False
    iam_tenants: Mapping[str, str] = field(default_factory=dict)
    iam_scopes: Mapping[str, list[str]] = field(default_factory=dict)
