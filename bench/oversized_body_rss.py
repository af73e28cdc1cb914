"""How much an oversized JSON body grows a `cairn serve` process before it is refused.

Starts `cairn serve` on a free 127.0.0.1 port over a fresh data directory, makes one brain, then
sends a 150 MB body to POST /v1/brains/{id}/search twice: once with Content-Length and once
chunked (no length). Prints the status of each and the server's peak RSS growth in MB (VmHWM
after minus VmRSS before; the default cap lets ~31 MB in before a chunked body is refused).

    python bench/oversized_body_rss.py [--mb 150]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def body(total: int) -> Iterator[bytes]:
    yield b'{"query": "'
    piece = b"a" * 65536
    for _ in range(total // len(piece)):
        yield piece
    yield b'"}'


def send(url: str, total: int, chunked: bool) -> int:
    headers = {"Content-Type": "application/json"}
    if not chunked:
        headers["Content-Length"] = str(len(b'{"query": "') + total // 65536 * 65536 + 2)
    try:
        return httpx.post(url, content=body(total), headers=headers, timeout=120).status_code
    except httpx.HTTPError:  # a server that closes mid-upload
        return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=150)
    args = parser.parse_args()
    total = args.mb * 1_000_000
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        env = {**os.environ, "CAIRN_DATA_DIR": data}
        cairn = Path(sys.executable).with_name("cairn")
        server = subprocess.Popen(
            [str(cairn), "serve", "--port", str(port), "--log-level", "warning"],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            brain = httpx.post(f"{base}/v1/brains", json={"name": "Bench"}, timeout=30).json()["id"]
            url = f"{base}/v1/brains/{brain}/search"
            httpx.post(url, json={"query": "warm up"}, timeout=60)
            Path(f"/proc/{server.pid}/clear_refs").write_text("5")  # resets the peak (VmHWM)
            before = rss_kb(server.pid, "VmRSS")
            declared = send(url, total, chunked=False)
            streamed = send(url, total, chunked=True)
            peak = rss_kb(server.pid, "VmHWM")
        finally:
            server.terminate()
            server.wait(10)
    print(f"{args.mb} MB body: Content-Length -> {declared}, chunked -> {streamed}")
    print(f"server peak RSS growth: {(peak - before) / 1024:.1f} MB")


if __name__ == "__main__":
    main()
