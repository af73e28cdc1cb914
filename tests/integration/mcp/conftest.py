"""A real Cairn HTTP server on a free 127.0.0.1 port (uvicorn in a background thread, fake adapters),
and helpers to drive it through the official MCP client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from mcp import Client
from mcp_types import CallToolResult

from cairn.bootstrap import Container
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container


@dataclass
class LiveServer:
    url: str  # the MCP endpoint
    base: str
    container: Container
    ingest_root: Path
    data_dir: Path

    def snapshot(self) -> tuple[list[str], dict[str, list[str]]]:
        """Every brain and every document path in it: what a refused call must leave unchanged."""
        brains = self.container.brains.list()
        docs = {
            b.id: sorted(
                f.path for f in self.container.documents.list(b, "", recursive=True, include_generated=True)
            )
            for b in brains
        }
        return sorted(b.id for b in brains), docs


class ServerThread:
    """uvicorn on 127.0.0.1, port chosen by the OS, in a daemon thread."""

    def __init__(self, container: Container) -> None:
        config = uvicorn.Config(
            create_app(container), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.port = 0

    def __enter__(self) -> ServerThread:
        self.thread.start()
        while not self.server.started and self.thread.is_alive():
            time.sleep(0.01)
        assert self.server.started, "uvicorn did not start"
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_server(tmp_path: Path, **settings: Any) -> Iterator[LiveServer]:
    root = tmp_path / "ingest-root"
    root.mkdir(exist_ok=True)
    yield from serving(fake_container(tmp_path, ingest_root=root, **settings), root, tmp_path / "data")


def serving(container: Container, ingest_root: Path, data_dir: Path) -> Iterator[LiveServer]:
    """The container's app on a free 127.0.0.1 port while the caller holds it."""
    with ServerThread(container) as st:
        base = f"http://127.0.0.1:{st.port}"
        yield LiveServer(
            url=f"{base}/mcp", base=base, container=container, ingest_root=ingest_root, data_dir=data_dir
        )


async def call(url: str, tool: str, args: dict[str, Any], mode: str = "auto") -> CallToolResult:
    async with Client(url, mode=mode) as client:
        return await client.call_tool(tool, args)


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


def error(result: CallToolResult) -> dict[str, str]:
    """The canonical error style: isError and a JSON {code, message} text block, nothing structured."""
    assert result.is_error, result
    assert result.structured_content is None
    body = json.loads(text(result))
    assert set(body) == {"code", "message"} and body["message"]
    return body
