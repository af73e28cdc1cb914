"""The issuer's signing keys (JWKS), fetched with httpx and cached by `kid`.

Refresh policy: keys are refetched when older than `ttl_s`, and once when a token names a `kid` the
cache does not hold (the issuer rotated its keys). No fetch starts within `min_refresh_s` of the
previous attempt, so a flood of tokens with random kids costs the issuer one request per interval.
A failed refresh keeps the last good keys.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from jwt import PyJWK
from jwt.exceptions import PyJWTError

from cairn.auth.errors import INVALID_TOKEN, UNAVAILABLE, AuthError

log = logging.getLogger("cairn.auth")

# The key type (and curve) each asymmetric algorithm needs. HMAC and "none" are absent on purpose.
KEY_TYPES: dict[str, tuple[str, frozenset[str] | None]] = {
    **{alg: ("RSA", None) for alg in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")},
    "ES256": ("EC", frozenset({"P-256"})),
    "ES384": ("EC", frozenset({"P-384"})),
    "ES512": ("EC", frozenset({"P-521"})),
    "EdDSA": ("OKP", frozenset({"Ed25519", "Ed448"})),
}


@dataclass
class _Key:
    jwk: Mapping[str, Any]
    default: PyJWK
    by_alg: dict[str, PyJWK] = field(default_factory=dict)


class JwksCache:
    def __init__(
        self,
        url: str,
        http: httpx.Client,
        *,
        ttl_s: float = 600,
        min_refresh_s: float = 30,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.safe_url = redact(url)
        self._http = http
        self._ttl_s = ttl_s
        self._min_refresh_s = min_refresh_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, _Key] = {}  # replaced whole on refresh, so readers need no lock
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._last_error = "the issuer's signing keys could not be fetched"

    def key_for(self, kid: str, alg: str | None = None) -> PyJWK:
        """The key with this `kid`, prepared for `alg` (checked against the JWK's alg, kty and crv).

        Raises AuthError: invalid_token for an unknown kid or a key that does not fit `alg`;
        auth_unavailable when no keys could ever be fetched.
        """
        if self._stale():
            self._refresh_unless_busy()
        key = self._keys.get(kid)
        if key is None:
            key = self._refresh_for(kid)
        return _prepared(key, alg)

    def refresh(self) -> None:
        """Fetch the JWKS now (at start-up, say). Raises AuthError if the fetch fails."""
        with self._lock:
            self._fetch()

    def _stale(self) -> bool:
        now = self._clock()
        if self._fetched_at is not None and now - self._fetched_at < self._ttl_s:
            return False
        return self._attempted_at is None or now - self._attempted_at >= self._min_refresh_s

    def _refresh_unless_busy(self) -> None:
        # Whoever gets the lock refreshes; the others carry on with the keys they have.
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._stale():
                self._fetch_keeping_old_keys()
        finally:
            self._lock.release()

    def _refresh_for(self, kid: str) -> _Key:
        with self._lock:
            key = self._keys.get(kid)  # another thread may have refreshed while this one waited
            if key is None and self._may_fetch():
                self._fetch_keeping_old_keys()
                key = self._keys.get(kid)
        if key is not None:
            return key
        if self._fetched_at is None:
            raise AuthError(self._last_error, UNAVAILABLE)
        raise AuthError("no key in the issuer's JWKS matches the token's kid", INVALID_TOKEN)

    def _may_fetch(self) -> bool:
        return self._attempted_at is None or self._clock() - self._attempted_at >= self._min_refresh_s

    def _fetch_keeping_old_keys(self) -> None:
        try:
            self._fetch()
        except AuthError as error:
            self._last_error = error.reason
            if self._fetched_at is None:
                log.warning("JWKS fetch failed: %s", error.reason)
            else:
                log.warning("JWKS refresh failed, keeping the last good keys: %s", error.reason)

    def _fetch(self) -> None:
        self._attempted_at = self._clock()
        self._keys = parse_jwks(self._get(), source=self.safe_url)
        self._fetched_at = self._clock()

    def _get(self) -> Any:
        try:
            response = self._http.get(
                self.url, headers={"Accept": "application/json"}, timeout=self._timeout_s
            )
        except httpx.HTTPError as error:
            raise _fetch_failed(f"{self.safe_url}: {type(error).__name__}") from None
        if response.status_code != 200:
            raise _fetch_failed(f"{self.safe_url} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise _fetch_failed(f"{self.safe_url} did not answer JSON") from None


def parse_jwks(document: Any, *, source: str = "the JWKS") -> dict[str, _Key]:
    """The usable signing keys of a JWKS document, by kid. Raises AuthError if there are none."""
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise _fetch_failed(f'{source} is not a JSON object with a "keys" list')
    keys: dict[str, _Key] = {}
    for jwk in entries:
        if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str):
            continue  # a key without a kid can never be chosen
        if jwk.get("use", "sig") != "sig" or jwk.get("kty") not in {"RSA", "EC", "OKP"}:
            continue  # encryption keys and symmetric ("oct") keys never verify a token here
        try:
            keys[jwk["kid"]] = _Key(jwk, PyJWK(jwk))
        except (PyJWTError, ValueError, TypeError, KeyError):
            continue  # unusable (unknown curve, bad numbers): skipped as PyJWKSet does
    if not keys:
        raise _fetch_failed(f"{source} holds no usable signing keys")
    return keys


def _prepared(key: _Key, alg: str | None) -> PyJWK:
    if alg is None:
        return key.default
    prepared = key.by_alg.get(alg)
    if prepared is None:
        _check_fits(key.jwk, alg)
        try:
            prepared = PyJWK(dict(key.jwk), algorithm=alg)
        except (PyJWTError, ValueError, TypeError, KeyError):
            raise AuthError("the signing key does not fit the token's alg") from None
        key.by_alg[alg] = prepared
    return prepared


def _check_fits(jwk: Mapping[str, Any], alg: str) -> None:
    declared = jwk.get("alg")
    if declared is not None and declared != alg:
        raise AuthError("the token's alg is not the alg its signing key is for")
    wanted = KEY_TYPES.get(alg)
    if wanted is None:
        raise AuthError("the token's alg is not allowed")
    kty, curves = wanted
    if jwk.get("kty") != kty or (curves is not None and jwk.get("crv") not in curves):
        raise AuthError("the signing key's type does not fit the token's alg")


def _fetch_failed(detail: str) -> AuthError:
    return AuthError(f"could not fetch the issuer's signing keys ({detail})", UNAVAILABLE)


def redact(url: str) -> str:
    """The URL without user info, query or fragment: what may appear in logs and errors."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "<the JWKS URL>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
