"""Verifying a JWT bearer token ourselves, when no API Gateway authorizer did it first.

Checks, in order: a well-formed header; `alg` among the allowed asymmetric algorithms (never `none`
or HMAC, so an HS256 token "signed" with the RSA public key fails before any key is touched); a
`kid` the issuer's JWKS holds, whose JWK alg/kty/crv fit `alg`; the signature; `iss`; `aud` among
this server's audiences (RFC 8707); `exp`, `nbf` and `iat` with leeway.

A token without `aud` passes the audience check only as an access token (`token_use: access`)
whose `client_id` is among the audiences: Cognito's access tokens name their app client that way
and carry no `aud`, and API Gateway's JWT authorizer accepts them by the same rule. A client made
by Cairn's dynamic registration is not among the configured audiences: `known_client` (the
registered clients, auth/oauth/registered.py) vouches for it. An ID token (`token_use: id`) is
taken only from the clients `id_token_audiences` lists, when it is set: it carries no scope, so the
scopes a client was narrowed to would not bound it.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jwt
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from jwt.exceptions import (
    DecodeError,
    InvalidAlgorithmError,
    InvalidAudienceError,
    InvalidIssuerError,
    InvalidKeyError,
    InvalidSignatureError,
    MissingRequiredClaimError,
    PyJWTError,
)

from cairn.auth.errors import AuthError
from cairn.auth.jwks import KEY_TYPES, JwksCache

DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
MAX_TOKEN_CHARS = 16_384


class JwtVerifier:
    def __init__(
        self,
        jwks: JwksCache,
        *,
        issuer: str,
        audiences: Sequence[str],
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway_s: float = 60,
        clock: Callable[[], float] = time.time,
        known_client: Callable[[str], bool] | None = None,
        id_token_audiences: Sequence[str] | None = None,
    ) -> None:
        """`id_token_audiences`: the clients whose ID tokens are taken (None: any audience)."""
        refused = [alg for alg in algorithms if alg not in KEY_TYPES]
        if refused or not algorithms:
            raise ValueError(f"JWT algorithms must be asymmetric, one of {sorted(KEY_TYPES)}; got {refused}")
        if not issuer:
            raise ValueError("a JWT issuer is required")
        if isinstance(audiences, str) or not audiences or not all(audiences):
            raise ValueError("audiences must be a non-empty list of this server's identifiers")
        self.jwks = jwks
        self.issuer = issuer
        self.audiences = tuple(audiences)
        self.algorithms = frozenset(algorithms)
        self.leeway_s = leeway_s
        self._clock = clock
        self._known_client = known_client
        self.id_token_audiences = None if id_token_audiences is None else frozenset(id_token_audiences)

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims if it is valid for this server; AuthError("...", "invalid_token") if not."""
        header = _header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise AuthError("the token's alg is not allowed")
        if "crit" in header:
            raise AuthError("the token has critical header parameters this server does not understand")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise AuthError("the token names no signing key (kid)")
        key = self.jwks.key_for(kid, alg)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                issuer=self.issuer,
                # Times are checked below, against an injectable clock and with strict number types;
                # the audience after, because a Cognito access token carries client_id instead.
                options={
                    "require": ["exp", "iss"],
                    "verify_aud": False,
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except PyJWTError as error:
            raise AuthError(_reason(error)) from None
        except RecursionError:  # claims nested past what the JSON parser takes
            raise AuthError("the token is malformed") from None
        try:
            self._check_audience(claims)
            self._check_times(claims)
        except AuthError as refused:
            refused.authentic = True  # signed by the issuer: refused, but not guessed
            raise
        return claims

    def signing_key(self, token: str) -> tuple[str, str, str]:
        """The `kid`, `alg` and key print (`key_print`) of a token `verify` accepted."""
        header = _header(token)
        kid, alg = str(header["kid"]), str(header["alg"])
        return kid, alg, self.key_print(kid, alg)

    def key_print(self, kid: str, alg: str) -> str:
        """The SHA-256 of the public key the issuer's JWKS holds under `kid` now (its DER form): a
        key replaced under the same kid prints otherwise."""
        public = self.jwks.key_for(kid, alg).key
        der = public.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
        return hashlib.sha256(der).hexdigest()

    def recheck(self, claims: Mapping[str, Any], kid: str, alg: str, key_print: str) -> None:
        """What `verify` checks besides the signature, again, for claims it once accepted (a web UI
        session's, auth/ui_sessions.py): the same signing key still in the issuer's JWKS, the
        issuer, the audience and the times, under this verifier's configuration now. AuthError
        if not."""
        if alg not in self.algorithms:
            raise AuthError("the token's alg is not allowed")
        if not hmac.compare_digest(self.key_print(kid, alg), key_print):
            raise AuthError("the issuer no longer signs with the token's key")
        if "exp" not in claims:
            raise AuthError("the token has no exp claim")
        if claims.get("iss") != self.issuer:
            raise AuthError("the token is from another issuer (iss)")
        self._check_audience(claims)
        self._check_times(claims)

    def _check_audience(self, claims: Mapping[str, Any]) -> None:
        if "aud" in claims:
            aud = claims["aud"]
            named = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else None
            if named is None or not all(isinstance(a, str) for a in named):
                raise AuthError("the token's aud claim is malformed")
            if not set(named) & set(self.audiences):
                raise AuthError("the token is not meant for this server (aud)")
            id_clients = self.id_token_audiences
            if claims.get("token_use") == "id" and id_clients is not None and not set(named) & id_clients:
                raise AuthError("this client's ID tokens are not taken here: send its access token")
            return
        if claims.get("token_use") == "access" and "client_id" in claims:
            client_id = claims["client_id"]
            if client_id in self.audiences:
                return
            known = self._known_client
            if isinstance(client_id, str) and known is not None and known(client_id):
                return
            raise AuthError("the token is not meant for this server (client_id)")
        raise AuthError("the token has no aud claim")

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now = self._clock()
        if _number(claims, "exp") <= now - self.leeway_s:
            raise AuthError("the token has expired")
        if "nbf" in claims and _number(claims, "nbf") > now + self.leeway_s:
            raise AuthError("the token is not valid yet (nbf)")
        if "iat" in claims and _number(claims, "iat") > now + self.leeway_s:
            raise AuthError("the token was issued in the future (iat)")


def _header(token: str) -> dict[str, Any]:
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise AuthError("the token is malformed")
    try:
        header = jwt.get_unverified_header(token)
    except (PyJWTError, RecursionError):
        raise AuthError("the token is malformed") from None
    if not isinstance(header, dict):
        raise AuthError("the token is malformed")
    return header


def _number(claims: Mapping[str, Any], name: str) -> float:
    value = claims[name]
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise AuthError(f"the token's {name} claim is not a number")
        return float(value)
    except OverflowError:  # an integer past a float's range
        raise AuthError(f"the token's {name} claim is out of range") from None


def _reason(error: PyJWTError) -> str:
    # PyJWT's own messages are not passed on: ours are fixed strings that cannot carry the token.
    if isinstance(error, InvalidSignatureError):
        return "the token's signature is not valid"
    if isinstance(error, InvalidAudienceError):
        return "the token is not meant for this server (aud)"
    if isinstance(error, InvalidIssuerError):
        return "the token is from another issuer (iss)"
    if isinstance(error, MissingRequiredClaimError):
        return f"the token has no {error.claim} claim"
    if isinstance(error, InvalidAlgorithmError):
        return "the token's alg is not allowed"
    if isinstance(error, InvalidKeyError):
        return "the signing key does not fit the token's alg"
    if isinstance(error, DecodeError):
        return "the token is malformed"
    return "the token is not valid"
