"""Every Mnemosyne call of a recorded session, normal and bad input, answers with the reply shape of
the real server (wire_expected.json, written from seed 003's response examples and the facts recorded
about the server): results conform to their skeletons (extra keys allowed; a missing key, another
JSON type, or an empty list where the server sends elements fails), as structuredContent and as the
same indented JSON text; failures are isError results whose text says what was wrong."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult
from PIL import Image

from tests.integration.mcp.conftest import LiveServer
from tests.integration.mnemosyne.conftest import ingest, mnemosyne, stock
from tests.support.wire_skeleton import differences, resolve

pytestmark = pytest.mark.anyio
EXPECTED = json.loads((Path(__file__).parent / "wire_expected.json").read_text())
CALLS: list[dict[str, Any]] = EXPECTED["calls"]


def _photo() -> bytes:
    exif = Image.Exif()
    exif[0x010E] = "A kingfisher diving into the millpond at noon"  # ImageDescription
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (60, 140, 90)).save(buffer, "JPEG", exif=exif)
    return buffer.getvalue()


def _setup(live: LiveServer) -> dict[str, Any]:
    c = live.container
    shelf = stock(c)
    photos = c.libraries.describe(c.brains.create("Field photos", slug="photos").id, library_type="art")
    c.ingest.ingest_bytes(photos.brain, _photo(), name="kingfisher.jpg", path="notes/img/kingfisher.jpg")
    ingest(
        c, photos.brain, "notes/birds.md", "# Birds\n\n![A kingfisher at the millpond](img/kingfisher.jpg)\n"
    )
    return {"$novels": shelf.novels.uid, "$manuals": shelf.manuals.uid, "$photos": photos.uid}


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _problems(call: dict[str, Any], result: CallToolResult) -> list[str]:
    key = call["key"]
    block = result.content[0]
    text = block.text if block.type == "text" else ""
    if call.get("error"):
        if not result.is_error:
            return [f"{key}: answered {text[:120]!r}, where an isError result is expected"]
        pattern = call.get("message")
        return [] if pattern is None or re.search(pattern, text) else [f"{key}: {text!r} misses {pattern!r}"]
    if result.is_error:
        return [f"{key}: failed: {text}"]
    value = json.loads(text)
    out = (
        [] if text == json.dumps(value, indent=2, ensure_ascii=False) else [f"{key}: text not indented JSON"]
    )
    if result.structured_content != value:
        out.append(f"{key}: structuredContent differs from the text")
    return out + [f"{key}: {d}" for d in differences(call["reply"], value)]


async def test_every_call_answers_with_the_servers_shape(live: LiveServer) -> None:
    saved = _setup(live)
    problems: list[str] = []
    async with mnemosyne(live) as m:
        for call in CALLS:
            result = await m.call_tool(call["tool"], resolve(call["args"], saved))
            problems += _problems(call, result)
            for name, path in call.get("save", {}).items():
                if not result.is_error:
                    saved[name] = _at(result.structured_content, path)
    assert not problems, "\n".join(problems)


def test_the_session_covers_every_tool_with_normal_and_bad_input() -> None:
    from cairn.entrypoints.mcp.mnemosyne import MNEMOSYNE_TOOLS

    outcomes: dict[str, set[bool]] = {}
    for call in CALLS:
        outcomes.setdefault(call["tool"], set()).add(bool(call.get("error")))
    assert set(outcomes) == {spec.name for spec in MNEMOSYNE_TOOLS} | {"no_such_tool"}
    assert all(outcomes[spec.name] == {False, True} for spec in MNEMOSYNE_TOOLS if spec.name != "get_health")
    assert outcomes["get_health"] == {False}  # no parameter to get wrong: see `differs`
    assert set(EXPECTED["differs"]) <= {call["key"] for call in CALLS}
