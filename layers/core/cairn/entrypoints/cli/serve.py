"""`cairn serve` (the HTTP app with every surface, the job worker, the index sweeper and the
consolidation schedule) and `cairn mcp` (one surface over stdio)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from cairn import __version__
from cairn.entrypoints.cli import access_log, process_limits
from cairn.entrypoints.cli.check import settle, start_repairs
from cairn.entrypoints.cli.clean_stop import (
    CALLS_IN_FLIGHT_S,
    STOP_WITHIN_S,
    Stoppable,
    clean_stop,
    thread_ends,
)
from cairn.entrypoints.cli.leaving import leave
from cairn.entrypoints.cli.warm_start import freeze_built, warm_up
from cairn.entrypoints.stop_signals import StopSignals

if TYPE_CHECKING:
    import uvicorn
    from pydantic import SecretStr

    from cairn.config import Settings
    from cairn.container import Container
    from cairn.services.memory.schedule import ConsolidationSchedule
from cairn.entrypoints.cli.common import settings_from

MIN_REACHABLE_TOKEN = 24
"""The shortest static token `cairn serve` takes beyond loopback: a refused credential takes from
no rate-limit bucket (docs/AUTH.md), so a short token others can reach could be guessed."""


def _weak_token(host: str, token: SecretStr | None) -> str | None:
    """Why the static token is too weak for a server others can reach; None when it is not."""
    from cairn.auth.authenticate import is_loopback

    if token is None or is_loopback(host) or len(token.get_secret_value().strip()) >= MIN_REACHABLE_TOKEN:
        return None
    return (
        f"the token is shorter than {MIN_REACHABLE_TOKEN} characters, and failed sign-ins are not "
        "rate-limited: choose a long random one, such as "
        "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
    )


def _stopping_server() -> type:
    import uvicorn

    from cairn.entrypoints.stopping import STOPPING

    class StoppingServer(uvicorn.Server):
        """uvicorn's server, telling endless responses (entrypoints/stopping.py) to end at the
        exit signal: its graceful shutdown waits for every response in flight.

        uvicorn installs its own signal handlers while it runs and re-raises the signal it caught
        once it has shut down, and SIGTERM's default then ended the process before `cmd_serve`'s
        clean stop (jobs handed back, read counts flushed). Here the process's own handler
        (entrypoints/stop_signals.py) stays, and gives each signal to `handle_exit`, which only
        asks the server to stop; SIGHUP too. A second one stops waiting for the calls in flight
        (uvicorn did so for a second Ctrl+C only).

        The second signal may come while the first one's `handle_exit` runs, and runs it again
        inside itself: nothing here may take a lock (STOPPING's docstring)."""

        def __init__(
            self, config: uvicorn.Config, stops: StopSignals, serving: Callable[[], None] = lambda: None
        ) -> None:
            super().__init__(config)
            self.stops, self.serving = stops, serving

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and not self.should_exit:  # it answers from here (the surfaces' warm-up)
                self.serving()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with self.stops.routed_to(lambda sig: self.handle_exit(sig, None)):
                yield

        def handle_exit(self, sig: int, frame: Any) -> None:
            STOPPING.set()
            again = self.should_exit
            super().handle_exit(sig, frame)
            if again:
                self.force_exit = True

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await super().shutdown(sockets)
            if not self.force_exit:
                return
            # uvicorn skips the app's shutdown step when forced, and its lifespan task, left
            # waiting for that step, is cancelled as the loop closes, which Starlette reports as
            # a failed shutdown with a CancelledError traceback. The app's step does nothing, so
            # it is taken here, bounded: a forced stop says one line, and a real failure of the
            # step is still logged.
            logging.getLogger("uvicorn.error").warning(
                "stopping at once (a second signal): calls in flight were not waited for"
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.lifespan.shutdown(), timeout=LIFESPAN_SHUTDOWN_S)

    return StoppingServer


class CancelledAtStop(logging.Filter):
    """uvicorn logs each request its graceful shutdown cancelled as "Exception in ASGI
    application", an error with the CancelledError's traceback. A cancel at the stop is expected,
    and CountedCalls has said it, in one warning naming the route (entrypoints/counted_calls.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        failure = record.exc_info[1] if record.exc_info else None
        cancelled = isinstance(failure, asyncio.CancelledError)
        return not (cancelled and str(record.msg).startswith("Exception in ASGI application"))


def quiet_cancels() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, CancelledAtStop) for f in logger.filters):
        logger.addFilter(CancelledAtStop())


LIFESPAN_SHUTDOWN_S = 2.0
"""How long a forced stop waits for the app's shutdown step (it has nothing to do)."""


def cmd_serve(args: argparse.Namespace) -> int:
    stops = StopSignals("cairn serve")
    stops.install()  # first: a signal while it starts ends it at once (stop_signals.py)
    from sse_starlette.sse import AppStatus

    # An MCP call that asked for progress is answered over a stream of its own, which ends with
    # the result (entrypoints/mcp/http.py). sse-starlette would end every open stream at the exit
    # signal, dropping results whose writes were already saved; uvicorn's graceful shutdown waits
    # for them as it waits for a JSON answer. (The change stream, /v1/.../events, is not theirs.)
    AppStatus.disable_automatic_graceful_drain()
    process_limits.prepare()

    from cairn.bootstrap import build_container, index_sweeper
    from cairn.bootstrap.local import check_local_files
    from cairn.bootstrap.options import auth_options
    from cairn.entrypoints.http import create_app
    from cairn.entrypoints.mcp.mount import mounted_surfaces
    from cairn.entrypoints.mcp.warm_surfaces import SurfaceWarmUp
    from cairn.off_loop import CallsInFlight

    settings = settings_from(
        args, host=args.host, port=args.port, token=args.token, allow_open=args.allow_open or None
    )
    open_serving = auth_options(settings).open
    if not open_serving and settings.token is None and settings.jwt_issuer is None:
        # on the AWS backend loopback implies nothing: its store is shared beyond this machine
        where = "the AWS backend's store" if settings.backend == "aws" else settings.host
        bind = "" if settings.backend == "aws" else "bind 127.0.0.1, "
        print(
            f"error: refusing to serve {where} without authentication: give --token "
            f"(or CAIRN_TOKEN), configure CAIRN_JWT_ISSUER, {bind}or pass --allow-open",
            file=sys.stderr,
        )
        return 2
    if settings.allow_open and (settings.token is not None or settings.jwt_issuer is not None):
        print(
            "warning: --allow-open (CAIRN_ALLOW_OPEN) beside a token or JWT issuer: a request without "
            "a credential is served as the owner; drop --allow-open to require credentials",
            file=sys.stderr,
        )
    weak = _weak_token(settings.host, settings.token)
    if weak is not None:
        print(f"error: refusing to serve {settings.host}: {weak}", file=sys.stderr)
        return 2
    listening = listen(settings.host, settings.port)
    if listening is None:
        return 1
    check_local_files(settings, pages=False)  # a directory where a database should be: refused
    container = build_container(settings)
    settle(container)
    start_repairs(container)
    calls = CallsInFlight()  # the HTTP calls' threads, which the shutdown's cancel leaves running
    app = create_app(container, calls, surface_built=freeze_built)
    resumed = threading.Thread(target=container.erasure.resume, daemon=True)  # one a crash left running
    resumed.start()
    warming = warm_up(container)
    surfaces = SurfaceWarmUp(mounted_surfaces(app) if container.options.warm_surfaces else ())
    auth = "none (open)" if open_serving else "required"
    base = f"http://{settings.host}:{settings.port}"
    print(
        f"cairn {__version__} serving on {base} "
        f"(data: {settings.data_dir.resolve()}; authentication: {auth}; Ctrl+C stops it)",
        *(f"  {what:<8} {where}" for what, where in endpoints(base)),
        sep="\n",
        flush=True,
    )
    schedule = _schedule(container)
    sweeper = index_sweeper(container)
    stops.hold()  # from here a job may be claimed: a signal waits for the server, which stops
    container.jobs.start_worker()
    sweeper.start()
    if schedule is not None:
        schedule.start()
    background = [
        Stoppable("the index sweep", sweeper.stop),
        Stoppable("the index repair", container.repair.stop),
        *([Stoppable("the consolidation schedule", schedule.stop)] if schedule is not None else []),
        thread_ends("the warm-up", warming),
        Stoppable("the MCP surfaces' warm-up", surfaces.stop),
        thread_ends("an erasure resumed", resumed),
        Stoppable("the calls the shutdown cut short", calls.wait),
    ]
    try:
        config = server_config(app, settings, args.log_level)
        access_log.install()  # after the Config, whose logging set-up would replace it
        quiet_cancels()
        server = _stopping_server()(config, stops, surfaces.start)
        server.run(sockets=[listening])
    finally:
        stops.stopping()  # the server may have ended without a signal
        # a second signal during the clean stop ends the process (stop_signals.py)
        deadline = (stops.received_at or time.monotonic()) + STOP_WITHIN_S
        ended = clean_stop(container, deadline, background)
    if not ended:  # something may still run inside native code, or in the stores left open
        leave(stops.exit_code())
    return stops.exit_code()


KEEP_ALIVE_S = 20
"""How long an idle connection is kept for the client's next request. Longer than HTTP clients keep
an idle connection in their pools (httpx 5 s, Node's 4 s), so the client gives it up first: with
uvicorn's 5 s, a request a client sent on a connection about 5 s idle could meet the server
closing it, and fail with a read error."""


def server_config(app: Any, settings: Settings, log_level: str) -> uvicorn.Config:
    """uvicorn's settings for `cairn serve`: forwarded headers believed only from the proxies
    `forwarded_allow_ips` names (uvicorn's default believes loopback)."""
    import uvicorn

    from cairn.entrypoints.cli.request_heads import TimedHeads

    proxies = settings.forwarded_allow_ips or os.environ.get("FORWARDED_ALLOW_IPS") or None
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        # A listing's documented dir + glob + cursor fit in a request line only above h11's 16 KiB.
        h11_max_incomplete_event_size=64 * 1024,
        http=TimedHeads,  # a request's head must come within HEAD_TIMEOUT_S (request_heads.py)
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=CALLS_IN_FLIGHT_S,  # the rest of the stop's budget (clean_stop.py)
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies,
    )


