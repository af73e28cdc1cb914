"""Every MCP surface of the registry routed on the HTTP app (POST on each of its paths), each built
on its first call.

A surface is built, and the MCP SDK imported, when one of its paths is first called: behind API
Gateway most invocations of a warm function serve one kind of request, and `cairn serve`'s start
paid 1.7 s of CPU for seven servers a session may never call (docs/PERFORMANCE.md, "Surfaces built
on first use"). So a REST, zengram or health request never loads the SDK, and `/healthz` answers
as soon as the store is open. The build runs in a worker thread, never on the event loop (health
and the other calls go on meanwhile), under a lock: concurrent first calls build it once. In
`cairn serve` that thread is counted as every call's work off the loop is: the stop's cancel ends
a first call still waiting for it, and the stop waits for the build within its budget. A build
that fails is logged and answered 503 as a JSON-RPC error, its text withheld, to its call and to
those that waited for it (they do not build again one after the other, each holding a worker
thread), and nothing is kept: the next call builds again. Once `cairn serve` answers, it builds
every surface in the background through the same lock (mcp/warm_surfaces.py), so a first call
usually finds its surface built, or waits for the build under way. The tools callers without a credential
may call are the registry's declaration (`public_tools`), checked when a surface is built.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from cairn import off_loop
from cairn.entrypoints.counted_calls import Named
from cairn.entrypoints.mcp.registry import SURFACES, http_paths, public_tools
from cairn.entrypoints.rest.problems import mcp_error

if TYPE_CHECKING:
    from fastapi import FastAPI

    from cairn.container import Container
    from cairn.off_loop import CallsInFlight

_log = logging.getLogger(__name__)

RETRY_BUILD_S = 1
"""The Retry-After of a call whose surface could not be built: the next call builds it again."""


class BuildFailed(RuntimeError):
    """The build a call waited for failed (logged by the call that ran it)."""

    def __init__(self, surface: str) -> None:
        super().__init__(f"the {surface} MCP surface's build failed while this call waited for it")


class SurfaceEndpoints:
    """One surface's endpoints (a path each), built once, on first use."""

    def __init__(
        self,
        surface: str,
        container: Container,
        calls: CallsInFlight | None = None,
        built: Callable[[], None] | None = None,
    ) -> None:
        self.surface, self.container, self.calls = surface, container, calls
        self.after_build = built
        self._built: dict[str, ASGIApp] | None = None
        self._lock = threading.Lock()
        self._failures = 0  # builds that failed

    def at(self, path: str) -> ASGIApp:
        """The endpoint at `path`, building the surface if no call has yet (blocking: call it off the
        event loop). Raises what `ensure` raises."""
        return self.ensure()[path]

    def ensure(self) -> dict[str, ASGIApp]:
        """The surface's endpoints, built now if neither a call nor the warm-up has built them
        (blocking). Raises what the build raised, and BuildFailed for the callers that waited for a
        build that failed (they do not build again in turn, each holding a worker thread); a call
        that comes later builds again."""
        built = self._built
        if built is None:
            failures = self._failures
            with self._lock:
                if self._built is None:  # another call may have built it while this one waited
                    if self._failures != failures:
                        raise BuildFailed(self.surface)
                    self._built = self._build()
                built = self._built
        return built

    def _build(self) -> dict[str, ASGIApp]:
        from cairn.entrypoints.mcp.http import surface_endpoints

        try:
            built: dict[str, ASGIApp] = dict(surface_endpoints(self.surface, self.container, self.calls))
        except BaseException:
            self._failures += 1
            raise
        if self.after_build is not None:
            self.after_build()
        return built

    @property
    def built(self) -> bool:
        return self._built is not None


class LazyEndpoint:
    """The ASGI endpoint of one path: its surface's, built on the surface's first request."""

    def __init__(self, endpoints: SurfaceEndpoints, path: str) -> None:
        self.endpoints, self.path = endpoints, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoints = self.endpoints
        try:
            if endpoints.built:
                endpoint = endpoints.at(self.path)
            else:  # imports and servers: ~0.3 s, the first ~1 s (the SDK), kept off the event loop;
                # counted for `cairn serve`'s stop, whose cancel leaves it running (cairn/off_loop.py)
                endpoint = await off_loop.run_sync(endpoints.at, self.path)
        except Exception as exc:
            if not isinstance(exc, BuildFailed):  # logged once, by the call that ran the build
                _log.exception(
                    "the %s MCP surface could not be built; the next call tries again", endpoints.surface
                )
            refusal = mcp_error(
                503,
                f"the {endpoints.surface} MCP surface could not be started; try again shortly",
                code=-32000,
                data={"retry_after_s": RETRY_BUILD_S},
                headers={"Retry-After": str(RETRY_BUILD_S)},
            )
            await refusal(scope, receive, send)
            return
        await endpoint(scope, receive, send)


def mount_mcp(
    app: FastAPI,
    container: Container,
    calls: CallsInFlight | None = None,
    built: Callable[[], None] | None = None,
) -> dict[str, frozenset[str]]:
    """Route POST on every surface's paths, each surface built on its first call (or by `cairn
    serve`'s warm-up, whichever comes first), then `built` run (`cairn serve` freezes what the build
    made: entrypoints/cli/warm_start.py). Returns, for each
    path of a surface that lets callers without a credential in (the registry's `anonymous`), the
    tools they may call there: those declared `public`."""
    routes: list[Route] = []
    surfaces: list[SurfaceEndpoints] = []
    for surface in SURFACES:
        endpoints = SurfaceEndpoints(surface, container, calls, built)
        surfaces.append(endpoints)
        for path in http_paths(surface):
            endpoint: ASGIApp = LazyEndpoint(endpoints, path)
            # POST only. Stateless, there is no session a standalone SSE stream (GET) could serve,
            # and an idle stream would hold a Lambda invocation open; nor one to end (DELETE). The
            # spec allows the 405 (with `Allow: POST`) the router gives both.
            if calls is not None:  # named for `cairn serve`'s stop (entrypoints/counted_calls.py)
                endpoint = Named(endpoint, f"POST {path}")
            routes.append(Route(path, endpoint, methods=["POST"], include_in_schema=False))
    # First: the router tries its routes in order, and matching a tool call past every REST route
    # took 0.15 ms of each call (docs/PERFORMANCE.md). No other route shares these paths.
    app.router.routes[:0] = routes
    app.state.mcp_surfaces = tuple(surfaces)
    return public_tools()


def mounted_surfaces(app: FastAPI) -> tuple[SurfaceEndpoints, ...]:
    """The surfaces `mount_mcp` routed on `app`, in the registry's order (the canonical one first),
    for `cairn serve` to build in the background once it serves (mcp/warm_surfaces.py)."""
    surfaces: tuple[SurfaceEndpoints, ...] = app.state.mcp_surfaces
    return surfaces
