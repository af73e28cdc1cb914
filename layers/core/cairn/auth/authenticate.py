"""One place that turns a request's credentials into a Principal.

In order:
1. API Gateway already verified the caller: its authorizer context in the Lambda event (JWT
   claims or the SigV4 IAM identity) is trusted as is.
2. `Authorization: Bearer <credential>`: the static token, then a Cairn API key (`cairn_...`),
   then a JWT verified here against the issuer's JWKS (embedded server, `sam local`).
3. No credential: the open principal, only where open serving is allowed (a loopback bind, or
   `allow_open`); otherwise Unauthorized.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from cairn.auth.access import LOCAL_OWNER
from cairn.auth.api_keys import PREFIX as KEY_PREFIX
from cairn.auth.api_keys import ApiKeyService
from cairn.auth.binding import Binding, holds_static, jwt_claims_kept, static_binding
from cairn.auth.claims import principal_from_apigw, principal_from_claims
from cairn.auth.errors import INVALID_TOKEN, AuthError
from cairn.auth.options import AuthOptions
from cairn.auth.principal import SCOPES, Principal, Via

OWNER = LOCAL_OWNER
"""The machine owner's subject: the open loopback caller and the static token's holder are one
principal, so what they create stays theirs whichever way they authenticate locally."""
OPEN = Principal("local", OWNER, frozenset(SCOPES), Via.open)
STATIC_CHECKS_KEPT = 4096


class Unauthenticated(AuthError):
    """No credential where one is required (401 without an error code, RFC 6750 3.1)."""

    def __init__(self) -> None:
        super().__init__("authentication required: send Authorization: Bearer <token>", "unauthorized")


def is_loopback(host: str) -> bool:
    if host in ("localhost", "::1"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def open_allowed(*, allow_open: bool, configured: bool, on_aws: bool, host: str) -> bool:
    """Serving without authentication: loopback only, unless forced; never implied on AWS."""
    if allow_open:
        return True
    return not configured and not on_aws and is_loopback(host)


class Authenticator:
    def __init__(
        self,
        options: AuthOptions,
        keys: ApiKeyService,
        *,
        http: httpx.Client | None = None,
        known_client: Callable[[str], bool] | None = None,
    ) -> None:
        """`known_client`: whether an access token's `client_id` outside the configured audiences is a
        client Cairn registered (auth/oauth/registered.py)."""
        self.options = options
        self.keys = keys
        self.open = options.open
        self._token = options.token.encode() if options.token else None
        self._static_checked: dict[tuple[str, str], bool] = {}
        """Sessions' static-token bindings checked against this process's token (one scrypt each)."""
        self._jwt: Any = None
        if options.jwt_issuer:
            from cairn.auth.jwks import JwksCache
            from cairn.auth.jwt_verify import JwtVerifier

            jwks_url = options.jwt_jwks_url or options.jwt_issuer.rstrip("/") + "/.well-known/jwks.json"
            client = http or httpx.Client(timeout=5.0)
            self._jwt = JwtVerifier(
                JwksCache(jwks_url, client),
                issuer=options.jwt_issuer,
                audiences=options.jwt_audience,
                id_token_audiences=options.jwt_id_token_audience,
                leeway_s=options.jwt_leeway_s,
                known_client=known_client,
            )

    def may_wait(self, authorization: str | None) -> bool:
        """Whether authenticating this header may wait on the network (a JWKS fetch for a JWT)."""
        return self._jwt is not None and authorization is not None and authorization.count(".") == 2

    def authenticate(
        self, authorization: str | None, aws_event: Mapping[str, Any] | None = None
    ) -> Principal:
        """The caller's principal; AuthError (401, or 403 for an unmapped IAM caller) otherwise."""
        if aws_event is not None:
            verified = principal_from_apigw(
                aws_event,
                tenant_claim=self.options.jwt_tenant_claim,
                default_tenant=self.options.jwt_default_tenant,
                scope_prefix=self.options.jwt_scope_prefix,
                user_groups=self.options.jwt_user_groups,
                iam_tenants=self.options.iam_tenants,
                iam_scopes=self.options.iam_scopes,
            )
            if verified is not None:
                return verified
        credential = _bearer(authorization)
        if credential is None:
            if self.open:
                return OPEN
            raise Unauthenticated()
        return self._credential(credential)[0]

    def _credential(self, credential: str) -> tuple[Principal, dict[str, Any] | None]:
        """A bearer credential's principal, and a JWT's verified claims (verified once)."""
        if self._token is not None and hmac.compare_digest(credential.encode(), self._token):
            return Principal(self.options.token_tenant, OWNER, frozenset(SCOPES), Via.static_token), None
        if credential.startswith(KEY_PREFIX):
            principal = self.keys.authenticate(credential)
            if principal is None:
                raise AuthError("unknown or revoked API key", INVALID_TOKEN)
            return principal, None
        if self._jwt is not None and credential.count(".") == 2:
            claims = self._jwt.verify(credential)
            try:
                return self._principal_of(claims), claims
            except AuthError as refused:  # a verified token this server maps to no principal
                refused.authentic = True
                raise
        raise AuthError("the bearer token is not valid for this server", INVALID_TOKEN)

    def _principal_of(self, claims: Mapping[str, Any]) -> Principal:
        """The principal of a JWT's verified claims, under this server's settings."""
        return principal_from_claims(
            claims,
            tenant_claim=self.options.jwt_tenant_claim,
            default_tenant=self.options.jwt_default_tenant,
            scope_prefix=self.options.jwt_scope_prefix,
            user_groups=self.options.jwt_user_groups,
        )

    @property
    def jwt_leeway_s(self) -> float:
        return self.options.jwt_leeway_s

    def bind(self, credential: str) -> tuple[Principal, Binding]:
        """The principal `credential` stands for now, and what a web UI session signed in with it
        stands for (auth/binding.py), from one look at it; AuthError when the credential is not
        accepted, or is not one a session can stand for."""
        credential = credential.strip()
        principal, claims = self._credential(credential)
        if principal.via is Via.api_key:
            return principal, Binding(via="api_key", key_id=principal.subject.removeprefix("key:"))
        if principal.via is Via.static_token:
            return principal, static_binding(credential)
        if claims is not None:
            kid, alg, key_print = self._jwt.signing_key(credential)
            tenant_claim = self.options.jwt_tenant_claim
            kept = jwt_claims_kept(claims, tenant_claim)
            return principal, Binding(
                via="jwt", claims=kept, tenant_claim=tenant_claim, kid=kid, alg=alg, key_print=key_print
            )
        raise AuthError("this credential cannot start a web UI session", INVALID_TOKEN)

    def recall(self, binding: Binding) -> Principal:
        """The principal a session's binding stands for now, as `authenticate` would answer the
        credential it was made from; AuthError when that would be refused."""
        if binding.via == "api_key":
            principal = self.keys.principal_of(binding.key_id or "")
            if principal is None:
                raise AuthError("unknown or revoked API key", INVALID_TOKEN)
            return principal
        if binding.via == "static_token":
            if not self._holds_static(binding):
                raise AuthError("the server's token has changed since this session began", INVALID_TOKEN)
            return Principal(self.options.token_tenant, OWNER, frozenset(SCOPES), Via.static_token)
        jwt, claims, kid, alg, key_print = (
            self._jwt,
            binding.claims,
            binding.kid,
            binding.alg,
            binding.key_print,
        )
        if jwt is None or claims is None or kid is None or alg is None or key_print is None:
            raise AuthError("the server no longer takes this session's tokens", INVALID_TOKEN)
        if binding.tenant_claim not in (None, self.options.jwt_tenant_claim):
            raise AuthError("the server reads the tenant from another claim now", INVALID_TOKEN)
        jwt.recheck(claims, kid, alg, key_print)
        return self._principal_of(claims)

    def _holds_static(self, binding: Binding) -> bool:
        if self.options.token is None:
            return False
        seen = (binding.salt or "", binding.token_scrypt or "")
        held = self._static_checked.get(seen)
        if held is None:
            held = holds_static(binding, self.options.token)
            if len(self._static_checked) >= STATIC_CHECKS_KEPT:
                self._static_checked.clear()
            self._static_checked[seen] = held
        return held


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, credential = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise AuthError("the Authorization header must be `Bearer <token>`", INVALID_TOKEN)
    return credential.strip()
