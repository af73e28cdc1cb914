"""memory_ask through the official TypeScript SDK client (tests/clients/ask_progress.mjs), over stdio
(`cairn mcp`) and streamable HTTP: every answer delta reaches the client as a progress notification
before the result. Twenty asks in one session, because a lost notification is a race. A bare pipe
client shows how stdio orders them: the result waits for the client's answer to a ping."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.streams.text
import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from tests.integration.mcp.conftest import LiveServer
from tests.integration.mcp.node_clients import CAIRN, run_node

ASKS = 20


def ask_with_progress(*target: str) -> dict[str, Any]:
    out = run_node(["ask_progress.mjs", *target], env={**os.environ, "ASKS": str(ASKS)})
    report: dict[str, Any] = json.loads(out)
    return report


def deltas(container: Container, brain_id: str, query: str) -> list[str]:
    """The answer deltas memory_ask streams for this question: one progress notification each."""

    async def collect() -> list[str]:
        brain = container.brains.get(brain_id)
        return [e.data["delta"] async for e in container.ask.ask(brain, query) if e.type == "answer_delta"]

    return anyio.run(collect)


def assert_every_delta_came_before_the_result(report: dict[str, Any], container: Container) -> None:
    assert report["errors"] == []
    assert len(report["asks"]) == ASKS
    expected = {q: deltas(container, report["brain"], q) for q in {a["query"] for a in report["asks"]}}
    for number, ask in enumerate(report["asks"]):
        pieces = expected[ask["query"]]
        assert len(pieces) > 1, pieces  # several deltas, or there is no race to lose
        # Nothing arrived after the result (the SDK drops those), and before it: every delta, in order.
        assert (number, ask["late"]) == (number, 0)
        assert (number, ask["progress"]) == (number, list(range(len(pieces))))
        assert (number, ask["messages"]) == (number, pieces)
        assert "".join(pieces) == ask["result"]["answer"]


def test_progress_over_stdio(tmp_path: Path) -> None:
    data = tmp_path / "data"
    report = ask_with_progress("stdio", CAIRN, "mcp", "--data-dir", str(data))
    assert_every_delta_came_before_the_result(report, build_container(Settings(data_dir=data)))


def test_progress_over_http(live: LiveServer) -> None:
    report = ask_with_progress("http", live.url)
    assert_every_delta_came_before_the_result(report, live.container)


class Pipe:
    """A bare JSON-RPC line client on `cairn mcp`'s stdin and stdout."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.lines = anyio.streams.text.TextReceiveStream(process.stdout)
        self.buffer = ""

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())

    async def receive(self) -> dict[str, Any]:
        while "\n" not in self.buffer:
            self.buffer += await self.lines.receive()
        line, self.buffer = self.buffer.split("\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    async def call(self, id_: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        await self.send({"id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        reply = await self.receive()
        assert reply["id"] == id_, reply
        structured: dict[str, Any] = reply["result"]["structuredContent"]
        return structured


@pytest.mark.anyio
@pytest.mark.parametrize("pong", ["result", "error"])
async def test_over_stdio_the_result_waits_for_the_clients_answer_to_a_ping(
    tmp_path: Path, pong: str
) -> None:
    # A client handles messages in order, so once it answers a ping sent after the last progress
    # notification, it has handled them all; an error answer counts as an answer.
    command = [CAIRN, "mcp", "--data-dir", str(tmp_path / "data")]
    async with await anyio.open_process(command, stderr=None) as process:
        pipe = Pipe(process)
        with anyio.fail_after(60):
            await pipe.send(
                {
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "pipe", "version": "0"},
                    },
                }
            )
            assert (await pipe.receive())["id"] == 0
            await pipe.send({"method": "notifications/initialized"})
            brain = (await pipe.call(1, "memory_create_brain", {"name": "Tea"}))["id"]
            await pipe.call(
                2, "memory_remember", {"content": "Green tea is best steeped at 80 degrees.", "brain": brain}
            )
            await pipe.send(
                {
                    "id": 3,
                    "method": "tools/call",
                    "params": {
                        "name": "memory_ask",
                        "arguments": {"query": "green tea temperature", "brain": brain},
                        "_meta": {"progressToken": "t"},
                    },
                }
            )
            progress = []
            while (message := await pipe.receive()).get("method") == "notifications/progress":
                progress.append(message["params"]["message"])
            assert message.get("method") == "ping" and progress, message  # the ping follows the notifications
            with anyio.move_on_after(0.5) as waited:
                await pipe.receive()
            assert waited.cancelled_caught  # nothing more until the client answers
            answer = {"result": {}} if pong == "result" else {"error": {"code": -32601, "message": "no"}}
            await pipe.send({"id": message["id"], **answer})
            result = await pipe.receive()
        process.terminate()
    assert result["id"] == 3
    assert "".join(progress) == result["result"]["structuredContent"]["answer"]
