"""The CLI used while `cairn serve` runs on the same data directory (README, "Command line"): while
a live server takes REST writes, CLI processes ingest, import, create a brain and write into the
same brain. Each then finds what the other acknowledged, by search, at once (no cache of brains,
documents or vector files outlives another process's commit), and afterwards every acknowledged
write is there and the index holds exactly what the records say. tests/integration/cli/
test_many_processes.py races more writers over the same paths."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest

from cairn.bootstrap import build_container
from cairn.bootstrap.closing import close_stores
from cairn.config import Settings
from tests.support.index_check import index_problems
from tests.support.processes import cli, put, serving

pytestmark = pytest.mark.integration
ROUNDS = 40


def test_cli_commands_beside_a_live_server_lose_nothing_and_see_each_others_writes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(12):
        (folder / f"n{n}.md").write_text(f"# Field note {n}\n\nThe dunlin flock wheels, clibanarius{n}.")
    (tmp_path / "archive.md").write_text("# Archived\n\nThe godwit probes the mud, marker limosa.")
    archive = tmp_path / "source.jsonl"
    # Made in this process: the CLI's own brains create, ingest and export are not what is tested
    # here (test_cli.py and test_cli_archive.py run them), what it does beside the server is.
    made = build_container(Settings(data_dir=data))
    made.brains.create("Shared")
    close_stores(made)
    source = build_container(Settings(data_dir=tmp_path / "source"))
    brain = source.brains.create("Source")
    source.documents.write(brain, "ingest/archive.md", (tmp_path / "archive.md").read_bytes())
    archive.write_text("".join(json.dumps(record) + "\n" for record in source.archive.export(brain)))
    close_stores(source)

    served: dict[str, str] = {}
    errors: list[BaseException] = []
    with serving(data) as server:

        def rest() -> None:  # until the CLI commands are done, and at least ROUNDS writes
            try:
                i = 0
                while i < ROUNDS or not stop.is_set():
                    text = f"# Served {i}\n\nThe kestrel hovers over round {i}, mark served{i}x."
                    answered = put(server.base, "shared", f"served/{i}.md", text)
                    assert answered.status_code == 204, answered.text
                    served[f"served/{i}.md"] = text
                    i += 1
            except BaseException as exc:
                errors.append(exc)

        stop = threading.Event()
        writer = threading.Thread(target=rest)
        writer.start()
        d = ["--data-dir", str(data)]
        done = [
            cli("ingest", str(folder), "--brain", "shared", *d),
            cli("import", str(archive), "--brain", "restored", *d),
            cli("brains", "create", "Made Meanwhile", *d),
            cli("ingest", str(tmp_path / "archive.md"), "--brain", "shared", *d),
        ]
        stop.set()
        writer.join(timeout=600)
        assert not errors, errors
        assert [c.returncode for c in done] == [0, 0, 0, 0], [c.stderr for c in done]

        def server_finds(brain: str, query: str) -> list[str]:
            answered = httpx.post(
                f"{server.base}/v1/brains/{brain}/search", json={"query": query, "top_k": 3}, timeout=60
            )
            assert answered.status_code == 200, answered.text
            return [hit["path"] for hit in answered.json()["hits"]]

        # What the CLI wrote, the running server finds, and the other way round.
        assert server_finds("shared", "clibanarius7")[0] == "ingest/notes/n7.md"
        assert server_finds("restored", "limosa godwit")[0] == "ingest/archive.md"
        brains = httpx.get(f"{server.base}/v1/brains", timeout=30).json()["items"]
        assert {"shared", "restored", "made-meanwhile"} <= {b["slug"] for b in brains}
        found = cli("search", "served17x kestrel", "--brain", "shared", "--top-k", "1", *d)
        assert found.returncode == 0 and "served/17.md" in found.stdout, found

    container = build_container(Settings(data_dir=data))
    shared = container.brains.resolve("shared")
    for path, text in served.items():
        assert container.documents.read(shared, path).decode() == text
    for n in range(12):
        assert container.documents.read(shared, f"ingest/notes/n{n}.md").decode().endswith(f"clibanarius{n}.")
    assert len(served) >= ROUNDS
    assert index_problems(container) == []
    for brain in (shared, container.brains.resolve("restored")):
        assert container.repair.compare(brain, deep=True).sound
