"""brain_consolidate takes on the memories waiting for consolidation and says how many: a run counts
every memory stored since the last completed run, and once it completes they are consolidated
(stats, exports, full search rows) and the next run takes on only newer ones."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer
from tests.integration.zengram.conftest import body

pytestmark = pytest.mark.anyio
TYPES = ("event", "fact", "decision", "status")


def memory(i: int) -> dict[str, Any]:
    kind = TYPES[i % 4]
    out: dict[str, Any] = {"type": kind, "content": f"Note {i}: item {i * 7} of the release checklist"}
    out["client_id"] = "acme" if i % 2 else "globex"
    if kind == "fact":
        out["key"] = f"checklist-{i}"
    if kind == "status":
        out["subject"] = f"step-{i}"
    return out


async def test_a_manual_run_processes_the_waiting_memories_and_reports_them(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z:
        for i in range(50):
            body(await z.call_tool("brain_store", memory(i)))
        before = body(await z.call_tool("brain_stats", {}))
        first = body(await z.call_tool("brain_consolidate", {"action": "run", "sync": True}))
        stats = body(await z.call_tool("brain_stats", {}))
        again = body(await z.call_tool("brain_consolidate", {"action": "run", "sync": True}))
        body(await z.call_tool("brain_store", memory(50)))
        newer = body(await z.call_tool("brain_consolidate", {"action": "run", "sync": True}))
        rows = body(await z.call_tool("brain_export", {}))["memories"]
        found = body(await z.call_tool("brain_search", {"query": "release checklist", "format": "full"}))

    assert before["consolidated"] == 0
    assert first["status"] == "complete" and first["memories_processed"] == 50
    assert first["groups_processed"] == 2 and "message" not in first  # acme and globex
    assert stats["consolidated"] == 50
    assert again["memories_processed"] == 0 and again["message"] == "No unconsolidated memories found"
    assert newer["memories_processed"] == 1 and newer["groups_processed"] == 1
    assert len(rows) == 51 and all(row["consolidated"] for row in rows)
    assert found["results"] and all(r["consolidated"] for r in found["results"])


async def test_an_async_run_reports_its_count_when_polled_and_settles_once_complete(live: LiveServer) -> None:
    async with Client(f"{live.base}/mcp/zengram") as z:
        for i in range(5):
            body(await z.call_tool("brain_store", memory(i)))
        started = body(await z.call_tool("brain_consolidate", {"action": "run"}))
        waiting = body(await z.call_tool("brain_stats", {}))["consolidated"]
        live.container.jobs.run_pending()
        polled = body(await z.call_tool("brain_consolidate", {"action": "job", "job_id": started["job_id"]}))
        done = body(await z.call_tool("brain_stats", {}))["consolidated"]

    assert started["status"] == "started"
    assert waiting == 0  # nothing is consolidated before its run completes
    assert polled["status"] == "complete" and polled["result"]["memories_processed"] == 5
    assert done == 5
