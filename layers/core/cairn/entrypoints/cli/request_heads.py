"""`cairn serve`'s HTTP protocol: uvicorn's h11 protocol with a deadline for each request's head.

uvicorn times a connection out only between requests, once a response is complete: a connection
that sends nothing, or sends its request line and headers a byte at a time, is held open for
good. 1,100 such connections (no credential needed) took every descriptor of a server limited to
1,024, and it answered nobody. Here a connection must send a complete request head within
HEAD_TIMEOUT_S of opening, and each next request's head within it of the last response, or it
is closed; bytes arriving slowly do not push the deadline back. A request's body and a
response, however long, are not timed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 30.0


class TimedHeads(H11Protocol):
    """H11Protocol closing a connection whose next request head is not complete in time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        waiting = self.cycle
        super().data_received(data)
        if self.cycle is not waiting and self.cycle is not None:  # a request's head was read whole
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.cycle is not None and self.cycle.response_complete:
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._head_arrived()
        self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_late)

    def _head_arrived(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_late(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered: its head came in time
        with contextlib.suppress(h11.LocalProtocolError):  # h11 counts it closing already
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()
