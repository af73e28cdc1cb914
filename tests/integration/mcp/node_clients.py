"""The real Node MCP clients pinned in tests/clients (the official TypeScript SDK, the MCP Inspector
CLI), which scripts/test installs with `npm ci`. A missing Node or install fails these tests rather
than skipping them, so a CI without them cannot pass quietly."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLIENTS = Path(__file__).parents[2] / "clients"
CAIRN = str(Path(sys.executable).parent / "cairn")


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH: the MCP client tests need Node.js 20+ and npm (see tests/clients)")
    if not (CLIENTS / "node_modules" / ".package-lock.json").is_file():
        pytest.fail(
            "the pinned MCP clients are not installed: `npm ci --prefix tests/clients` (scripts/test runs it)"
        )
    return found


def run_node(args: list[str], *, cwd: Path = CLIENTS, env: dict[str, str] | None = None) -> str:
    """Run a Node program to completion and return its stdout; a failure shows its stderr."""
    done = subprocess.run(
        [node(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr}"
    return done.stdout
