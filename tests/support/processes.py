"""Cairn as separate processes on one data directory, for the tests that kill, race or restart them:
`cairn serve` on a free loopback port, CLI commands, `cairn mcp` over stdio, and the REST calls
that write (each returns only once Cairn acknowledged the write)."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

CAIRN = str(Path(sys.executable).parent / "cairn")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(faults: str | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its CAIRN_ settings, plus `extra`, and the fault to inject."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update(extra or {})
    if faults:
        env["CAIRN_FAULTS"] = faults
    return env


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base: str

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def start(
    data: Path,
    *,
    faults: str | None = None,
    extra: Mapping[str, str] | None = None,
    wait_s: float = 120.0,
    command: Sequence[str] = (CAIRN,),
) -> Server:
    """`cairn serve` on the directory, answering /healthz (it may still be rebuilding a brain);
    `command` is what takes `serve` and its options (the `cairn` script by default). Its MCP
    surfaces are built on their first calls only, not in the background as by default: these tests
    start many servers and call MCP on few, and the background build cost the crash suite 14-18 s
    of CPU (docs/PERFORMANCE.md, "Surfaces built once the server answers"); `extra` may set
    CAIRN_WARM_SURFACES back."""
    port = free_port()
    log = (data.parent / f"serve-{port}.log").open("wb")
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--data-dir", str(data)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=environment(faults, {"CAIRN_WARM_SURFACES": "false", **(extra or {})}),
    )
    server = Server(process, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"cairn serve exited with {process.returncode}: see {log.name}")
        try:
            if httpx.get(f"{server.base}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.kill()
    raise RuntimeError("cairn serve did not answer /healthz")


@contextmanager
def serving(
    data: Path, *, faults: str | None = None, extra: Mapping[str, str] | None = None
) -> Iterator[Server]:
    server = start(data, faults=faults, extra=extra)
    try:
        yield server
    finally:
        server.stop()


def cli(*args: str, faults: str | None = None, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CAIRN, *args],
        capture_output=True,
        text=True,
        env=environment(faults),
        timeout=timeout_s,
        check=False,
    )


def batch(base: str, brain: str, writes: Mapping[str, str], *, timeout_s: float = 120) -> httpx.Response:
    ops = [
        {"type": "write", "path": path, "content_base64": base64.b64encode(text.encode()).decode()}
        for path, text in writes.items()
    ]
    return httpx.post(
        f"{base}/v1/brains/{brain}/documents/batch-ops",
        json={"reason": "test", "ops": ops},
        timeout=timeout_s,
    )


def put(base: str, brain: str, path: str, text: str, *, timeout_s: float = 60) -> httpx.Response:
    return httpx.put(
        f"{base}/v1/brains/{brain}/documents",
        params={"path": path},
        content=text.encode(),
        headers={"content-type": "application/octet-stream"},
        timeout=timeout_s,
    )
