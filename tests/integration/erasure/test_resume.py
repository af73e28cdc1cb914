"""An erasure killed with kill -9 half-way through a brain resumes when `cairn serve` next starts
on the data directory, and finishes: every memory of the user gone, the other user's kept, and its
receipt counting what the killed process removed too."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.mcp.node_clients import CAIRN

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_erasure_killed_half_way_resumes_and_finishes_on_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.erasure.erase_child", str(data)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    erasure_id = ""
    for line in child.stdout:
        if line.startswith("ERASURE "):
            erasure_id = line.split()[1]
        if line.startswith("STALLED"):
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert erasure_id and child.returncode == -signal.SIGKILL

    port = _free_port()
    server = subprocess.Popen(
        [CAIRN, "serve", "--port", str(port), "--data-dir", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        receipt: dict[str, object] = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                receipt = httpx.get(f"{base}/v1/erasures/{erasure_id}", timeout=5).json()
            except httpx.HTTPError:
                receipt = {}
            if receipt.get("status") == "completed":
                break
            time.sleep(0.2)
        assert receipt.get("status") == "completed", receipt
        removed = receipt["removed"]
        assert isinstance(removed, dict)
        # everything once, whoever removed it: the killed process's first brain's 60 rows (which go
        # before its documents) and 25 documents, kept as it went (services/erasure/log.py), and
        # the rest the resume removed
        assert removed["documents"] == 2 * 60 and removed["memory_rows"] == 2 * 60
        assert removed["chunks"] == 2 * 60 and removed["blobs"] == 2 * 60
        for slug in ("first", "second"):
            victor = httpx.post(
                f"{base}/v1/brains/{slug}/search", json={"query": "victormark locker code"}
            ).json()
            wanda = httpx.post(f"{base}/v1/brains/{slug}/search", json={"query": "Wanda note stays"}).json()
            assert "victormark" not in str(victor["hits"]) and "Wanda" in str(wanda["hits"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    for path in data.rglob("*"):
        if path.is_file():
            assert b"victormark" not in path.read_bytes(), path
