"""From verified identity data to a Principal: JWT claims (ours or API Gateway's) and SigV4 callers.

Scopes are the union of `scope` (space-separated), `scp` (list or string) and `cognito:groups` (a
group named like a scope grants it), keeping only the known SCOPES. API Gateway HTTP APIs hand the
Lambda every claim as a string, lists included (`"[a b]"`), which `_names` reads too.

With `user_groups` (a Cognito pool whose app clients may ask for every Cairn scope), a token issued
to a user (it names a `username`) gets only its groups' scopes, narrowed by the Cairn scopes its
`scope` claim names if it names any: any user of the pool may ask the sign-in client for
`brains:admin`, so the request alone must not grant it. A machine token (client credentials, no
user) keeps its `scope` claim: the client's allowed scopes are what an administrator granted.

IAM callers are mapped by configuration. A key is an account id (matched exactly), or a prefix of
the caller's ARN or callerId; an assumed-role ARN (`arn:aws:sts::<acct>:assumed-role/<role>/<session>`)
is also tried as its role's ARN (`arn:aws:iam::<acct>:role/<role>`, without the role's path). A
prefix matches only at a boundary (the key ends in `/` or `:`, or the caller's ARN continues with
one), so `role/Dev` does not match `role/DevOps`. The longest matching key wins; `*` matches every
caller and loses to any other key.

An IAM caller's subject is its role's ARN, not the session's: every session of a role (each
`mcp-proxy-for-aws` start, each refreshed credential) is one owner, so its private brains outlive
the session. The assumed-role ARN does not carry the role's path, so the subject of a role
`role/team/agents` is `arn:aws:iam::<acct>:role/agents` (role names are unique in an account
regardless of path, so it names one role). IAM users and federated users keep their ARN.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from cairn.auth.errors import FORBIDDEN, AuthError
from cairn.auth.principal import SCOPES, Principal, Via

KNOWN_SCOPES = frozenset(SCOPES)
ANY_CALLER = "*"
_MAX_TENANT = 128
T = TypeVar("T")
_ASSUMED_ROLE = re.compile(r"^arn:([\w-]+):sts::(\d{12}):assumed-role/([^/]+)/")


_MAX_LIBS = 1000


def principal_from_claims(
    claims: Mapping[str, Any],
    *,
    tenant_claim: str = "tenant",
    default_tenant: str | None = None,
    scope_prefix: str | None = None,
    user_groups: bool = False,
) -> Principal:
    """`scope_prefix` is stripped from scope names first (Cognito's `<resource server>/documents:read`)."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject.strip():
        raise AuthError("the token has no subject (sub)")
    tenant = claims.get(tenant_claim)
    if tenant is None:
        tenant = default_tenant
    if tenant is None:
        raise AuthError(f"the token has no {tenant_claim!r} claim and no default tenant is configured")
    if not isinstance(tenant, str) or not tenant.strip() or len(tenant) > _MAX_TENANT:
        raise AuthError(f"the token's {tenant_claim!r} claim is not a tenant name")
    return Principal(
        tenant=tenant.strip(),
        subject=subject,
        scopes=scopes_from_claims(claims, scope_prefix=scope_prefix, user_groups=user_groups),
        via=Via.jwt,
        brains=libraries_from_claims(claims),
    )


def libraries_from_claims(claims: Mapping[str, Any]) -> frozenset[str] | None:
    """The `libs` claim (Mnemosyne's per-turn tokens): the brain ids the token may use, however
    many its tenant holds; an empty list reads nothing. None when the token has no such claim."""
    if "libs" not in claims:
        return None
    libs = claims["libs"]
    if not isinstance(libs, list) or not all(isinstance(b, str) and b for b in libs) or len(libs) > _MAX_LIBS:
        raise AuthError("the token's 'libs' claim is not a list of library ids")
    return frozenset(libs)


def scopes_from_claims(
    claims: Mapping[str, Any], *, scope_prefix: str | None = None, user_groups: bool = False
) -> frozenset[str]:
    def known(*names: str) -> frozenset[str]:
        found = [name for claim in names for name in _names(claims.get(claim))]
        if scope_prefix:
            found = [name.removeprefix(scope_prefix) for name in found]
        return frozenset(name for name in found if name in KNOWN_SCOPES)

    if not user_groups:
        return known("scope", "scp", "cognito:groups")
    if not any(isinstance(claims.get(c), str) and claims[c] for c in ("username", "cognito:username")):
        return known("scope", "scp")
    granted, asked = known("cognito:groups"), known("scope", "scp")
    return granted & asked if asked else granted


def principal_from_iam(
    identity: Mapping[str, Any],
    *,
    tenants: Mapping[str, str],
    scopes: Mapping[str, Iterable[str]],
) -> Principal:
    """A SigV4 caller (API Gateway's `requestContext.authorizer.iam`); unmapped callers are refused."""
    account = identity.get("accountId")
    user_arn = identity.get("userArn")
    caller_id = identity.get("callerId")
    exact = [v for v in (account,) if isinstance(v, str) and v]
    prefixed = [v for v in (user_arn, _role_arn(user_arn), caller_id) if isinstance(v, str) and v]
    tenant = _longest_match(tenants, exact, prefixed)
    if tenant is None:
        raise AuthError("this AWS caller is not mapped to a tenant", FORBIDDEN)
    granted = _longest_match(scopes, exact, prefixed) or ()
    arn = next((v for v in (_role_arn(user_arn), user_arn) if isinstance(v, str) and v), None)
    bare = next((v for v in (caller_id, account) if isinstance(v, str) and v), None)
    # A caller id or an account is no ARN: named in the `aws:` namespace only IAM callers have, so a
    # token whose `sub` happens to equal one owns nothing of theirs (auth/access.py RESERVED_SUBJECTS).
    subject = arn or (f"aws:{bare}" if bare else None)
    if subject is None:
        raise AuthError("the request's IAM identity is empty", FORBIDDEN)
    return Principal(
        tenant=tenant,
        subject=subject,
        scopes=frozenset(s for s in granted if s in KNOWN_SCOPES),
        via=Via.iam,
    )


def principal_from_apigw(
    event: Mapping[str, Any],
    *,
    tenant_claim: str = "tenant",
    default_tenant: str | None = None,
    scope_prefix: str | None = None,
    user_groups: bool = False,
    iam_tenants: Mapping[str, str] | None = None,
    iam_scopes: Mapping[str, Iterable[str]] | None = None,
) -> Principal | None:
    """The caller API Gateway (HTTP API, payload 2.0) already authenticated; None if it did not.

    None means the route had no JWT or IAM authorizer: the caller may still present an API key.
    """
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    if not isinstance(authorizer, Mapping):
        return None
    jwt = authorizer.get("jwt")
    if isinstance(jwt, Mapping) and isinstance(jwt.get("claims"), Mapping):
        return principal_from_claims(
            jwt["claims"],
            tenant_claim=tenant_claim,
            default_tenant=default_tenant,
            scope_prefix=scope_prefix,
            user_groups=user_groups,
        )
    iam = authorizer.get("iam")
    if isinstance(iam, Mapping):
        return principal_from_iam(iam, tenants=iam_tenants or {}, scopes=iam_scopes or {})
    return None


def _names(value: Any) -> list[str]:
    """Names from a claim: a list, a space- or comma-separated string, or API Gateway's `"[a b]"`."""
    if isinstance(value, (list, tuple)):
        return [name for item in value if isinstance(item, str) for name in _names(item)]
    if not isinstance(value, str):
        return []
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
        except ValueError:
            text = text[1:-1]
        else:
            return _names(parsed) if isinstance(parsed, list) else []
    return text.replace(",", " ").split()


def _role_arn(user_arn: Any) -> str | None:
    match = _ASSUMED_ROLE.match(user_arn) if isinstance(user_arn, str) else None
    if match is None:
        return None
    partition, account, role = match.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"


def _longest_match(table: Mapping[str, T], exact: list[str], prefixed: list[str]) -> T | None:
    best: str | None = None
    for key in table:
        hit = key == ANY_CALLER or key in exact or any(_prefix_at_boundary(key, v) for v in prefixed)
        if hit and (best is None or best == ANY_CALLER or (key != ANY_CALLER and len(key) > len(best))):
            best = key
    return None if best is None else table[best]


def _prefix_at_boundary(key: str, value: str) -> bool:
    if not key or not value.startswith(key):
        return False
    return len(value) == len(key) or key[-1] in "/:" or value[len(key)] in "/:"
