"""Requests to a server named by an https CAIRN_PUBLIC_URL are HTTPS, whatever the last hop was.

A proxy that ends TLS and forwards plain HTTP from another host is not one uvicorn takes
X-Forwarded-Proto from (only loopback is), so the ASGI scheme said `http`: the web UI's session
and CSRF cookies then went without `Secure` and without their `__Host-` names (ui/cookie.py)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class PublicScheme:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("scheme") == "http":
            scope = {**scope, "scheme": "https"}
        await self.app(scope, receive, send)
