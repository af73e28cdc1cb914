"""What a `cairn` command imports: the heavy packages it never uses stay out. `--help` and a store
command that embeds nothing (`brains list`) load neither the MCP SDK, FastAPI, boto3 nor the
embedding runtime (onnxruntime and tokenizers, imported by the ONNX embedder on its first text);
a search loads the runtime, which it uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("onnxruntime", "tokenizers", "boto3", "botocore", "mcp", "mcp_types", "fastapi", "uvicorn")
RUN = f"""
import atexit, json, sys
heavy = {HEAVY!r}
atexit.register(lambda: print("@@" + json.dumps(sorted(m for m in heavy if m in sys.modules))))
sys.argv = ["cairn", *sys.argv[1:]]
from cairn.entrypoints.cli.parser import main
sys.exit(main())
"""


def imported(data: Path, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["CAIRN_DATA_DIR"] = str(data)
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("@@"))
    found: list[str] = json.loads(line[2:])
    return found


@pytest.fixture
def store(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert imported(data, "brains", "create", "Tea", "--slug", "tea") == []
    return data


def test_help_and_a_command_that_embeds_nothing_leave_the_heavy_packages_out(store: Path) -> None:
    assert imported(store, "--help") == []
    assert imported(store, "brains", "list") == []
    assert imported(store, "keys", "list") == []


def test_a_search_loads_the_embedding_runtime_it_uses(store: Path) -> None:
    assert imported(store, "search", "green tea", "--brain", "tea") == ["onnxruntime", "tokenizers"]
