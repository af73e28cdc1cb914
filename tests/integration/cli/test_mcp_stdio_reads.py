"""`cairn mcp` (stdio) counts what its searches returned, as `cairn serve` does: the counts are kept in
memory until flushed, and a stdio session ends when its client closes stdin (two seconds later the
SDK's client ends the process), so they are flushed first."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.soundness import opened

pytestmark = pytest.mark.anyio
CAIRN = str(Path(sys.executable).parent / "cairn")


async def test_the_reads_of_a_stdio_session_are_counted_when_it_ends(tmp_path: Path) -> None:
    data = tmp_path / "data"
    params = StdioServerParameters(command=CAIRN, args=["mcp", "--data-dir", str(data)])
    async with Client(params) as client:
        await client.call_tool("memory_create_brain", {"name": "Home", "slug": "home"})
        remembered = await client.call_tool(
            "memory_remember", {"content": "The boiler service is due in March.", "brain": "home"}
        )
        path = remembered.structured_content["path"]  # type: ignore[index]
        for _ in range(3):
            found = await client.call_tool(
                "memory_search", {"query": "when is the boiler serviced", "brain": "home"}
            )
            assert path in json.dumps(found.structured_content)

    container = opened(data)
    brain = container.brains.get("home")
    doc = container.documents.get(brain, path)
    assert container.search.access is not None
    assert container.search.access.get_many(brain.id, [doc.id])[doc.id].count == 3
