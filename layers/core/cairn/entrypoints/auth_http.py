"""HTTP authentication for every route but health, the resource metadata and, when Cairn serves
them, its authorization-server metadata and client registration (oauth_http.py): an ASGI middleware
that resolves the caller's principal (auth/authenticate.py), rate-limits it, and runs the app as it.

Failures follow the MCP authorization spec and RFC 6750/9728: `401` with
`WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/oauth-protected-resource"` (plus
`error="invalid_token"` when a credential was sent and refused), Problem+JSON under /v1 and an
OAuth-style JSON error elsewhere; `429` with `Retry-After` past the principal's rate (on /mcp a
JSON-RPC error body, which MCP clients surface as the failed call's message).
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cairn import off_loop
from cairn.auth import access
from cairn.auth.authenticate import Authenticator
from cairn.auth.errors import FORBIDDEN, INVALID_TOKEN, UNAVAILABLE, AuthError
from cairn.auth.in_flight import InFlight
from cairn.auth.principal import ANONYMOUS, READ, SCOPES, Principal, Via
from cairn.auth.rate_limit import TOO_MANY_REFUSED, FailedSignIns, RateLimiter
from cairn.auth.ui_sessions import ENDED, UiSessions
from cairn.entrypoints.asgi_body import buffered
from cairn.entrypoints.peer import client_address
from cairn.entrypoints.rest.problems import is_mcp, mcp_error, problem
from cairn.entrypoints.ui.cookie import is_secure, session_token
from cairn.entrypoints.ui.session import is_open, is_ui, sign_in_redirect

METADATA_PATH = "/.well-known/oauth-protected-resource"
PUBLIC = ("/healthz", "/openapi.json", "/docs", "/zengram/health")
ZENGRAM = "/zengram/"
"""zengram's API: `x-api-key` carries the credential, refusals are `{"error": ...}` bodies."""


def _counted(scope: Scope) -> bool:
    """Whether a request counts as running: not a stream held open to listen (a store's change
    stream, an MCP session's GET), which holds no worker thread and has a cap of its own."""
    path = scope.get("path", "")
    return not (scope.get("method") == "GET" and (is_mcp(path) or path.endswith("/events")))


class AuthMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        limiter: RateLimiter | None,
        public_url: str | None,
        *,
        failures: FailedSignIns | None = None,
        ui_sessions: UiSessions | None = None,
        limit_open: bool = False,
        scope_prefix: str | None = None,
        public_tools: Mapping[str, frozenset[str]] | None = None,
        open_paths: tuple[str, ...] = (),
        in_flight: InFlight | None = None,
    ) -> None:
        self.app, self.authenticator, self.limiter, self.public_url = app, authenticator, limiter, public_url
        self.in_flight = in_flight
        """Requests each principal has running (auth/in_flight.py); None: not counted."""
        self.failures = failures
        """Refused credentials per client address (auth/rate_limit.py); None: not counted."""
        self.ui_sessions = ui_sessions
        """The web UI's sessions (auth/ui_sessions.py): its cookie names one; None, no UI sign-in."""
        self.limit_open = limit_open
        """Whether the open loopback owner is rate-limited too (only when a rate was set explicitly)."""
        self.scope_prefix = scope_prefix or ""
        self.public_tools = dict(public_tools or {})
        """Path -> the tools a call without a credential may make there (Mnemosyne's get_health)."""
        self.open_paths = open_paths
        """Served to anybody, with what lies below them: Cairn's authorization-server documents and
        client registration, when it serves them (entrypoints/oauth_http.py)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in PUBLIC or path.startswith(METADATA_PATH) or self._open(path):
            await self.app(scope, receive, send)
            return
        if is_ui(path) and is_open(path):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        authorization, event = headers.get("authorization"), scope.get("aws.event")
        ui = is_ui(path)
        remembered = None
        if ui and not authorization:  # the web UI's session cookie stands for the header (ui/session.py)
            remembered = session_token(headers.get("cookie"), secure=is_secure(scope))
        api_key = path.startswith(ZENGRAM) and not authorization and headers.get("x-api-key")
        if api_key:
            authorization = f"Bearer {api_key}"
        if not authorization and path in self.public_tools:
            if self.authenticator.open:  # no sign-in to discover: its tools refuse it, bar the public ones
                with access.acting_as(ANONYMOUS):
                    await self.app(scope, receive, send)
                return
            body, receive = await buffered(receive, SMALL_BODY)
            if len(body) <= SMALL_BODY and _is_public(body, self.public_tools[path]):
                with access.acting_as(ANONYMOUS):  # a health poller's session and get_health: no credential
                    await self.app(scope, receive, send)
                return
            # anything else is asked to sign in below, as every endpoint does
        # Looked at and counted on the event loop with no await between, so guesses sent at once
        # pass no more; a JWT-shaped one is checked on a worker thread (only the issuer's key makes
        # a JWT, and no key or token Cairn makes has dots; a static token chosen with two would be
        # compared there too).
        address = client_address(scope)
        if authorization and self.failures is not None:
            retry = self.failures.blocked_s(address)
            if retry is not None:  # not even checked: a right guess gets the same answer
                detail = f"{TOO_MANY_REFUSED}; retry after {retry} s"
                await self._too_many(scope, retry, detail)(scope, receive, send)
                return
        try:
            if remembered is not None:  # off the loop: a session's JWT may need the issuer's keys
                principal = await off_loop.run_sync(self._session_principal, remembered)
            elif self.authenticator.may_wait(authorization):  # off the loop: a JWKS fetch can take seconds
                authenticate = self.authenticator.authenticate
                principal = await off_loop.run_sync(authenticate, authorization, event)
            else:
                principal = self.authenticator.authenticate(authorization, event)
        except AuthError as exc:
            guessed = exc.code == INVALID_TOKEN and not exc.authentic  # not an expired JWT, say
            if authorization and guessed and self.failures is not None:
                self.failures.refused(address)
            if ui and exc.code != UNAVAILABLE:
                query = scope.get("query_string", b"").decode("latin-1")
                redirect = sign_in_redirect(
                    path, query, had_cookie=remembered is not None, secure=is_secure(scope)
                )
                await redirect(scope, receive, send)
                return
            if (api_key or path in self.public_tools) and self.authenticator.open:
                # zengram's wrapper always sends a key, Mnemosyne's clients a bearer token: on an
                # open loopback server any will do.
                principal = self.authenticator.authenticate(None, event)
            else:
                await self._refused(scope, exc, headers)(scope, receive, send)
                return
        refused = self._refusal_of(scope, principal, headers)
        if refused is not None:
            await refused(scope, receive, send)
            return
        in_flight = self.in_flight if self.in_flight is not None and _counted(scope) else None
        if in_flight is None or (principal.via is Via.open and not in_flight.counts_open):
            with access.acting_as(principal):
                await self.app(scope, receive, send)
            return
        with in_flight.entered(principal) as allowed:
            if not allowed:
                detail = f"{in_flight.most} requests of this caller are still running, the most it may have"
                await self._too_many(scope, 1, f"{detail}; retry after 1 s")(scope, receive, send)
                return
            with access.acting_as(principal):
                await self.app(scope, receive, send)

    def _session_principal(self, token: str) -> Principal:
        if self.ui_sessions is None:
            raise AuthError(ENDED, INVALID_TOKEN)
        return self.ui_sessions.principal(token)

    def _open(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self.open_paths)

    def _refusal_of(self, scope: Scope, principal: Principal, headers: dict[str, str]) -> Response | None:
        """What an authenticated caller still gets refused for: no scope at all on /mcp, or its rate."""
        if not principal.scopes and is_mcp(scope.get("path", "")):
            metadata = metadata_url(base_url(scope, headers, self.public_url), scope.get("path", ""))
            wanted = f"{self.scope_prefix}{READ}"
            challenge = f'Bearer error="insufficient_scope", scope="{wanted}", resource_metadata="{metadata}"'
            detail = "the token grants no Cairn scope"
            return refusal(scope, 403, {"WWW-Authenticate": challenge}, "insufficient_scope", detail)
        if self.limiter is None or (principal.via is Via.open and not self.limit_open):
            return None
        retry = self.limiter.refusal_s(principal)
        if retry is None:
            return None
        detail = (
            f"rate limit exceeded: {self.limiter.rate:g} requests/s per caller "
            f"(bursts of {self.limiter.burst}); retry after {retry} s"
        )
        return self._too_many(scope, retry, detail, self.limiter.burst, self.limiter.rate)

    def _too_many(
        self, scope: Scope, retry: int, detail: str, burst: int | None = None, rate: float | None = None
    ) -> Response:
        """429 with Retry-After in the path's style: a JSON-RPC error on /mcp, zengram's body under
        /zengram/ (its limit and window when it is the per-caller rate), Problem+JSON elsewhere."""
        path = scope.get("path", "")
        if is_mcp(path):
            data = {"retry_after_s": retry}
            return mcp_error(429, detail, code=-32000, data=data, headers={"Retry-After": str(retry)})
        if path.startswith(ZENGRAM):
            body: dict[str, Any] = {"error": f"{detail[0].upper()}{detail[1:]}."}
            if burst is not None and rate is not None:
                kind = "read" if scope.get("method") in ("GET", "HEAD") else "write"
                body = {
                    "error": f"Rate limit exceeded for {kind} requests. Try again in {retry}s.",
                    "limit": burst,
                    "window_seconds": max(1, math.ceil(burst / rate)) if rate else 1,
                }
            return zengram_refusal(scope, body, 429, {"Retry-After": str(retry)})
        return refusal(scope, 429, {"Retry-After": str(retry)}, "rate_limited", detail)

    def _refused(self, scope: Scope, exc: AuthError, headers: dict[str, str]) -> Response:
        if scope.get("path", "").startswith(ZENGRAM):
            if exc.code == FORBIDDEN:
                return zengram_refusal(scope, {"error": exc.reason}, 403)
            sent = headers.get("x-api-key") or headers.get("authorization")
            return zengram_refusal(scope, {"error": "Invalid API key" if sent else "Missing API key"}, 401)
        if exc.code == FORBIDDEN:
            return refusal(scope, 403, {}, "forbidden", exc.reason)
        if exc.code == UNAVAILABLE:
            return refusal(scope, 503, {"Retry-After": "5"}, exc.code, exc.reason)
        metadata = metadata_url(base_url(scope, headers, self.public_url), scope.get("path", ""))
        challenge = f'Bearer resource_metadata="{metadata}"'
        if exc.code != "unauthorized":
            challenge += ', error="invalid_token"'
        return refusal(scope, 401, {"WWW-Authenticate": challenge}, exc.code, exc.reason)


SMALL_BODY = 64 * 1024
"""The most of a request body read to tell a public tool call (a get_health call is ~100 bytes)."""


SESSION_METHODS = frozenset({"initialize", "notifications/initialized", "ping", "tools/list"})
"""What an MCP client sends before it calls a public tool (the official SDKs list the tools to know
their output schemas): the handshake and the tool list, which tell nothing the seed does not."""


def _is_public(body: bytes, tools: frozenset[str]) -> bool:
    """Whether the body is one JSON-RPC message of the handshake or a call of one of `tools`."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    if not isinstance(message, dict) or not isinstance(method := message.get("method"), str):
        return False  # a method or name of another JSON kind (a list: unhashable) is no such message
    if method in SESSION_METHODS:
        return True
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return method == "tools/call" and isinstance(name, str) and name in tools


