"""MCP over stdio (`cairn mcp`, or `python -m cairn.entrypoints.mcp.stdio`).

The server runs as the caller's own process, so memory_ingest_file may read any file the caller
can (no ingest root), unlike the HTTP server. It sets no principal: its calls run as the system
itself, on every tenant's brains, and are not audited, as the CLI's (docs/AUTH.md, "Who is calling").
Each line is checked before the SDK reads it, and a refused one answered (stdio_lines.py).

SIGTERM and SIGHUP end the session as the client closing stdin does (Ctrl+C already did, through
asyncio's own SIGINT handling), so `cairn mcp`'s clean stop runs: MCP clients send SIGTERM two seconds
after closing stdin, some at once, and Python's default for it ends the process where it stands.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from cairn.domain.errors import CairnError
from cairn.entrypoints.mcp.kit import SurfaceServer
from cairn.entrypoints.mcp.registry import DEFAULT_SURFACE, build_server, require_surface
from cairn.entrypoints.mcp.stdio_lines import ClientGone, checked_stdio
from cairn.entrypoints.stopping import present
from cairn.services.ingest.inputs import LocalFilePolicy

if TYPE_CHECKING:
    from cairn.container import Container


log = logging.getLogger(__name__)

STOP_SIGNALS = present("SIGTERM", "SIGHUP")

# How long a result waits for the client's answer to the ping below; a client that never answers
# pings (the spec says it must) gets its result after this delay, as it would have without the ping.
PONG_TIMEOUT_S = 5.0


async def progress_before_result(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Answer a request that asked for progress only after the client has handled every progress
    notification sent for it.

    The notifications and the result are written in order, one flushed line each, yet the
    TypeScript SDK client lost some of them: when one pipe read carries notifications and the result
    together, it handles each notification on a later microtask but the result at once, and the
    result retires the request's progress handler, so the notifications behind it are dropped as
    "unknown token". No write pattern can stop reads from coalescing; a round trip can. A client
    answers a ping only after handling the messages before it, so the result leaves after the pong.
    Over HTTP each SSE event is its own read, and this is not needed.
    """
    result = await call_next(ctx)
    if ctx.request_id is not None and ctx.method != "initialize" and _progress_token(ctx.params) is not None:
        with anyio.move_on_after(PONG_TIMEOUT_S):
            try:
                await ctx.session.send_ping()
            except Exception:  # a client that refuses pings still gets its result
                log.debug("ping before the result of %s failed", ctx.method, exc_info=True)
    return result


def _progress_token(params: Mapping[str, Any] | None) -> object:
    meta = params.get("_meta") if params is not None else None
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


def run_stdio(container: Container, surface: str = DEFAULT_SURFACE) -> None:
    limits = container.options.limits
    server = build_server(surface, container, LocalFilePolicy(root=None, max_bytes=limits.max_file_bytes))
    server.middleware.append(progress_before_result)
    anyio.run(_serve, server, limits.json_body_limit)


async def _serve(server: SurfaceServer, max_line: int) -> None:
    """The SDK's `run_stdio_async`, over a transport that answers the lines it refuses (stdio_lines.py)."""
    lowlevel = server._lowlevel_server
    async with anyio.create_task_group() as tg:
        if threading.current_thread() is threading.main_thread():  # only it may take signals
            tg.start_soon(_stop_at_signal, tg.cancel_scope)
        try:
            async with checked_stdio(max_line) as (read, write):
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
        except* ClientGone:
            log.info("stdio: the client stopped reading our output; stopping")
        tg.cancel_scope.cancel()  # the session ended: stop listening for signals


async def _stop_at_signal(session: anyio.CancelScope) -> None:
    """At the first of STOP_SIGNALS, end the session as stdin closing does. Its handlers are removed
    first, so a second signal ends the process at once should the clean stop hang. Windows' event
    loops take no signal handlers (and its SIGTERM cannot be caught): the session then ends at
    stdin's close only, as it did before."""
    with contextlib.ExitStack() as receiving:
        try:
            received = receiving.enter_context(anyio.open_signal_receiver(*STOP_SIGNALS))
        except NotImplementedError:
            return
        signum = await anext(received)
    log.info("stdio: %s received; stopping", signal.Signals(signum).name)
    session.cancel()


def main(argv: list[str]) -> int:
    """`python -m cairn.entrypoints.mcp.stdio [surface]`, configured by CAIRN_* environment variables."""
    from cairn.bootstrap import build_container

    surface = argv[0] if argv else DEFAULT_SURFACE
    try:
        require_surface(surface)  # before opening any storage
    except CairnError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    run_stdio(build_container(), surface=surface)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