def listen(host: str, port: int) -> socket.socket | None:
    """The server's socket, bound and listening before anything is opened or announced, so a taken
    port is one line and exit 1 (uvicorn would fail only after the announcement, with daemon threads
    running). Connections made while the store opens wait in the backlog."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: past TIME_WAIT
        sock.bind(address)
        sock.listen(2048)  # at once: with SO_REUSEADDR, two bound but not listening could share it
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            why = "is already in use (another `cairn serve`?)"
        else:
            why = f"cannot be used: {exc.strerror or exc}"
        print(
            f"error: port {port} on {host} {why}: pick another with --port PORT (or CAIRN_PORT)",
            file=sys.stderr,
        )
        return None
    return sock


def endpoints(base: str) -> list[tuple[str, str]]:
    """What the start-up lines list: every MCP surface's path, REST, its OpenAPI UI, health, the web UI."""
    from cairn.entrypoints.mcp.registry import DEFAULT_SURFACE, SURFACES

    others = [
        s.http_path + ("/" if s.trailing_slash else "")
        for name, s in SURFACES.items()
        if name != DEFAULT_SURFACE
    ]
    return [
        ("MCP", f"{base}{SURFACES[DEFAULT_SURFACE].http_path} (and {', '.join(others)})"),
        ("REST", f"{base}/v1"),
        ("OpenAPI", f"{base}/docs (the document: /openapi.json)"),
        ("health", f"{base}/healthz"),
        ("web UI", f"{base}/ui"),
    ]


