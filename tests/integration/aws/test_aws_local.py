"""scripts/aws_local.py: the API function in-process against a moto server (S3, DynamoDB), driven
over real HTTP with httpx and the official MCP client, then stopped."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import boto3
import httpx
import pytest
from mcp import Client

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def emulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")  # for this test's own boto3 clients too
    port = free_port()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    cmd = [
        sys.executable,
        str(ROOT / "scripts/aws_local.py"),
        "--port",
        str(port),
        "--data-dir",
        str(tmp_path),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # "moto on <endpoint>; API function on <url>"
        while not banner.startswith("moto on") and banner:
            banner = proc.stdout.readline()
        moto = banner.split()[2].rstrip(";")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError("aws_local did not come up")
        yield base, moto
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


async def test_rest_and_mcp_through_the_api_handler_on_moto(emulated: tuple[str, str]) -> None:
    base, moto = emulated
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        created = await http.post("/v1/brains", json={"name": "Local"})
        assert created.status_code == 201
        put = await http.put(
            "/v1/brains/local/documents",
            params={"path": "memory/global/tea.md"},
            content=b"# Tea\n\nI like green tea in the morning.",
            headers={"content-type": "application/octet-stream"},
        )
        assert put.status_code == 204
        read = await http.get("/v1/brains/local/documents/read", params={"path": "memory/global/tea.md"})
        found = (await http.post("/v1/brains/local/search", json={"query": "green tea"})).json()
    assert read.content == b"# Tea\n\nI like green tea in the morning."
    assert found["hits"][0]["path"] == "memory/global/tea.md"
    async with Client(f"{base}/mcp") as client:
        listed = await client.call_tool("memory_list_brains", {})
    assert [b["slug"] for b in (listed.structured_content or {})["items"]] == ["local"]
    # The bytes and records really live in moto's S3 and DynamoDB.
    kw = {"endpoint_url": moto, "region_name": "us-east-1"}
    objects = boto3.client("s3", **kw).list_objects_v2(Bucket="cairn-local").get("Contents", [])
    items = boto3.client("dynamodb", **kw).scan(TableName="cairn-local", Select="COUNT")["Count"]
    assert objects and items > 2


async def test_concurrent_clients_get_no_errors(emulated: tuple[str, str]) -> None:
    """Lambda runs one invocation per environment, on the loop Mangum built: aws_local queues calls
    onto that one thread instead of failing the ones that land on another."""
    base, _ = emulated
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        assert (await http.post("/v1/brains", json={"name": "Busy"})).status_code == 201

        async def healthz(i: int) -> int:
            return (await http.get("/healthz")).status_code

        async def rest(i: int) -> int:
            path = f"memory/global/n{i}.md"
            put = await http.put(
                "/v1/brains/busy/documents",
                params={"path": path},
                content=f"Note {i}: the kettle descales on Fridays.".encode(),
                headers={"content-type": "application/octet-stream"},
            )
            if put.status_code != 204:
                return put.status_code
            return (await http.post("/v1/brains/busy/search", json={"query": "kettle"})).status_code

        async def mcp(i: int) -> int:
            async with Client(f"{base}/mcp") as client:
                note = {"brain": "busy", "content": f"Runbook {i}: restart the queue."}
                result = await client.call_tool("memory_remember", note)
            return 500 if result.is_error else 200

        calls = [f(i) for i in range(16) for f in (healthz, rest, mcp)]
        with anyio.fail_after(30):  # a client stuck on a failed exchange fails the test, not CI
            outcomes = await asyncio.gather(*calls, return_exceptions=True)
        listed = await http.get("/v1/brains/busy/documents/stat", params={"path": "memory/global/n15.md"})
    failures = [o for o in outcomes if o != 200 and o != 204]
    assert len(outcomes) == 48 and failures == []
    assert listed.status_code == 200
