"""Whether the server this process runs is shutting down: set by `cairn serve` at the exit signal.

An endless response (the change stream, rest/events.py) ends when it is set, so the server's
graceful shutdown, which waits for every response in flight, does not wait for ever; finite ones
(an MCP call, a search) are answered first."""

from __future__ import annotations

import threading

STOPPING = threading.Event()
