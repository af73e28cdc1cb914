"""Every MCP surface of the registry routed on the HTTP app (POST on each of its paths).

Behind API Gateway the app is built on a function's first invocation, and most invocations of a
warm function serve one kind of request: a surface is built, and the MCP SDK imported (a third of
the API function's cold import, docs/PERFORMANCE.md), when it is first called, so a REST, zengram
or health request never pays for it. The embedded server builds every surface when the app is made,
as before: a long-running process pays once, up front. Either way the tools callers without a
credential may call are the registry's declaration (`public_tools`), checked when a surface is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from cairn.entrypoints.counted_calls import Named
from cairn.entrypoints.mcp.registry import SURFACES, http_paths, public_tools

if TYPE_CHECKING:
    from fastapi import FastAPI

    from cairn.container import Container
    from cairn.off_loop import CallsInFlight


class SurfaceEndpoints:
    """One surface's endpoints (a path each), built on first use."""

    def __init__(self, surface: str, container: Container, calls: CallsInFlight | None = None) -> None:
        self.surface, self.container, self.calls = surface, container, calls
        self._built: dict[str, ASGIApp] | None = None

    def at(self, path: str) -> ASGIApp:
        if self._built is None:
            from cairn.entrypoints.mcp.http import surface_endpoints

            self._built = dict(surface_endpoints(self.surface, self.container, self.calls))
        return self._built[path]


class LazyEndpoint:
    """The ASGI endpoint of one path: its surface's, built on the path's first request."""

    def __init__(self, endpoints: SurfaceEndpoints, path: str) -> None:
        self.endpoints, self.path = endpoints, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.endpoints.at(self.path)(scope, receive, send)


def mount_mcp(
    app: FastAPI, container: Container, calls: CallsInFlight | None = None
) -> dict[str, frozenset[str]]:
    """Route POST on every surface's paths; build every surface now unless behind API Gateway.
    Returns, for each path of a surface that lets callers without a credential in (the registry's
    `anonymous`), the tools they may call there: those declared `public`."""
    lazy = container.options.http.on_aws
    routes: list[Route] = []
    for surface in SURFACES:
        endpoints = SurfaceEndpoints(surface, container, calls)
        for path in http_paths(surface):
            endpoint: ASGIApp = LazyEndpoint(endpoints, path) if lazy else endpoints.at(path)
            # POST only. Stateless, there is no session a standalone SSE stream (GET) could serve,
            # and an idle stream would hold a Lambda invocation open; nor one to end (DELETE). The
            # spec allows the 405 (with `Allow: POST`) the router gives both.
            if calls is not None:  # named for `cairn serve`'s stop (entrypoints/counted_calls.py)
                endpoint = Named(endpoint, f"POST {path}")
            routes.append(Route(path, endpoint, methods=["POST"], include_in_schema=False))
    # First: the router tries its routes in order, and matching a tool call past every REST route
    # took 0.15 ms of each call (docs/PERFORMANCE.md). No other route shares these paths.
    app.router.routes[:0] = routes
    return public_tools()
