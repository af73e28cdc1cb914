"""`cairn serve` at SIGTERM: a call in flight is answered, over SSE too (an MCP call that asked for
progress), and an open change stream ends, so the server exits at once instead of waiting on it.
The server runs through WRAPPED (tests/support/stopping.py), which holds the call's write three
seconds after its commit: in flight when the signal comes, however fast the machine."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.processes import start
from tests.support.stopping import wrapped

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def test_sigterm_answers_the_calls_in_flight_and_ends_the_change_stream(tmp_path: Path) -> None:
    server = start(tmp_path / "data", command=wrapped("-", "documents.committed=3"))
    log = tmp_path / f"serve-{server.base.rsplit(':', 1)[1]}.log"
    try:
        assert (
            httpx.post(f"{server.base}/v1/brains", json={"name": "Notes", "slug": "notes"}).status_code == 201
        )
        seen: dict[str, Any] = {}

        def listen() -> None:
            with httpx.stream("GET", f"{server.base}/v1/brains/notes/events", timeout=60) as stream:
                seen["events"] = [line for line in stream.iter_lines() if line.startswith("event:")]

        def remember() -> None:  # held after its commit: still running when the signal comes
            params = {
                "name": "memory_remember",
                "arguments": {"brain": "notes", "content": "harbour crane rota " * 100},
                "_meta": {"progressToken": "p1"},
            }
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
            seen["call"] = httpx.post(f"{server.base}/mcp", headers=HEADERS, json=call, timeout=120)

        threads = [threading.Thread(target=listen), threading.Thread(target=remember)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while "held documents.committed" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.05)
        started = time.monotonic()
        server.process.terminate()
        server.process.wait(timeout=60)
        for thread in threads:
            thread.join(timeout=10)
        assert time.monotonic() - started < 30  # it waited for the call, not for the stream
        answer = seen["call"]
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
        results = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
        assert any(r.get("id") == 7 and "result" in r for r in results), answer.text[:300]
        assert seen["events"][:1] == ["event: ready"]
    finally:
        server.stop()
