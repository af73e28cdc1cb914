"""The real `cairn serve` process (embedded container: SQLite + ONNX) driven through the official MCP
client over HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from tests.integration.mcp.conftest import error, ok

pytestmark = pytest.mark.anyio

CAIRN = str(Path(sys.executable).parent / "cairn")
STARTUP_LIMIT_S = 120  # loading the ONNX model on a busy 2-core machine; not a timing assertion


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    data = tmp_path / "data"
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [CAIRN, "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "cairn serve did not come up"
            time.sleep(0.2)
        yield f"{base}/mcp", data
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


async def test_cairn_serve_speaks_the_canonical_surface(served: tuple[str, Path], tmp_path: Path) -> None:
    url, data = served
    root = data / "ingest"  # the default ingest root of `cairn serve`
    root.mkdir(parents=True, exist_ok=True)
    (root / "manual.md").write_text("# Manual\n\nBleed the radiator before winter.\n")
    (tmp_path / "private.md").write_text("outside the ingest root")

    async with Client(url, mode="legacy") as old:
        names = {t.name for t in (await old.list_tools()).tools}
    async with Client(url) as client:
        brain = ok(await client.call_tool("memory_create_brain", {"name": "House", "slug": "house"}))
        note = ok(
            await client.call_tool("memory_remember", {"content": "The boiler service is due in March."})
        )
        ingested = ok(await client.call_tool("memory_ingest_file", {"path": "manual.md"}))
        outside = error(await client.call_tool("memory_ingest_file", {"path": str(tmp_path / "private.md")}))
        boiler = ok(
            await client.call_tool("memory_search", {"query": "when is the boiler service", "top_k": 3})
        )
        radiator = ok(await client.call_tool("memory_recall", {"query": "radiator winter"}))
        listed = ok(await client.call_tool("memory_list_brains", {}))

    assert names == {
        "memory_search", "memory_recall", "memory_remember", "memory_ingest_file", "memory_ingest_url",
        "memory_create_brain", "memory_list_brains", "memory_ask", "memory_extract", "memory_reflect",
        "memory_consolidate",
    }  # fmt: skip
    assert note["brain_id"] == brain["id"]
    assert ingested["status"] == "completed" and ingested["chunk_count"] >= 1
    assert outside["code"] == "forbidden"
    assert boiler["hits"][0]["document_id"] == note["id"]
    assert radiator["hits"][0]["document_id"] == ingested["document_id"]
    assert [b["slug"] for b in listed["items"]] == ["house"]
