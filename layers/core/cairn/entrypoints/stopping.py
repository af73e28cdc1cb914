"""Whether the server this process runs is shutting down: set by `cairn serve` at the exit signal.

An endless response (the change stream, rest/events.py) ends when it is set, so the server's
graceful shutdown, which waits for every response in flight, does not wait for ever; finite ones
(an MCP call, a search) are answered first."""

from __future__ import annotations

import signal


class Stopping:
    """A flag set from a signal handler and read from any thread.

    Not a `threading.Event`: its `set` takes a lock that is not re-entrant, and a signal handler
    runs on the main thread between any two of its steps, itself included. A second signal that
    came while the first one's handler held that lock (`pkill -f` signalling `timeout` and the
    server it runs, `timeout` passing it on) ran the handler again, which waited for ever on the
    lock its own thread held: the server answered no signal after that but SIGKILL. Nothing waits
    on this flag, so a plain attribute, whose write takes no lock, does."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


STOPPING = Stopping()


def present(*names: str) -> tuple[signal.Signals, ...]:
    """Those of the named signals this platform has (SIGHUP is POSIX only, SIGBREAK Windows only)."""
    return tuple(getattr(signal, name) for name in names if hasattr(signal, name))
