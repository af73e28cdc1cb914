"""MCP over stdio (`cairn mcp`, or `python -m cairn.entrypoints.mcp.stdio`).

The server runs as the caller's own process, so memory_ingest_file may read any file the caller
can (no ingest root), unlike the HTTP server. It sets no principal: its calls run as the system
itself, on every tenant's brains, and are not audited, as the CLI's (docs/AUTH.md, "Who is calling").
Each line is checked before the SDK reads it, and a refused one answered (stdio_lines.py).

A stop signal (SIGTERM, SIGHUP, Ctrl+C) ends the session as the client closing stdin does, so
`cairn mcp`'s clean stop runs: MCP clients send SIGTERM two seconds after closing stdin, some at
once, and Python's default for it ends the process where it stands. The process's own handler
(entrypoints/stop_signals.py), installed before the store opens, gives the signals to the session.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from cairn.domain.errors import CairnError
from cairn.entrypoints.mcp.kit import SurfaceServer
from cairn.entrypoints.mcp.registry import DEFAULT_SURFACE, build_server, require_surface
from cairn.entrypoints.mcp.stdio_lines import ClientGone, checked_stdio
from cairn.entrypoints.stop_signals import StopSignals
from cairn.off_loop import CallsInFlight
from cairn.services.ingest.inputs import LocalFilePolicy

if TYPE_CHECKING:
    from cairn.container import Container


log = logging.getLogger(__name__)


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


def run_stdio(container: Container, *, surface: str, stops: StopSignals, calls: CallsInFlight) -> None:
    """Serve the surface over stdin and stdout until stdin closes or a stop signal comes. The
    calls the session's end cancels are not waited for: their handlers' threads, still running,
    are counted in `calls`, for the caller's stop to wait for before it closes the stores."""
    limits = container.options.limits
    server = build_server(surface, container, LocalFilePolicy(root=None, max_bytes=limits.max_file_bytes))
    server.middleware.append(progress_before_result)
    server.calls = calls
    anyio.run(_serve, server, limits.json_body_limit, stops)


async def _serve(server: SurfaceServer, max_line: int, stops: StopSignals) -> None:
    """The SDK's `run_stdio_async`, over a transport that answers the lines it refuses (stdio_lines.py)."""
    lowlevel = server._lowlevel_server
    loop = asyncio.get_running_loop()
    async with anyio.create_task_group() as tg:

        def end(signum: int) -> None:
            log.info("stdio: %s received; stopping", signal.Signals(signum).name)
            tg.cancel_scope.cancel()

        # The handler runs between any two steps of this thread, the loop's own included: it only
        # queues the end, as asyncio's own SIGINT handler does.
        with stops.routed_to(lambda signum: loop.call_soon_threadsafe(end, signum)):
            try:
                async with checked_stdio(max_line) as (read, write):
                    await lowlevel.run(read, write, lowlevel.create_initialization_options())
            except* ClientGone:
                log.info("stdio: the client stopped reading our output; stopping")


def main(argv: list[str]) -> int:
    """`python -m cairn.entrypoints.mcp.stdio [surface]`, configured by CAIRN_* environment
    variables: `cairn mcp --surface SURFACE`, its clean stop included."""
    from cairn.entrypoints.cli import main as cairn

    surface = argv[0] if argv else DEFAULT_SURFACE
    try:
        require_surface(surface)  # said as before, rather than as the command's refused choice
    except CairnError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    return cairn(["mcp", "--surface", surface])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
