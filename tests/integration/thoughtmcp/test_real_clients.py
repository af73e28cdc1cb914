"""ThoughtMCP publishes no client; its users run generic MCP clients over stdio. The MCP Inspector
CLI (pinned in tests/clients) lists the surface's tools and calls remember, recall and think over
stdio and streamable HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.mcp.conftest import LiveServer
from tests.integration.mcp.node_clients import CAIRN
from tests.integration.mcp.test_inspector_cli import inspector


def test_the_inspector_over_stdio(tmp_path: Path) -> None:
    server = [CAIRN, "mcp", "--surface", "thoughtmcp", "--data-dir", str(tmp_path / "data")]
    listed = inspector(*server, "--method", "tools/list")
    stored = inspector(
        *server, "--method", "tools/call", "--tool-name", "remember",
        "--tool-arg", "content=Carol reviews the release notes every Friday", "--tool-arg", "userId=carol",
        "--tool-arg", "sessionId=s1", "--tool-arg", "primarySector=procedural",
    )  # fmt: skip
    recalled = inspector(
        *server, "--method", "tools/call", "--tool-name", "recall",
        "--tool-arg", "userId=carol", "--tool-arg", "text=release notes",
    )  # fmt: skip
    assert len(listed["tools"]) == 16
    memory_id = json.loads(stored["content"][0]["text"])["data"]["memoryId"]
    body = json.loads(recalled["content"][0]["text"])
    assert body["success"] is True and [m["id"] for m in body["data"]["memories"]] == [memory_id]


def test_the_inspector_over_http(live: LiveServer) -> None:
    url = f"{live.base}/mcp/thoughtmcp"
    thought = inspector(
        url, "--transport", "http", "--method", "tools/call", "--tool-name", "think",
        "--tool-arg", "problem=Should we split the monolith?", "--tool-arg", "mode=critical",
    )  # fmt: skip
    body = json.loads(thought["content"][0]["text"])
    assert body["success"] is True and body["data"]["method"] == "rule-based"
