"""The surface over stdio (`cairn mcp --surface thoughtmcp`) on the real local adapters (SQLite,
FTS5, the ONNX embedder): the transport ThoughtMCP's users configure."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio
CAIRN = str(Path(sys.executable).parent / "cairn")


async def test_memories_and_reasoning_over_stdio(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    params = StdioServerParameters(
        command=CAIRN, args=["mcp", "--surface", "thoughtmcp", "--data-dir", data_dir]
    )

    async def call(c: Client, tool: str, arguments: dict[str, object]) -> dict[str, object]:
        result = await c.call_tool(tool, arguments)
        body = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert body["success"] is True, body
        return body["data"]  # type: ignore[no-any-return]

    async with Client(params) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        base = {"userId": "alice", "sessionId": "s1"}
        one = await call(
            c,
            "remember",
            {**base, "content": "Alice prefers tea over coffee in the morning", "primarySector": "semantic"},
        )
        two = await call(
            c,
            "remember",
            {**base, "content": "Alice prefers tea over coffee in the mornings", "primarySector": "semantic"},
        )
        recalled = await call(
            c, "recall", {"userId": "alice", "text": "what does alice drink in the morning"}
        )
        found = await call(c, "search", {"userId": "alice", "text": "tea AND NOT juice"})
        reasoned = await call(
            c, "think", {"problem": "Should Alice switch to decaf?", "mode": "critical", "userId": "alice"}
        )
    assert len(names) == 16
    assert two["linksCreated"] == 2  # the real embedder finds them similar
    assert {m["id"] for m in recalled["memories"]} == {one["memoryId"], two["memoryId"]}  # type: ignore[index]
    assert len(found["memories"]) == 2 and found["searchType"] == "full-text"  # type: ignore[arg-type]
    assert reasoned["method"] == "rule-based" and len(reasoned["memoriesUsed"]) == 2  # type: ignore[arg-type]
