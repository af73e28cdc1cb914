"""Who sent a request, as far as the server can tell: the address refused credentials are counted
by (auth/rate_limit.py FailedSignIns)."""

from __future__ import annotations

from starlette.types import Scope


def client_address(scope: Scope) -> str:
    """The address a request came from as the server sees it: behind a proxy, the forwarded one
    uvicorn takes from a trusted proxy ("" when the server was not told)."""
    client = scope.get("client")
    return str(client[0]) if client else ""
