"""Who may reach the server from a browser: DNS-rebinding and cross-site protection on every route
(REST, zengram's API, the web UI and MCP alike), as the MCP SDK gives its own endpoint.

An open loopback server acts as its owner for any request, so without this a web page the user
visits could post to it (a "simple" cross-site request, which a browser sends without asking), or
rebind its own name to 127.0.0.1 and read every brain. Two rules:

- Host: on a server bound to loopback or to a named host, the `Host` header must name loopback,
  that host or the public URL's host; anything else is a rebound name (`421`).
- Origin: a request that changes something (any method but GET, HEAD and OPTIONS) and carries an
  `Origin` (every browser sends one on such requests) must come from one of those hosts or from
  the host it was sent to (`403`). Clients other than browsers send no Origin and are unaffected.

A server bound to every interface keeps the Origin rule only, since it is reached under names it
cannot know; behind API Gateway neither applies (every request there carries a credential of its
own, and the UI's cookie is SameSite=Strict with a form token).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cairn.domain.authority import LOOPBACK_HOSTS, authority_host, named_host
from cairn.entrypoints.auth_http import ZENGRAM, refusal, zengram_refusal
from cairn.entrypoints.rest.problems import is_mcp

WILDCARD_BINDS = ("0.0.0.0", "::", "")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def served_hosts(host: str, public_url: str | None = None) -> tuple[str, ...]:
    """The names this server answers to: loopback, the address it binds and its public URL's host."""
    public = urlsplit(public_url).hostname if public_url else None
    names = [*LOOPBACK_HOSTS, named_host(host), *([named_host(public)] if public else [])]
    return tuple(dict.fromkeys(name.lower() for name in names))


def _origin_host(origin: str) -> str | None:
    scheme, _, authority = origin.partition("://")
    if scheme.lower() not in ("http", "https") or not authority or "/" in authority:
        return None  # "null" (a sandboxed frame, a file), or no origin at all
    return authority_host(authority)


class HostGuard:
    def __init__(self, app: ASGIApp, hosts: tuple[str, ...] | None) -> None:
        self.app = app
        self.hosts = hosts
        """The names a Host header may give; None on a server bound to every interface."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self._refusal(scope)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = authority_host(headers.get("host", ""))
        if self.hosts is not None and host not in self.hosts:
            return _answer(scope, 421, "misdirected_request", "Invalid Host header")
        origin = headers.get("origin")
        if scope.get("method") in SAFE_METHODS or origin is None:
            return None
        sender = _origin_host(origin)
        if sender is not None and (sender == host or sender in (self.hosts or LOOPBACK_HOSTS)):
            return None
        return _answer(scope, 403, "forbidden", "Invalid Origin header: cross-site requests are refused")


def _answer(scope: Scope, status: int, code: str, detail: str) -> Response:
    """The refusal in the style of the route it was sent to (the MCP SDK's own text on /mcp)."""
    path = scope.get("path", "")
    if is_mcp(path):
        return PlainTextResponse(detail, status_code=status)
    if path.startswith(ZENGRAM):
        return zengram_refusal(scope, {"error": detail}, status)
    return refusal(scope, status, {}, code, detail)
