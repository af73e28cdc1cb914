"""A fake Amazon Cognito sign-in domain and issuer on 127.0.0.1 (a free port), behaving as the real
one does where MCP sign-in depends on it:

- `/<pool id>/.well-known/openid-configuration`: Cognito's discovery document, which names no
  `code_challenge_methods_supported` and no `registration_endpoint`;
- `/<pool id>/.well-known/jwks.json`: the signing key;
- `/oauth2/authorize`: the app client read from the pool (moto); a `redirect_uri` not exactly one
  of its callback URLs is sent to the domain's `/error?error=redirect_mismatch` page, never back to
  the client; a public client must send an S256 `code_challenge`; the `resource` parameter is
  accepted and recorded; the test user is signed in at once and sent back with `code` and `state`;
- `/oauth2/token`: the authorization code (single use, same redirect URI, PKCE verified, a
  confidential client's secret by Basic or in the body) and refresh-token grants, issuing RS256
  access tokens shaped like Cognito's (`iss`, `client_id`, `token_use: access`, `scope`, `sub`,
  `username`, `cognito:groups`, no `aud`) and an ID token when `openid` was asked for;
- `/oauth2/revoke`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.support.loopback import Loopback
from tests.unit.auth.tokens import SigningKey, jwks, rsa_key

AppClients = Callable[[str], dict[str, Any] | None]
"""client id -> the app client as DescribeUserPoolClient answers it, or None."""


@dataclass
class User:
    username: str = "alice"
    sub: str = field(default_factory=lambda: str(uuid.uuid4()))
    email: str = "alice@example.test"
    groups: list[str] = field(default_factory=lambda: ["documents:read", "documents:write", "brains:admin"])


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    scope: str
    challenge: str | None
    resource: str | None


class FakeCognito:
    def __init__(self, apps: AppClients, pool_id: str, user: User | None = None) -> None:
        self.apps, self.pool_id = apps, pool_id
        self.user = user or User()
        self.key: SigningKey = rsa_key("fake-cognito-1")
        self.authorize_requests: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        self._codes: dict[str, Grant] = {}
        self._refresh: dict[str, Grant] = {}
        self._lock = threading.Lock()
        self._server = Loopback(self._handler())
        self.start, self.stop = self._server.start, self._server.stop

    @property
    def domain(self) -> str:
        """The sign-in domain (`https://<prefix>.auth.<region>.amazoncognito.com` on AWS)."""
        return self._server.base

    @property
    def issuer(self) -> str:
        """`https://cognito-idp.<region>.amazonaws.com/<pool id>` on AWS."""
        return f"{self.domain}/{self.pool_id}"

    def discovery(self) -> dict[str, Any]:
        return {
            "authorization_endpoint": f"{self.domain}/oauth2/authorize",
            "end_session_endpoint": f"{self.domain}/logout",
            "id_token_signing_alg_values_supported": ["RS256"],
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/.well-known/jwks.json",
            "response_types_supported": ["code", "token"],
            "revocation_endpoint": f"{self.domain}/oauth2/revoke",
            "scopes_supported": ["openid", "email", "phone", "profile"],
            "subject_types_supported": ["public"],
            "token_endpoint": f"{self.domain}/oauth2/token",
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "userinfo_endpoint": f"{self.domain}/oauth2/userInfo",
        }

    # -- the endpoints -------------------------------------------------------------------------

    def authorize(self, q: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.authorize_requests.append(dict(q))
        client = self.apps(q.get("client_id", ""))
        if client is None:
            return self._error_page("invalid_request", "client_id")
        redirect = q.get("redirect_uri", "")
        if redirect not in client.get("CallbackURLs", []):
            return self._error_page("redirect_mismatch", client["ClientId"])
        if q.get("response_type") != "code" or "code" not in client.get("AllowedOAuthFlows", []):
            return _back(redirect, {"error": "unauthorized_client", "state": q.get("state")})
        allowed = client.get("AllowedOAuthScopes", [])
        asked = q.get("scope", "").split() or list(allowed)
        if any(s not in allowed for s in asked):
            return _back(redirect, {"error": "invalid_scope", "state": q.get("state")})
        challenge, method = q.get("code_challenge"), q.get("code_challenge_method")
        public = not client.get("ClientSecret")
        if (public and not challenge) or (challenge and method != "S256"):
            error = {"error": "invalid_request", "error_description": "S256 code_challenge required"}
            return _back(redirect, {**error, "state": q.get("state")})
        code = secrets.token_urlsafe(24)
        grant = Grant(client["ClientId"], redirect, " ".join(asked), challenge, q.get("resource"))
        with self._lock:
            self._codes[code] = grant
        return _back(redirect, {"code": code, "state": q.get("state")})

    def token(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.token_requests.append({k: v for k, v in form.items() if k != "client_secret"})
        client_id, secret = _client_credentials(form, authorization)
        client = self.apps(client_id or "")
        if client is None or (client.get("ClientSecret") and client["ClientSecret"] != secret):
            return 400, {"error": "invalid_client"}
        if form.get("grant_type") == "authorization_code":
            with self._lock:
                grant = self._codes.pop(form.get("code", ""), None)
            if (
                grant is None
                or grant.client_id != client_id
                or grant.redirect_uri != form.get("redirect_uri")
            ):
                return 400, {"error": "invalid_grant"}
            if grant.challenge is not None and _s256(form.get("code_verifier", "")) != grant.challenge:
                return 400, {"error": "invalid_grant"}
            refresh = secrets.token_urlsafe(32)
            with self._lock:
                self._refresh[refresh] = grant
            return 200, {**self._tokens(grant), "refresh_token": refresh}
        if form.get("grant_type") == "refresh_token":
            with self._lock:
                grant = self._refresh.get(form.get("refresh_token", ""))  # Cognito does not rotate it
            if grant is None or grant.client_id != client_id:
                return 400, {"error": "invalid_grant"}
            return 200, self._tokens(grant)
        return 400, {"error": "unsupported_grant_type"}

    def _tokens(self, grant: Grant) -> dict[str, Any]:
        now, jti = int(time.time()), str(uuid.uuid4())
        user = self.user
        access = {
            "sub": user.sub,
            "cognito:groups": list(user.groups),
            "iss": self.issuer,
            "version": 2,
            "client_id": grant.client_id,
            "origin_jti": jti,
            "token_use": "access",
            "scope": grant.scope,
            "auth_time": now,
            "exp": now + 3600,
            "iat": now,
            "jti": str(uuid.uuid4()),
            "username": user.username,
        }
        out: dict[str, Any] = {
            "access_token": self.key.sign(access),
            "expires_in": 3600,
            "token_type": "Bearer",
        }
        if "openid" in grant.scope.split():
            identity = {
                "sub": user.sub,
                "aud": grant.client_id,
                "cognito:groups": list(user.groups),
                "email": user.email,
                "iss": self.issuer,
                "cognito:username": user.username,
                "token_use": "id",
                "auth_time": now,
                "exp": now + 3600,
                "iat": now,
            }
            out["id_token"] = self.key.sign(identity)
        return out

    def _error_page(self, error: str, client_id: str) -> tuple[int, dict[str, str], bytes]:
        location = f"{self.domain}/error?{urlencode({'error': error, 'client_id': client_id})}"
        return 302, {"Location": location}, b""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self
        well_known = f"/{self.pool_id}/.well-known/"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == well_known + "openid-configuration":
                    self._json(200, fake.discovery())
                elif parts.path == well_known + "jwks.json":
                    self._json(200, jwks(fake.key))
                elif parts.path == "/oauth2/authorize":
                    self._send(*fake.authorize(query))
                elif parts.path == "/error":
                    self._send(400, {"Content-Type": "text/plain"}, f"error: {query.get('error')}".encode())
                else:
                    self._json(404, {"message": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                path = urlsplit(self.path).path
                if path == "/oauth2/token":
                    self._json(*fake.token(form, self.headers.get("Authorization")))
                elif path == "/oauth2/revoke":
                    self._send(200, {}, b"")
                else:
                    self._json(404, {"message": "not found"})

            def _json(self, status: int, body: dict[str, Any]) -> None:
                self._send(status, {"Content-Type": "application/json"}, json.dumps(body).encode())

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _back(redirect: str, params: dict[str, str | None]) -> tuple[int, dict[str, str], bytes]:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return 302, {"Location": f"{redirect}{'&' if '?' in redirect else '?'}{query}"}, b""


def _client_credentials(form: dict[str, str], authorization: str | None) -> tuple[str | None, str | None]:
    if authorization and authorization.lower().startswith("basic "):
        decoded = base64.b64decode(authorization.split(" ", 1)[1]).decode()
        client_id, _, secret = decoded.partition(":")
        return client_id, secret
    return form.get("client_id"), form.get("client_secret")


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@contextmanager
def fake_cognito(apps: AppClients, pool_id: str, user: User | None = None) -> Iterator[FakeCognito]:
    cognito = FakeCognito(apps, pool_id, user)
    cognito.start()
    try:
        yield cognito
    finally:
        cognito.stop()
