"""Many processes on one data directory, writing the same brain at once: two `cairn serve` (REST
writes and batch-ops), `cairn mcp` over stdio (memory_remember) and the CLI (`cairn ingest`, run
again and again). Three of them write the same few paths as fast as they can. Afterwards every
acknowledged write is there (a path several wrote holds one of the acknowledged texts), and the
index holds exactly what the records say, chunk by chunk: no write lost, none left unindexed,
none one write behind. The REST writers start once the MCP session is open, and they and the MCP
writer keep on until every ingest run is done: whatever each process's start takes, they all write
at once."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from cairn.bootstrap import build_container
from cairn.bootstrap.closing import close_stores
from cairn.config import Settings
from tests.support.index_check import index_problems
from tests.support.processes import CAIRN, batch, cli, environment, put, serving

pytestmark = pytest.mark.integration
ROUNDS = 15  # at least, for each REST and the MCP writer, and at most three times that
INGEST_RUNS = 2
SHARED = [f"shared/{n}.md" for n in range(3)]


def test_concurrent_writers_in_separate_processes_lose_nothing_and_leave_no_stale_index(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    made = build_container(Settings(data_dir=data))  # set-up, not under test
    made.brains.create("Shared")
    close_stores(made)
    folder = tmp_path / "notes"
    folder.mkdir()
    acknowledged: dict[str, set[str]] = defaultdict(set)
    lock = threading.Lock()
    errors: list[BaseException] = []

    rounds: dict[str, int] = {}
    mcp_open, ingested = threading.Event(), threading.Event()

    def done(path: str, text: str) -> None:
        with lock:
            acknowledged[path].add(text)

    def more(i: int) -> bool:
        return i < ROUNDS or (i < 3 * ROUNDS and not ingested.is_set())

    with serving(data) as first, serving(data) as second:

        def rest(base: str, name: str) -> None:
            assert mcp_open.wait(timeout=120), "the MCP session never opened"
            i = 0
            while more(i):
                text = f"# Rest {name} {i}\n\nThe kestrel hovers; {name} writer round {i}."
                answered = put(base, "shared", SHARED[i % 3], text)
                assert answered.status_code == 204, answered.text
                done(SHARED[i % 3], text)
                writes = {
                    f"{name}/{i}-{k}.md": f"# {name} {i}-{k}\n\nBatch note {k} of round {i}."
                    for k in range(2)
                }
                writes[SHARED[(i + 2) % 3]] = f"# Batch {name} {i}\n\nA batch of {name} overwrote it."
                answered = batch(base, "shared", writes)
                assert answered.status_code == 200, answered.text
                for path, body in writes.items():
                    done(path, body)
                i += 1
            rounds[name] = i

        async def mcp() -> None:
            params = StdioServerParameters(
                command=CAIRN, args=["mcp", "--data-dir", str(data)], env=environment()
            )
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                mcp_open.set()
                i = 0
                while more(i):
                    text = f"# Mcp {i}\n\nThe curlew calls; stdio writer round {i}, token mcpmark{i}."
                    for path in (SHARED[(i + 1) % 3], f"mcp/{i}.md"):
                        result = await session.call_tool(
                            "memory_remember", {"content": text, "path": path, "brain": "shared"}
                        )
                        assert not result.is_error, result.content
                        done(path, text)
                    i += 1
                rounds["mcp"] = i

        def ingest() -> None:
            for run in range(INGEST_RUNS):
                for n in range(3):
                    (folder / f"n{n}.md").write_text(
                        f"# Note {n}\n\nThe dunlin flock, ingest run {run}, note {n}."
                    )
                finished = cli("ingest", str(folder), "--brain", "shared", "--data-dir", str(data))
                assert finished.returncode == 0, finished.stderr
                for n in range(3):
                    done(f"ingest/notes/n{n}.md", (folder / f"n{n}.md").read_text())
            ingested.set()

        def guarded(work: object) -> None:
            try:
                work() if callable(work) else None
            except BaseException as exc:
                errors.append(exc)
                mcp_open.set()  # the others end too
                ingested.set()

        threads = [
            threading.Thread(target=guarded, args=(lambda: rest(first.base, "one"),)),
            threading.Thread(target=guarded, args=(lambda: rest(second.base, "two"),)),
            threading.Thread(target=guarded, args=(lambda: asyncio.run(mcp()),)),
            threading.Thread(target=guarded, args=(ingest,)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        assert not errors, errors

    container = build_container(Settings(data_dir=data))
    brain = container.brains.resolve("shared")
    for path, texts in acknowledged.items():
        assert container.documents.read(brain, path).decode() in texts, path
    assert len(acknowledged) == 3 + 2 * (rounds["one"] + rounds["two"]) + rounds["mcp"] + 3
    assert index_problems(container) == []
    deep = container.repair.compare(brain, deep=True)
    assert deep.sound, deep
