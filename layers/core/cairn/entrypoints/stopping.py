"""Whether the server this process runs is shutting down: set by `cairn serve` at the exit signal.

An endless response (the change stream, rest/events.py) ends when it is set, so the server's
graceful shutdown, which waits for every response in flight, does not wait for ever; finite ones
(an MCP call, a search) are answered first."""

from __future__ import annotations

import signal
import threading

STOPPING = threading.Event()


def present(*names: str) -> tuple[signal.Signals, ...]:
    """Those of the named signals this platform has (SIGHUP is POSIX only, SIGBREAK Windows only)."""
    return tuple(getattr(signal, name) for name in names if hasattr(signal, name))
