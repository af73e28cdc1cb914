"""`cairn mcp` answers every line it cannot take with a JSON-RPC error, as the HTTP endpoint answers
such a body, instead of dropping it and leaving the client waiting; what follows is served as ever,
and nothing but JSON-RPC reaches stdout."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.processes import CAIRN, environment

MAX_LINE = 64 * 1024  # CAIRN_MAX_JSON_BODY_BYTES for the server below
WAIT_S = 60.0

TOOLS_CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_search","arguments":'

# (what the line is, the line for id n, the error code, the id answered (None: null), in the message)
BAD_LINES: list[tuple[str, bytes, int, bool, str]] = [
    ("lone surrogate", TOOLS_CALL + b'{"query":"tea \\ud800"}}}', -32700, True, "lone surrogate (\\ud800)"),
    (
        "nested 300 deep",
        TOOLS_CALL + b'{"query":"tea","x":' + b"[" * 300 + b"]" * 300 + b"}}}",
        -32700,
        True,
        "recursion limit",
    ),
    ("not JSON", b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"', -32700, False, "Parse error"),
    ("not UTF-8", b'{"jsonrpc":"2.0","id":%d,"method":"\xff\xfe"}', -32700, False, "Parse error"),
    ("wrong version", b'{"jsonrpc":"1.0","id":%d,"method":"ping"}', -32600, True, "jsonrpc"),
    ("no method", b'{"jsonrpc":"2.0","id":%d,"params":{}}', -32600, False, "Invalid Request"),
    ("a batch", b'[{"jsonrpc":"2.0","id":%d,"method":"ping"}]', -32600, False, "one JSON object"),
    ("past the cap", TOOLS_CALL + b'{"query":"' + b"a" * MAX_LINE + b'"}}}', -32600, False, "exceeds"),
]


class StdioProcess:
    def __init__(self, data: Path) -> None:
        self.process = subprocess.Popen(
            [CAIRN, "mcp", "--data-dir", str(data)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(extra={"CAIRN_MAX_JSON_BODY_BYTES": str(MAX_LINE)}),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.errors: list[bytes] = []
        self.pumps = [
            threading.Thread(target=self._pump, args=(self.process.stdout, self.lines.put), daemon=True),
            threading.Thread(target=self._pump, args=(self.process.stderr, self.errors.append), daemon=True),
        ]
        for pump in self.pumps:
            pump.start()

    @staticmethod
    def _pump(stream: IO[bytes] | None, put: Callable[[bytes], None]) -> None:
        assert stream is not None
        for line in stream:
            put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())

    def next(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=WAIT_S)
        except queue.Empty:
            pytest.fail(f"no answer within {WAIT_S:g} s")
        parsed = json.loads(line)  # anything but JSON on stdout fails here
        assert isinstance(parsed, dict) and parsed["jsonrpc"] == "2.0"
        return parsed

    def close(self) -> int:
        """Close stdin (the client leaving) and wait for the server to exit; its exit status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pump in self.pumps:
            pump.join(timeout=WAIT_S)
        return self.process.returncode

    @property
    def stderr(self) -> bytes:
        return b"".join(self.errors)


@pytest.fixture
def stdio(tmp_path: Path) -> Iterator[StdioProcess]:
    server = StdioProcess(tmp_path / "data")
    try:
        server.request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bad-lines", "version": "1"},
            },
        )
        assert server.next()["id"] == 0
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield server
    finally:
        if server.process.poll() is None:
            server.close()


def test_each_bad_line_is_answered_and_the_next_request_served(stdio: StdioProcess) -> None:
    for n, (what, line, code, keeps_id, said) in enumerate(BAD_LINES, start=1):
        stdio.send(line.replace(b"%d", str(n).encode()))
        stdio.request(1000 + n, "ping")
        refusal, after = stdio.next(), stdio.next()
        assert refusal["id"] == (n if keeps_id else None), what
        assert refusal["error"]["code"] == code, what
        assert said in refusal["error"]["message"], (what, refusal)
        assert after == {"jsonrpc": "2.0", "id": 1000 + n, "result": {}}, what

    stdio.send(b"")  # a blank line is no message: nothing answers it
    stdio.request(2000, "tools/call", {"name": "memory_create_brain", "arguments": {"name": "Tea"}})
    made = stdio.next()
    assert made["id"] == 2000 and made["result"]["structuredContent"]["name"] == "Tea", made

    assert stdio.close() == 0
    assert stdio.lines.empty()
    assert stdio.stderr.count(b"stdio: refused a line") == len(BAD_LINES)


def test_ctrl_c_stops_the_server_while_the_client_holds_stdin_open(stdio: StdioProcess) -> None:
    """The read blocked on stdin kept the interpreter from exiting (anyio's worker threads are
    waited for at exit): after SIGINT the process ran on for as long as the client kept stdin."""
    stdio.request(1, "ping")
    assert stdio.next()["id"] == 1  # served: the next read is blocked on stdin
    time.sleep(1)
    stdio.process.send_signal(signal.SIGINT)
    stdio.process.wait(timeout=20)
    assert stdio.process.stdin is not None and not stdio.process.stdin.closed  # the client never left


def test_a_client_that_stops_reading_ends_the_server_quietly(tmp_path: Path) -> None:
    """Closing its end of our stdout and asking once more: an exit without a traceback (it was a
    BrokenPipeError ExceptionGroup, exit 1, then a process left waiting on stdin)."""
    process = subprocess.Popen(
        [CAIRN, "mcp", "--data-dir", str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "gone", "version": "1"},
    }
    process.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode()
    )
    process.stdin.write(b"\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 0
    process.stdout.close()  # the client stops reading
    process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    process.stdin.flush()
    try:
        assert process.wait(timeout=20) == 0  # while the client still holds stdin open
    finally:
        process.kill()
        process.stdin.close()
    errors = process.stderr.read()
    assert b"Traceback" not in errors, errors[-500:]
