"""`cairn serve`'s calls still running when its graceful shutdown runs out of time: uvicorn
cancels them, but a worker thread (a sync tool's, memory_ask's retrieval, a REST route's store
write) runs on. The stop waits for those threads within its budget, a call that then ends is
settled as an answered one is (its audit entry written), and the stores are closed.

The server runs through WRAPPED (tests/support/stopping.py): fault points held, and one second
for the calls in flight instead of fifteen."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from cairn.auth.authenticate import OPEN
from cairn.bootstrap.closing import close_stores
from cairn.entrypoints.cli.clean_stop import STOP_WITHIN_S
from tests.support.processes import Server, put, start
from tests.support.soundness import opened
from tests.support.stopping import WAIT_S, left_open, wrapped

pytestmark = pytest.mark.integration
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def call(server: Server, name: str, arguments: dict[str, Any]) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return httpx.post(f"{server.base}/mcp", headers=HEADERS, json=body, timeout=WAIT_S)


def left_running(send: Callable[[], object]) -> None:
    """The call sent on a thread of its own; whatever answers it (nothing, once the server stops)."""

    def sending() -> None:
        with contextlib.suppress(httpx.HTTPError):
            send()

    threading.Thread(target=sending, daemon=True).start()


def wait_for(log: Path, line: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while line not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"never logged {line!r}: {log.read_text()[-3000:]}"
        time.sleep(0.05)


def stopped(server: Server) -> float:
    """SIGTERM; the seconds until it exited, with status 0."""
    sent = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=STOP_WITHIN_S * 2) == 0
    return time.monotonic() - sent


def served(tmp_path: Path, held: str, knobs: str) -> tuple[Server, Path]:
    """Wrapped `cairn serve` (open, on loopback: its callers are the owner, audited) with brain
    `shore` and one memory; its log."""
    data = tmp_path / "data"
    data.mkdir()
    server = start(data, command=wrapped("-", held, knobs))
    log = data.parent / f"serve-{server.base.rsplit(':', 1)[1]}.log"
    for name, args in [
        ("memory_create_brain", {"name": "Shore", "slug": "shore"}),
        ("memory_remember", {"content": "The godwit feeds on the mudflat at low tide.", "brain": "shore"}),
    ]:
        answer = call(server, name, args).json()
        assert not answer["result"].get("isError"), answer
    return server, log


def audited(data: Path, action: str) -> int:
    """How many entries of `action` the audit holds (the owner's)."""
    container = opened(data)
    entries, _ = container.audit.query(tenant=OPEN.tenant, limit=100)
    close_stores(container)
    return sum(entry.action == action for entry in entries)


def test_a_write_the_shutdown_cut_short_is_audited_once_its_thread_ends(tmp_path: Path) -> None:
    """The second memory_remember is held four seconds after its commit; the shutdown cancels it
    after one. Its thread went on uncounted, and the stop, not waiting for it, left the process
    before it ended: its write committed and acknowledged to nobody, but never audited."""
    server, log = served(tmp_path, held="documents.committed=4@2", knobs="graceful")
    try:
        curlew = {"content": "The curlew probes the sand.", "brain": "shore"}
        left_running(lambda: call(server, "memory_remember", curlew))
        wait_for(log, "held documents.committed")
        took = stopped(server)
    finally:
        server.kill()
    assert took < STOP_WITHIN_S, took
    logged = log.read_text()
    assert "crashed" not in logged
    # said at a level `cairn serve` shows (its root logger's WARNING)
    assert "WARNING cairn.mcp: tool memory_remember ended after the stop cut its call short" in logged
    assert "WARNING cairn.calls: POST /mcp was cut short by the stop" in logged, logged[-3000:]
    assert audited(tmp_path / "data", "mcp.memory_remember") == 2
    assert left_open(tmp_path / "data") == []  # the stores closed: nothing was left running


def test_an_ask_the_shutdown_cut_short_is_waited_for_within_the_budget(tmp_path: Path) -> None:
    """memory_ask's retrieval (a worker thread) held five seconds; the shutdown cancels the call
    after one. The retrieval ran on uncounted, and the stop left the process under it at once;
    now the stop waits for it."""
    server, log = served(tmp_path, held="ask.retrieve=5", knobs="graceful,asks")
    try:
        godwit = {"query": "where does the godwit feed", "brain": "shore"}
        left_running(lambda: call(server, "memory_ask", godwit))
        wait_for(log, "held ask.retrieve")
        took = stopped(server)
    finally:
        server.kill()
    assert 3.5 < took < STOP_WITHIN_S, took
    assert "still running" not in log.read_text()  # the stop's warning of what it leaves


REST_WRITES: dict[str, tuple[str, Callable[[Server], object]]] = {
    # an async route, its store write one step off the loop
    "PUT /v1/brains/{brainId}/documents": (
        "rest.put_document",
        lambda server: put(server.base, "shore", "notes/curlew.md", "The curlew probes the sand."),
    ),
    # a sync route, run whole in a worker thread
    "POST /v1/brains/{brainId}/documents": (
        "rest.remember",
        lambda server: httpx.post(
            f"{server.base}/v1/brains/shore/documents",
            json={"content": "The curlew probes the sand."},
            timeout=WAIT_S,
        ),
    ),
}


@pytest.mark.parametrize("route", sorted(REST_WRITES))
def test_a_rest_write_the_shutdown_cut_short_is_waited_for_audited_and_the_stores_closed(
    tmp_path: Path, route: str
) -> None:
    """A REST write held four seconds after its commit; the shutdown cancels it after one. Its
    thread went on uncounted: the process left before it ended, its audit entry (recorded once
    the route returns) never written, and the stores left open (`-wal` files). The cancel was
    an "Exception in ASGI application" error with a CancelledError traceback."""
    action, send = REST_WRITES[route]
    server, log = served(tmp_path, held="documents.committed=4@2", knobs="graceful")
    try:
        left_running(lambda: send(server))
        wait_for(log, "held documents.committed")
        took = stopped(server)
    finally:
        server.kill()
    logged = log.read_text()
    assert 3.5 < took < STOP_WITHIN_S, took
    assert audited(tmp_path / "data", action) == 1
    assert left_open(tmp_path / "data") == []
    assert "Exception in ASGI application" not in logged and "Traceback" not in logged, logged[-3000:]
    assert f"WARNING cairn.calls: {route} was cut short by the stop" in logged, logged[-3000:]
    assert f"WARNING cairn.calls: {route} ended after the stop cut its call short" in logged
    assert "still running" not in logged


def test_a_rest_write_cut_short_whose_entry_the_busy_store_refuses_is_spilled(tmp_path: Path) -> None:
    """The same PUT, with the record store refusing every audit entry as busy: the entry its
    thread records once the write ends is kept, and the stop, which waited for it, spills it."""
    server, log = served(tmp_path, held="documents.committed=4@2", knobs="graceful,audit-busy")
    try:
        left_running(lambda: put(server.base, "shore", "notes/curlew.md", "The curlew probes the sand."))
        wait_for(log, "held documents.committed")
        took = stopped(server)
    finally:
        server.kill()
    assert took < STOP_WITHIN_S, took
    spill = tmp_path / "data" / "audit-kept.jsonl"
    kept = [json.loads(line)["action"] for line in spill.read_text().splitlines()] if spill.exists() else []
    assert "rest.put_document" in kept, (kept, log.read_text()[-3000:])
    assert left_open(tmp_path / "data") == []
