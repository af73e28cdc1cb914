"""The stdio transport of `cairn mcp`: newline-delimited JSON-RPC on stdin and stdout, as the MCP
SDK's `stdio_server` serves it, except that a line that is not a message gets an answer.

The SDK's reader hands such a line to the server as an exception, which the server drops, so the
client waits for ever. Here each line is checked as the HTTP endpoint checks a body (kit/inbound.py)
and under the same cap (`json_body_limit`, an overlong line read past, never held whole); a refused
one is answered with a JSON-RPC error (-32700 not JSON, -32600 not a message) carrying its request's
id when that can be told, and one line on stderr. Blank lines are skipped.

As under the SDK's transport, while serving, fd 0 reads the null device and fd 1 writes to stderr,
so neither a handler nor a child process can read the client's messages or write into the protocol:
only the writer here writes to the client's stdout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError

from cairn.entrypoints.mcp.kit.inbound import Refused, message_of

log = logging.getLogger("cairn.mcp")

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


class LineTooLong(Exception):
    """A line past the cap, already read past."""


class ClientGone(Exception):
    """The client closed its end of our stdout: the server stops, quietly (stdio.py)."""


@asynccontextmanager
async def checked_stdio(max_line: int) -> AsyncIterator[Streams]:
    """(read stream, write stream) for the SDK's server, as `mcp.server.stdio.stdio_server` gives."""
    with _claimed_wire() as (source, sink):
        to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_client, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, source, max_line, to_server, to_client.clone())
            tg.start_soon(_write, outgoing, sink)
            yield from_client, to_client


def next_line(source: BinaryIO, limit: int) -> bytes | None:
    """The next line, None at the end of input; LineTooLong for one over `limit` bytes (its end
    included), whose rest is read and dropped a piece at a time."""
    line = source.readline(limit + 1)
    if not line:
        return None
    if len(line) > limit and not line.endswith(b"\n"):
        while (rest := source.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        raise LineTooLong
    return line


async def _read(
    source: BinaryIO,
    max_line: int,
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    to_client: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with to_server, to_client:
        while True:
            try:
                line = await _on_daemon_thread(next_line, source, max_line)
            except LineTooLong:
                await _answer(to_client, Refused(INVALID_REQUEST, f"message exceeds {max_line} bytes"))
                continue
            if line is None:
                return
            if not line.strip():
                continue
            try:
                message = message_of(line)
            except Refused as refused:
                await _answer(to_client, refused)
                continue
            try:
                await to_server.send(SessionMessage(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the server has stopped reading


async def _on_daemon_thread(
    read: Callable[[BinaryIO, int], bytes | None], source: BinaryIO, limit: int
) -> bytes | None:
    """`read(source, limit)` on a daemon thread of its own: a read blocked on the client's stdin
    (which a client may hold open after Ctrl+C) never keeps the process from exiting, as one on
    anyio's worker threads did (the interpreter waits for them at exit). Cancelled, it is left."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    outcome: list[bytes | BaseException | None] = []

    def run() -> None:
        try:
            outcome.append(read(source, limit))
        except BaseException as exc:  # handed to the awaiting task, raised there
            outcome.append(exc)
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody awaits this line
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=run, name="cairn-stdin", daemon=True).start()
    await done.wait()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


async def _answer(to_client: MemoryObjectSendStream[SessionMessage], refused: Refused) -> None:
    log.warning("stdio: refused a line (id %r): %s", refused.request_id, refused.message)
    error = ErrorData(code=refused.code, message=refused.message)
    await to_client.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=refused.request_id, error=error)))


async def _write(outgoing: MemoryObjectReceiveStream[SessionMessage], sink: BinaryIO) -> None:
    async with outgoing:
        async for item in outgoing:
            text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
            await anyio.to_thread.run_sync(_send, sink, text.encode() + b"\n")


def _send(sink: BinaryIO, data: bytes) -> None:
    try:
        sink.write(data)
        sink.flush()
    except BrokenPipeError:  # the client stopped reading: nobody is left to answer
        raise ClientGone from None


@contextmanager
def _claimed_wire() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The client's stdin and stdout on descriptors of their own, fd 0 and 1 diverted meanwhile."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)  # above 2, and not inherited by child processes
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        # Never closed: a worker thread may still be blocked reading when serving ends.
        yield os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False)
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
