"""What a `cairn` command imports: the heavy packages it never uses stay out. `--help` and a store
command that embeds nothing (`brains list`) load neither the MCP SDK, FastAPI, boto3 nor the
embedding runtime (onnxruntime and tokenizers, imported by the ONNX embedder on its first text);
a search loads the runtime, which it uses. And Cairn's own: the parser imports a command's module
when that command runs (parser.py `Runs`), so `--help` and `--version` load no service, adapter,
store or configuration code and no command module, and a command loads its own module only."""

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
own = lambda: sorted(m for m in sys.modules if m.startswith("cairn."))
atexit.register(lambda: print("@@cairn" + json.dumps(own())))
sys.argv = ["cairn", *sys.argv[1:]]
from cairn.entrypoints.cli.parser import main
sys.exit(main())
"""


def imported(data: Path, *args: str, own: bool = False) -> list[str]:
    """The heavy packages the command loaded; with `own`, the Cairn modules it loaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["CAIRN_DATA_DIR"] = str(data)
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    mark = "@@cairn" if own else "@@["
    line = next(line for line in done.stdout.splitlines() if line.startswith(mark))
    found: list[str] = json.loads(line.removeprefix("@@cairn" if own else "@@"))
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


CLI = "cairn.entrypoints.cli."
LIGHT = {f"{CLI}parser", f"{CLI}opened"}
"""The command modules `cairn` itself loads: the parser and the closing of what a command opened."""
STORE_CODE = ("cairn.services", "cairn.adapters", "cairn.bootstrap", "cairn.container", "cairn.config")


def test_help_and_version_load_no_store_code_nor_any_command(tmp_path: Path) -> None:
    for args in (("--help",), ("--version",), ("brains", "--help"), ("serve", "--help")):
        own = imported(tmp_path / "data", *args, own=True)
        assert [m for m in own if m.startswith(STORE_CODE)] == [], args
        assert {m for m in own if m.startswith(CLI)} == LIGHT, args
        assert len(own) < 30, (args, own)  # 12 when written; the whole of Cairn is over 290


def test_a_command_loads_its_own_module_not_the_others(store: Path) -> None:
    for args, module in (
        (("brains", "list"), "brains"),
        (("keys", "list"), "brains"),
        (("export", "tea", "-o", str(store.parent / "tea.jsonl")), "archive"),
    ):
        own = {m for m in imported(store, *args, own=True) if m.startswith(CLI)}
        assert f"{CLI}{module}" in own, args
        unused = {"serve", "ingest", "smoke", "calibrate", "erasure", "oauth_clients", "archive", "brains"}
        assert own & {f"{CLI}{m}" for m in unused - {module}} == set(), args
