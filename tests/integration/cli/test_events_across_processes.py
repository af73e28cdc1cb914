"""A `cairn serve` change stream tells of what other processes on its data directory write: an
agent's `cairn mcp` over stdio and a `cairn ingest` run, each a process of its own, as well as
the server's own writes, each once."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from cairn.bootstrap import build_container
from cairn.bootstrap.closing import close_stores
from cairn.config import Settings
from tests.integration.rest.live import Frame, SseReader
from tests.support.processes import CAIRN, cli, environment, put, serving

pytestmark = pytest.mark.integration


async def remember_over_stdio(data: Path, path: str) -> None:
    params = StdioServerParameters(command=CAIRN, args=["mcp", "--data-dir", str(data)], env=environment())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        text = "# Curlews\n\nThe curlew calls over the estuary at dusk."
        result = await session.call_tool(
            "memory_remember", {"content": text, "path": path, "brain": "shared"}
        )
        assert not result.is_error, result.content


def test_a_stream_tells_of_writes_by_cairn_mcp_and_the_cli_and_its_own_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = build_container(Settings(data_dir=data))  # set-up, not under test
    made.brains.create("Shared")
    close_stores(made)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "kestrels.md").write_text("# Kestrels\n\nA kestrel hovers over the verge.\n")
    frames: list[Frame] = []

    with (
        serving(data) as server,
        httpx.Client(base_url=server.base, timeout=httpx.Timeout(60.0)) as http,
        http.stream("GET", "/v1/brains/shared/events") as stream,
    ):
        sse = SseReader(stream.iter_lines())
        assert sse.next().event == "ready"

        def read() -> None:
            try:
                while True:
                    frames.append(sse.next())
            except (EOFError, httpx.HTTPError):
                return

        threading.Thread(target=read, daemon=True).start()
        assert (
            put(server.base, "shared", "own/one.md", "# One\n\nWritten through the server.").status_code
            == 204
        )
        asyncio.run(remember_over_stdio(data, "agent/curlews.md"))
        ingested = cli("ingest", str(notes / "kestrels.md"), "--brain", "shared", "--data-dir", str(data))
        assert ingested.returncode == 0, ingested.stderr

        def paths() -> list[str]:
            return [json.loads(f.data)["path"] for f in list(frames) if f.event == "change"]

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not {"agent/curlews.md", "ingest/kestrels.md"} <= set(paths()):
            time.sleep(0.1)
        time.sleep(1.5)  # a repeat would come within a few looks

    told = paths()
    assert told.count("own/one.md") == 1 and told.count("agent/curlews.md") == 1, told
    assert told.count("ingest/kestrels.md") == 1, told
    assert told.index("own/one.md") < told.index("agent/curlews.md") < told.index("ingest/kestrels.md")
