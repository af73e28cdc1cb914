"""What the signal-stop tests (tests/integration/cli/test_stop_signals*.py) share: a file whose
ingest job is still running when the signal comes, a job's row read straight from the queue, and
a memory whose reads `cairn serve` counts in memory, checked once the process has gone."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx

from tests.support.processes import Server
from tests.support.soundness import opened
from tests.support.stopping import WAIT_S

EXIT_S = 30.0
QUEUED = {"CAIRN_INGEST_QUEUE_BYTES": "0"}  # every file ingest is a job
QUESTION = "when is the boiler serviced"
SEARCHES = 3


def long_file(folder: Path) -> Path:
    """A file whose ingest job is still embedding when the signal comes (tens of seconds here)."""
    path = folder / "rota.md"
    sections = (
        f"## Berth {i}\n\nThe harbour crane rota {i} names who lifts cargo on day {i % 7}."
        for i in range(20_000)
    )
    path.write_text("\n\n".join(sections), encoding="utf-8")
    return path


def job_row(data: Path, job_id: str) -> dict[str, Any]:
    with closing(sqlite3.connect(data / "jobs.sqlite3")) as db:
        db.row_factory = sqlite3.Row
        row = db.execute(
            "SELECT status, attempts, handed_over, lease_until FROM jobs WHERE id = ?", (job_id,)
        ).fetchone()
    assert row is not None, job_id
    return dict(row)


def assert_reads_counted(data: Path, path: str) -> None:
    container = opened(data)
    brain = container.brains.get("home")
    doc = container.documents.get(brain, path)
    assert container.search.access is not None
    assert container.search.access.get_many(brain.id, [doc.id])[doc.id].count == SEARCHES


def served_tool(server: Server, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One MCP tool call to `cairn serve`, which must not fail."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = httpx.post(f"{server.base}/mcp", headers=headers, json=call, timeout=WAIT_S).json()
    assert not answer["result"].get("isError"), answer
    structured: dict[str, Any] = answer["result"]["structuredContent"]
    return structured


def remember_and_search(server: Server) -> str:
    """A memory found by SEARCHES searches, whose reads `cairn serve` counts in memory; its path."""
    served_tool(server, "memory_create_brain", {"name": "Home", "slug": "home"})
    path: str = served_tool(
        server, "memory_remember", {"content": "The boiler service is due in March.", "brain": "home"}
    )["path"]
    for _ in range(SEARCHES):
        assert path in json.dumps(served_tool(server, "memory_search", {"query": QUESTION, "brain": "home"}))
    return path
