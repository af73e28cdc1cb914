"""Every gbrain call of a recorded session, normal and bad input, answers with the reply shape gbrain
answers with (wire_expected.json, written from seed 002 and the facts recorded about gbrain 0.9.8's
server): JSON replies conform to their skeletons (extra keys allowed; a missing key, another JSON
type, or an empty list where gbrain sends elements fails), one-line and markdown replies match their
forms, and every failure is a JSON-RPC error with gbrain's code and data."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.integration.gbrain.conftest import gbrain
from tests.integration.mcp.conftest import LiveServer
from tests.support.wire_skeleton import differences

pytestmark = pytest.mark.anyio
EXPECTED = json.loads((Path(__file__).parent / "wire_expected.json").read_text())
CALLS: list[dict[str, Any]] = EXPECTED["calls"]


def _problems(call: dict[str, Any], reply: str | None, error: MCPError | None) -> list[str]:
    key = call["key"]
    if "error" in call:
        want = call["error"]
        if error is None:
            return [f"{key}: answered {reply!r}, where error {want['code']} is expected"]
        found = [f"{key}: error {error.code} ({error.message}), {want['code']} expected"]
        out = found if error.code != want["code"] else []
        if "data" in want:
            out += [f"{key}: data {d}" for d in differences(want["data"], error.data)]
        return out
    if error is not None:
        return [f"{key}: error {error.code} ({error.message})"]
    assert reply is not None
    if "text" in call:
        return [] if re.search(call["text"], reply) else [f"{key}: {reply!r} does not match {call['text']!r}"]
    try:
        value = json.loads(reply)
    except ValueError:
        return [f"{key}: not JSON: {reply[:80]!r}"]
    shape = [] if reply == json.dumps(value, indent=2, ensure_ascii=False) else [f"{key}: not pretty-printed"]
    return shape + [f"{key}: {d}" for d in differences(call["json"], value)]


async def test_every_call_answers_with_gbrains_shape(live: LiveServer) -> None:
    for slug in EXPECTED["setup"]["brains"]:
        live.container.brains.create(slug.capitalize(), slug=slug)
    problems: list[str] = []
    async with gbrain(live) as g:
        for call in CALLS:
            reply: str | None = None
            error: MCPError | None = None
            try:
                result = await g.call_tool(call["tool"], call["args"])
            except MCPError as exc:
                error = exc
            else:
                assert not result.is_error, call["key"]  # gbrain never answers isError
                block = result.content[0]
                assert block.type == "text", call["key"]
                reply = block.text
            problems += _problems(call, reply, error)
    assert not problems, "\n".join(problems)


def test_the_session_covers_every_tool_with_normal_and_bad_input() -> None:
    from cairn.entrypoints.mcp.gbrain import GBRAIN_TOOLS

    outcomes: dict[str, set[bool]] = {}
    for call in CALLS:
        outcomes.setdefault(call["tool"], set()).add("error" in call)
    no_parameters = {"brain_stats", "brain_collections"}  # nothing to get wrong: see `differs`
    assert set(outcomes) == {spec.name for spec in GBRAIN_TOOLS} | {"brain_nothing"}
    assert all(
        outcomes[spec.name] == {False, True} for spec in GBRAIN_TOOLS if spec.name not in no_parameters
    )
    assert all(outcomes[name] == {False} for name in no_parameters)
    assert set(EXPECTED["differs"]) <= {call["key"] for call in CALLS}
