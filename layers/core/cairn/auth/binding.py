"""What a web UI session stands for (auth/ui_sessions.py): enough for the Authenticator to decide
again, on each request and under the server's configuration then, whether the credential the
session signed in with would still be accepted, and as whom. Never the credential itself:
- an API key: its id (the key's record is read again; revoked, it holds no more);
- the static token: a salted scrypt of it, so a copy of the store does not give a weak token away;
- a JWT: of the claims the verifier accepted, those these checks read (`SESSION_CLAIMS` and the
  tenant claim configured then, never an ID token's email, name or phone number), and the key
  that signed them (its kid and a print of the key itself). The signature is not checked again;
  the same key must still be in the issuer's JWKS, and the issuer, the audience, the times and
  the mapping to a tenant and scopes are checked again, as for the token in a header. A session
  made under another tenant claim setting ends: it does not hold the claim that now names the
  tenant, and without it a default tenant would answer.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

SESSION_CLAIMS = (
    # JwtVerifier.recheck
    *("iss", "aud", "exp", "nbf", "iat", "token_use", "client_id"),
    # principal_from_claims, besides the tenant claim
    *("sub", "scope", "scp", "cognito:groups", "username", "cognito:username", "libs"),
)
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
"""scrypt's cost (16 MiB, ~50 ms here): paid once per session and process, not per request."""


class Binding(BaseModel):
    via: Literal["api_key", "static_token", "jwt"]
    key_id: str | None = None
    salt: str | None = None
    token_scrypt: str | None = None
    claims: dict[str, Any] | None = None
    tenant_claim: str | None = None
    """The tenant claim configured when the session began (None in a session of an earlier
    release, which kept every claim)."""
    kid: str | None = None
    alg: str | None = None
    key_print: str | None = None
    """The SHA-256 of the JWT's signing key (JwtVerifier.key_print): a key replaced under the same
    kid ends the session."""


def jwt_claims_kept(claims: Mapping[str, Any], tenant_claim: str) -> dict[str, Any]:
    return {name: claims[name] for name in (*SESSION_CLAIMS, tenant_claim) if name in claims}


def static_binding(token: str) -> Binding:
    salt = os.urandom(16)
    return Binding(via="static_token", salt=salt.hex(), token_scrypt=_scrypt(token, salt).hex())


def holds_static(binding: Binding, token: str) -> bool:
    """Whether the binding was made from `token`."""
    if binding.salt is None or binding.token_scrypt is None:
        return False
    try:
        salt, expected = bytes.fromhex(binding.salt), bytes.fromhex(binding.token_scrypt)
    except ValueError:
        return False
    return hmac.compare_digest(_scrypt(token, salt), expected)


def _scrypt(token: str, salt: bytes) -> bytes:
    return hashlib.scrypt(token.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
