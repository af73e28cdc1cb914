"""Every `brain_*` call of a recorded session, normal and bad input, answers with the reply skeleton
zengram answers with (wire_expected.json, written from seed 001 and the notes on zengram 4.3.0's
API). A missing key, another JSON type, an empty list where zengram sends elements, another error
status, or an extra key docs/ZENGRAM.md does not document fails."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult

from tests.integration.mcp.conftest import LiveServer, start_server
from tests.support.wire_skeleton import differences, extra_keys, resolve

pytestmark = pytest.mark.anyio
FIXTURE = json.loads((Path(__file__).parent / "wire_expected.json").read_text())
EXPECTED: list[dict[str, Any]] = FIXTURE["calls"]
API_ERROR = re.compile(r"^Error: API (?P<method>[A-Z]+) (?P<path>\S+): (?P<status>\d{3}) (?P<body>.*)$", re.S)
DOCS = Path(__file__).parents[3] / "docs" / "ZENGRAM.md"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, zengram_research_enabled=True)


def reply_of(result: CallToolResult) -> dict[str, Any]:
    """A tool result as the fixture writes replies: the API body, the API's error, or the
    wrapper's own refusal of an argument."""
    block = result.content[0]
    assert block.type == "text"
    if not result.is_error:
        return {"ok": json.loads(block.text)}
    failed = API_ERROR.match(block.text)
    if failed is None:
        return {"local_error": block.text}
    return {"api_error": {"status": int(failed["status"]), "body": json.loads(failed["body"])}}


def saved_value(reply: dict[str, Any]) -> Any:
    """What a call saves for later ones: an export's rows, else the id it made (a job's, a memory's)."""
    body = reply["ok"]
    return body["memories"] if "memories" in body else body.get("job_id") or body["id"]


async def test_every_call_answers_with_zengrams_skeleton(live: LiveServer) -> None:
    saved: dict[str, Any] = {}
    problems: list[str] = []
    async with Client(f"{live.base}/mcp/zengram") as z:
        for call in EXPECTED:
            reply = reply_of(await z.call_tool(call["tool"], resolve(call["args"], saved)))
            problems += [f"{call['key']}: {d}" for d in differences(call["reply"], reply)]
            allowed = {f"$.ok{p[1:]}" for p in call.get("extra", [])}
            sent = set(extra_keys(call["reply"], reply))
            problems += [
                f"{call['key']}: {path}: an undocumented extra key" for path in sorted(sent - allowed)
            ]
            problems += [f"{call['key']}: {path}: allowed but never sent" for path in sorted(allowed - sent)]
            status = call.get("status")
            if status is not None and reply.get("api_error", {}).get("status") != status:
                problems.append(f"{call['key']}: status {status} expected, got {json.dumps(reply)[:200]}")
            if "saveAs" in call and "ok" in reply:
                saved[call["saveAs"]] = saved_value(reply)
    assert not problems, "\n".join(problems)


def test_the_session_covers_every_tool_with_normal_and_bad_input() -> None:
    from cairn.entrypoints.mcp.zengram import ZENGRAM_TOOLS

    cases: dict[str, set[str]] = {}
    for call in EXPECTED:
        cases.setdefault(call["tool"], set()).add(call["key"].split(".")[1])
    assert set(cases) == {spec.name for spec in ZENGRAM_TOOLS}
    assert all({"ok", "bad"} <= kinds for kinds in cases.values()), cases


def test_every_allowed_extra_key_is_documented() -> None:
    documented = DOCS.read_text()
    names = {path.rsplit(".", 1)[-1] for call in EXPECTED for path in call.get("extra", [])}
    assert names, "the session allows no extra key at all"
    undocumented = sorted(name for name in names if f"`{name}`" not in documented)
    assert not undocumented, f"extra keys docs/ZENGRAM.md does not name: {undocumented}"
