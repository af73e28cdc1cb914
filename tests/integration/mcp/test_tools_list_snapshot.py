"""Every surface's tools/list, byte for byte, against the snapshot committed beside the tests
(tests/snapshots/tools_list/<surface>.json): names, descriptions, input and output schemas and
annotations are the contract agents are configured against, and a change of code shape must not
move a byte of them. A deliberate change of a tool regenerates the snapshot:

    CAIRN_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/integration/mcp/test_tools_list_snapshot.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cairn.entrypoints.mcp.registry import SURFACES, build_server
from cairn.services.ingest.inputs import LocalFilePolicy
from tests.fakes.container import fake_container

pytestmark = pytest.mark.anyio
SNAPSHOTS = Path(__file__).parents[2] / "snapshots" / "tools_list"


@pytest.mark.parametrize("surface", sorted(SURFACES))
async def test_tools_list_is_the_snapshot(surface: str) -> None:
    server = build_server(surface, fake_container(), LocalFilePolicy(root=Path("/nonexistent"), max_bytes=1))
    tools = [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in await server.list_tools()
    ]
    text = json.dumps(tools, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    snapshot = SNAPSHOTS / f"{surface}.json"
    if os.environ.get("CAIRN_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.read_text(encoding="utf-8") == text, f"{surface}'s tools/list moved"