def base_url(scope: Scope, headers: dict[str, str], public_url: str | None) -> str:
    """This server's base URL as the client reached it (or as configured: CAIRN_PUBLIC_URL, the
    way to name it behind a proxy). Only the Host header names it, which the host guard has
    checked (on AWS, API Gateway's own name); an `X-Forwarded-Host` any client can send would
    point the discovery documents, the sign-in redirect and every challenge elsewhere. A host or
    scheme that is not one is not put into a URL or a header."""
    if public_url:
        return public_url.rstrip("/")
    proto = headers.get("x-forwarded-proto") or scope.get("scheme", "http")
    proto = proto if proto in ("http", "https") else scope.get("scheme", "http")
    host = headers.get("host") or "localhost"
    host = host if HOST_TEXT.fullmatch(host) else "localhost"
    return f"{proto}://{host}{scope.get('root_path', '')}".rstrip("/")


HOST_TEXT = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")


def metadata_url(base: str, path: str) -> str:
    """The metadata document for the endpoint at `path`: path-suffixed for an MCP endpoint (RFC 9728
    3.1), the bare document for everything else. The path is the decoded one and goes into a
    header, so it is percent-encoded again: a header holds no character past Latin-1 (Starlette
    refuses to encode one) and API Gateway's, through Mangum, none past ASCII."""
    return f"{base}{METADATA_PATH}{quote(path.rstrip('/'), safe='/') if is_mcp(path) else ''}"


def resource_metadata(
    base: str, issuer: str | None, resource: str = "/mcp", scope_prefix: str | None = None
) -> dict[str, Any]:
    """RFC 9728 metadata for the MCP endpoint at `resource`; scopes as the issuer names them."""
    document: dict[str, Any] = {
        "resource": f"{base}{resource}",
        "bearer_methods_supported": ["header"],
        "scopes_supported": [f"{scope_prefix or ''}{scope}" for scope in SCOPES],
        "resource_name": "Cairn",
    }
    if issuer:
        document["authorization_servers"] = [issuer]
    return document


def refusal(scope: Scope, status: int, headers: dict[str, str], code: str, detail: str) -> Response:
    """Problem+JSON under /v1 (code `unauthorized` for every 401, as the store protocol says), an
    OAuth-style JSON error elsewhere."""
    if scope.get("path", "").startswith("/v1"):
        response: Response = problem(status, detail, "unauthorized" if status == 401 else code)
    else:
        response = JSONResponse({"error": code, "error_description": detail}, status_code=status)
    response.headers.update(headers)
    return response


def zengram_refusal(
    scope: Scope, body: dict[str, Any], status: int, extra: dict[str, str] | None = None
) -> Response:
    """A refusal in zengram's style: its `{"error": ...}` body and, as on every zengram answer, the
    caller's `x-request-id` (or a fresh one)."""
    sent = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
    request_id = sent or str(uuid.uuid4())
    return JSONResponse(body, status_code=status, headers={**(extra or {}), "x-request-id": request_id})
