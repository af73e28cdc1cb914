"""The surface over stdio (`cairn mcp --surface mnemosyne`) on the real local adapters (SQLite,
FTS5, the ONNX embedder), with libraries and a collection made by the CLI as an operator would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.integration.mnemosyne.conftest import MANUAL, NOVEL, body

pytestmark = pytest.mark.anyio
CAIRN = str(Path(sys.executable).parent / "cairn")


def cairn(*args: str) -> str:
    done = subprocess.run([CAIRN, *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


async def test_every_tool_over_stdio_after_the_cli_set_the_shelf_up(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    (tmp_path / "novel").mkdir()
    (tmp_path / "novel" / "chapter-1.md").write_text(NOVEL)
    (tmp_path / "hydrex.md").write_text(MANUAL)
    cairn(
        "brains",
        "create",
        "Austen novels",
        "--slug",
        "austen",
        "--library-type",
        "fiction",
        "--data-dir",
        data,
    )
    cairn(
        "brains",
        "create",
        "Pump manuals",
        "--slug",
        "pumps",
        "--library-type",
        "technical",
        "--data-dir",
        data,
    )
    cairn(
        "ingest",
        str(tmp_path / "novel"),
        "--brain",
        "austen",
        "--collection",
        "Pride and Prejudice",
        "--data-dir",
        data,
    )
    cairn("ingest", str(tmp_path / "hydrex.md"), "--brain", "pumps", "--data-dir", data)

    params = StdioServerParameters(command=CAIRN, args=["mcp", "--surface", "mnemosyne", "--data-dir", data])
    async with Client(params) as m:
        names = {t.name for t in (await m.list_tools()).tools}
        libraries = body(await m.call_tool("list_libraries", {}))["libraries"]
        novels = next(lib["uid"] for lib in libraries if lib["library_type"] == "fiction")
        collections = body(await m.call_tool("list_collections", {"library_uid": novels}))["collections"]
        items = body(await m.call_tool("list_items", {"collection_uid": collections[0]["uid"]}))["items"]
        found = body(await m.call_tool("search", {"query": "Elizabeth walked to Netherfield in the rain"}))
        chunk = body(await m.call_tool("get_chunk", {"chunk_uid": found["candidates"][0]["chunk_uid"]}))
        health = body(await m.call_tool("get_health", {}))

    assert names == {"search", "get_chunk", "list_libraries", "list_collections", "list_items", "get_health"}
    assert sorted(lib["name"] for lib in libraries) == ["Austen novels", "Pump manuals"]
    assert [c["name"] for c in collections] == ["Pride and Prejudice"]
    assert [(i["title"], i["embedding_status"]) for i in items] == [("Chapter One", "completed")]
    top = found["candidates"][0]
    assert top["item_title"] == "Chapter One" and top["library_type"] == "fiction"
    assert set(found["search_types_used"]) == {"vector", "fulltext", "graph"}
    assert "Netherfield Park" in chunk["text"] and health["status"] == "ok"
    assert health["checks"]["embedding"]["model"]
    assert data not in json.dumps(health)
