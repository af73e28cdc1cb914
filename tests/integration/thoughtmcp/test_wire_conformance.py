"""Every ThoughtMCP call of a recorded session, normal and bad input, answers with the reply skeleton of
the original server (wire_expected.json: ThoughtMCP 0.6.0's skeletons, with the seed's shape where the
seed shows one and Cairn's refusal where Cairn refuses what the original accepts). Extra keys are
allowed; a missing key, another JSON type or an empty list where the original sent elements fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import PATH, envelope
from tests.support.wire_skeleton import differences, resolve

pytestmark = pytest.mark.anyio
EXPECTED = json.loads((Path(__file__).parent / "wire_expected.json").read_text())["calls"]


async def test_every_call_answers_with_the_original_skeleton(live: LiveServer) -> None:
    saved: dict[str, str] = {}
    problems: list[str] = []
    async with Client(f"{live.base}{PATH}") as client:
        for call in EXPECTED:
            args = resolve(call["args"], saved)
            if call.get("jsonrpcError"):
                with pytest.raises(MCPError):
                    await client.call_tool(call["tool"], args)
                continue
            result = await client.call_tool(call["tool"], args)
            assert not result.is_error, call["key"]  # ThoughtMCP reports failures inside the envelope
            reply = envelope(result)
            problems += [f"{call['key']}: {d}" for d in differences(call["reply"], reply)]
            if "saveAs" in call:
                saved[call["saveAs"]] = reply["data"]["memoryId"]
            created = reply.get("data", {}).get("created", [])
            for name, item in zip(call.get("saveCreatedAs", []), created, strict=False):
                saved[name] = item["memoryId"]
    assert not problems, "\n".join(problems)


def test_the_expected_session_covers_every_tool_with_normal_and_bad_input() -> None:
    tools: dict[str, set[bool]] = {}
    for call in EXPECTED:
        refused = call.get("jsonrpcError") or "error" in call["reply"]
        tools.setdefault(call["tool"], set()).add(bool(refused))
    assert len(tools) == 17  # the 13 of the seed, the 3 batch tools, and one that does not exist
    assert all(outcomes == {False, True} for name, outcomes in tools.items() if name != "no_such_tool")
