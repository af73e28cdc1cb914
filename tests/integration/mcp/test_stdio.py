"""MCP over stdio with the real embedded container, launched through the SDK's stdio client, both as
`python -m cairn.entrypoints.mcp.stdio` and as `cairn mcp`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.integration.mcp.conftest import error, ok

pytestmark = pytest.mark.anyio

CAIRN = str(Path(sys.executable).parent / "cairn")


def _launchers(data: Path) -> dict[str, tuple[str, list[str]]]:
    return {
        "module": (sys.executable, ["-m", "cairn.entrypoints.mcp.stdio"]),
        "cli": (CAIRN, ["mcp", "--data-dir", str(data)]),
    }


@pytest.mark.parametrize("launcher", ["module", "cli"])
async def test_remember_search_and_ingest_any_local_file_over_stdio(tmp_path: Path, launcher: str) -> None:
    data = tmp_path / "data"
    command, args = _launchers(data)[launcher]
    # A file outside any ingest root, and one relative to the server's working directory.
    elsewhere = tmp_path / "elsewhere" / "field-notes.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("# Field notes\n\nThe heron nests by the old mill.\n")
    (tmp_path / "relative.md").write_text("# Relative\n\nThe kingfisher dives at dawn.\n")
    params = StdioServerParameters(
        command=command, args=args, env={"CAIRN_DATA_DIR": str(data)}, cwd=tmp_path
    )

    async with Client(params) as client:
        brain = ok(await client.call_tool("memory_create_brain", {"name": "Birds"}))
        note = ok(await client.call_tool("memory_remember", {"content": "The osprey fishes in the estuary."}))
        found = ok(await client.call_tool("memory_search", {"query": "osprey estuary"}))
        ingested = ok(await client.call_tool("memory_ingest_file", {"path": str(elsewhere)}))
        relative = ok(await client.call_tool("memory_ingest_file", {"path": "relative.md", "as": "markdown"}))
        heron = ok(await client.call_tool("memory_search", {"query": "heron mill"}))
        refused = error(await client.call_tool("memory_search", {"query": ""}))

    assert note["brain_id"] == brain["id"]
    assert found["hits"][0]["document_id"] == note["id"]
    assert ingested["status"] == "completed" and ingested["chunk_count"] >= 1
    assert relative["status"] == "completed" and relative["document_id"] != ingested["document_id"]
    assert heron["hits"][0]["document_id"] == ingested["document_id"]
    assert refused["code"] == "validation_error"
    assert (data / "records.sqlite3").exists()  # the server used the data directory it was given


def test_an_unknown_surface_fails_fast(tmp_path: Path) -> None:
    # Given a surface that is not registered yet, the stdio entrypoint exits instead of serving.
    done = subprocess.run(
        [sys.executable, "-m", "cairn.entrypoints.mcp.stdio", "no-such-surface"],
        env={**os.environ, "CAIRN_DATA_DIR": str(tmp_path / "data")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown MCP surface 'no-such-surface'" in done.stderr
    assert not (tmp_path / "data").exists()  # refused before any storage was opened