def _schedule(container: Container) -> ConsolidationSchedule | None:
    from cairn.services.memory.schedule import ConsolidationSchedule

    every = container.options.consolidate_every_s
    if every is None:
        return None
    print(f"consolidating every brain every {every:g} s", flush=True)
    return ConsolidationSchedule(container.brains, container.consolidation, container.adapters.clock, every)


def cmd_mcp(args: argparse.Namespace) -> int:
    stops = StopSignals("cairn mcp")
    stops.install()  # first: a signal while it starts ends it at once (stop_signals.py)
    from cairn.bootstrap import build_container, index_sweeper
    from cairn.entrypoints.mcp.registry import require_surface
    from cairn.entrypoints.mcp.stdio import run_stdio
    from cairn.off_loop import CallsInFlight

    require_surface(args.surface)  # fail before opening the store
    process_limits.prepare()
    settings = settings_from(args)
    container = build_container(settings)
    print(f"cairn mcp ({args.surface}): data in {settings.data_dir.resolve()}", file=sys.stderr)
    settle(container)
    start_repairs(container)
    sweeper = index_sweeper(container)
    stops.hold()  # from here a job may be claimed: a signal ends the session as it starts
    container.jobs.start_worker()  # extraction and queued ingests run while the session lasts
    sweeper.start()
    calls = CallsInFlight()
    background = [
        Stoppable("the index sweep", sweeper.stop),
        Stoppable("the index repair", container.repair.stop),
        Stoppable("the calls the session's end cut short", calls.wait),
    ]
    try:
        run_stdio(container, surface=args.surface, stops=stops, calls=calls)
    finally:
        stops.stopping()  # the session may have ended at stdin's close
        # the reads counted and a job still running handed back within the two seconds an MCP
        # client waits after closing stdin (the SDK's), for the next process to take at once;
        # the calls still running waited for, and the stores closed once nothing runs in them
        deadline = (stops.received_at or time.monotonic()) + STOP_WITHIN_S
        ended = clean_stop(container, deadline, background)
    if not ended:  # a call or a handed-back handler may be inside native code, the stores open
        leave(stops.exit_code())
    return stops.exit_code()
