"""`cairn serve`'s HTTP calls counted for its stop, as its MCP calls are (cairn/off_loop.py).

uvicorn's graceful shutdown cancels the requests still running after CALLS_IN_FLIGHT_S with a
native cancel, and a worker thread a request runs (a sync route, its brain's lookup, an async
route's store write) is not cancelled with it. `CountedCalls`, the app's outermost middleware in
`cairn serve`, runs each request inside `counted_by(calls)`: every such step goes through
`off_loop.run_sync` (`off_thread` for the sync routes of `CountedRoute` and the sync dependencies
that read the stores, `step` for an async route's work), is counted in `calls` from its dispatch
to its end and left to run at the cancel, and the stop waits for `calls` before it closes the
stores. A route's work that ends after its call was cut short is settled in its thread while it
still counts: said in one warning, and, when it succeeded, what its route does once its work
succeeded is done (`settle_with`: the /v1 audit entry, rest/authz.py). A call not cut short does
that as its route's work returns, before its answer is made and sent: a cancel landing after
(a client gone, the stop) cannot leave an acknowledged write without its audit entry. The cancel itself is one
warning naming the route; uvicorn's traceback for it is left out (entrypoints/cli/serve.py).

Without `calls` (Lambda, tests) nothing is counted: the steps run as FastAPI and anyio run them.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from fastapi import Request
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cairn import off_loop
from cairn.domain.errors import CairnError, storage_failure
from cairn.off_loop import AfterCut, CallsInFlight, counted_by

log = logging.getLogger("cairn.calls")

T = TypeVar("T")


class _Call:
    """One request, as its stop would name and settle it."""

    def __init__(self) -> None:
        self.route: str | None = None  # "PUT /v1/brains/{brainId}/documents", once routed
        self.settle: Callable[[], None] | None = None  # what its route does once its work succeeded
        self._lock = threading.Lock()

    def settled(self) -> None:
        """Run `settle` once, whichever side gets here first: the route's work as it succeeds,
        or its thread after the stop cut the call short."""
        with self._lock:
            settle, self.settle = self.settle, None
        if settle is not None:
            settle()


_call: ContextVar[_Call | None] = ContextVar("cairn_http_call", default=None)


class CountedCalls:
    """Each HTTP request's steps off the loop counted in `calls`; a request cut short said once."""

    def __init__(self, app: ASGIApp, calls: CallsInFlight) -> None:
        self.app, self.calls = app, calls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        call = _Call()
        token = _call.set(call)
        try:
            with counted_by(self.calls):
                await self.app(scope, receive, send)
        except asyncio.CancelledError:  # only uvicorn's shutdown cancels a request's task
            # named by its route (never by its own path: a credential may be pasted in it)
            log.warning(
                "%s was cut short by the stop: what it still runs off the event loop is waited for",
                call.route or "a request",
            )
            raise
        finally:
            _call.reset(token)


def _name(route: str) -> None:
    call = _call.get()
    if call is not None:
        call.route = route


class Named:
    """An ASGI endpoint (an MCP path's) naming its requests `route` for the stop. A class: Starlette
    takes a function as a route's request handler, not as an ASGI app."""

    def __init__(self, app: ASGIApp, route: str) -> None:
        self.app, self.route = app, route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        _name(self.route)
        await self.app(scope, receive, send)


def settle_with(settle: Callable[[], None]) -> None:
    """What the current request's route does once its work succeeded (its audit entry): done by
    the work itself as it returns, before the answer is made and sent (`_answering`), so that no
    cancel after it (a client gone, the stop) can leave an acknowledged write unaudited; done in
    its thread when the stop cut the call short and the work then succeeded."""
    call = _call.get()
    if call is not None:
        call.settle = settle


def _settled() -> None:
    call = _call.get()
    if call is not None:
        call.settled()


def _answering(fn: Callable[..., T]) -> Callable[..., T]:
    """A sync endpoint that settles its call as it returns (in its worker thread)."""

    @functools.wraps(fn)
    def answering(*args: Any, **kwargs: Any) -> T:
        result = fn(*args, **kwargs)
        _settled()
        return result

    return answering


def _answering_async(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """An async endpoint that settles its call as it returns: nothing awaited in between."""

    @functools.wraps(fn)
    async def answering(*args: Any, **kwargs: Any) -> T:
        result = await fn(*args, **kwargs)
        _settled()
        return result

    return answering


def _after_cut() -> AfterCut:
    return functools.partial(_ended, _call.get())


def _ended(call: _Call | None, result: Any, failure: Exception | None) -> None:
    """A route's work that ended after the stop cut its call short (in its thread, still counted)."""
    route = (call.route if call is not None else None) or "a call"
    if failure is not None:
        failure = storage_failure(failure) or failure
        if isinstance(failure, CairnError):  # the code only: a message may quote what the caller sent
            log.warning("%s failed after the stop cut its call short: %s", route, failure.code)
        else:
            log.error("%s crashed after the stop cut its call short", route, exc_info=failure)
        return
    log.warning("%s ended after the stop cut its call short", route)
    if call is not None:
        call.settled()


async def step(fn: Callable[[], T]) -> T:
    """An async route's work off the loop: counted, and settled when its call was cut short."""
    return await off_loop.run_sync(fn, after_cut=_after_cut())


def off_thread(fn: Callable[..., T], *, settles: bool = True) -> Callable[..., Awaitable[T]]:
    """`fn`, a sync route or dependency, as an async one running it in a counted worker thread
    (FastAPI reads the parameters from `fn`, through `__wrapped__`). A dependency does not
    `settle`: its route never ran."""

    @functools.wraps(fn)
    async def counted(*args: Any, **kwargs: Any) -> T:
        after_cut = _after_cut() if settles else None
        return await off_loop.run_sync(functools.partial(fn, *args, **kwargs), after_cut=after_cut)

    return counted


class CountedRoute(APIRoute):
    """A route whose sync endpoint runs through `off_thread`, and which names the request."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if inspect.isfunction(endpoint) and not (
            inspect.iscoroutinefunction(endpoint)
            or inspect.isgeneratorfunction(endpoint)
            or inspect.isasyncgenfunction(endpoint)
        ):
            endpoint = off_thread(_answering(endpoint))
        elif inspect.iscoroutinefunction(endpoint):
            endpoint = _answering_async(endpoint)
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler, template = super().get_route_handler(), self.path_format

        async def named(request: Request) -> Response:
            # a call to settle even where no CountedCalls counts it (Lambda, tests)
            token = _call.set(_Call()) if _call.get() is None else None
            try:
                _name(f"{request.method} {template}")
                return await handler(request)
            finally:
                if token is not None:
                    _call.reset(token)

        return named
