"""memory_ingest_file and memory_ingest_url over real HTTP: IngestResponse, the ingest root, size and
address refusals (each leaving the brain unchanged)."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.integration.mcp.conftest import LiveServer, error, ok, start_server, text
from tests.support.swap_race import OUTSIDE, lay_out, swapping

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024
INGEST_KEYS = {
    "status",
    "document_id",
    "path",
    "hash",
    "chunk_count",
    "embedded_count",
    "duration_ms",
    "reused",
}


@pytest.fixture
def brained(live: LiveServer) -> LiveServer:
    live.container.brains.create("Docs", slug="docs")
    return live


async def _call(live: LiveServer, tool: str, args: dict[str, Any]) -> Any:
    async with Client(live.url) as client:
        return await client.call_tool(tool, args)


async def _refused(live: LiveServer, tool: str, args: dict[str, Any]) -> dict[str, str]:
    before = live.snapshot()
    err = error(await _call(live, tool, args))
    assert live.snapshot() == before
    return err


async def test_ingest_a_file_below_the_root_by_relative_then_absolute_path(brained: LiveServer) -> None:
    readme = brained.ingest_root / "guides" / "readme.md"
    readme.parent.mkdir()
    readme.write_text("# Readme\n\nHow to deploy the lighthouse.\n")
    async with Client(brained.url) as client:
        first = await client.call_tool("memory_ingest_file", {"path": "guides/readme.md"})
        again = await client.call_tool("memory_ingest_file", {"path": str(readme)})
        hits = ok(await client.call_tool("memory_search", {"query": "lighthouse"}))["hits"]
    created, reused = ok(first), ok(again)
    assert set(created) == INGEST_KEYS
    assert created["status"] == "completed" and created["reused"] is False
    assert created["chunk_count"] >= 1 and created["embedded_count"] == created["chunk_count"]
    assert created["duration_ms"] >= 0 and len(created["hash"]) == 64
    assert created["path"] in text(first) and created["document_id"] in text(first)
    assert reused["document_id"] == created["document_id"] and reused["reused"] is True
    assert reused["embedded_count"] == 0
    assert [h["document_id"] for h in hits] == [created["document_id"]]


async def test_as_overrides_the_extension(brained: LiveServer) -> None:
    (brained.ingest_root / "data.txt").write_text("# Heading\n\nplain words")
    result = ok(await _call(brained, "memory_ingest_file", {"path": "data.txt", "as": "markdown"}))
    brain = brained.container.brains.get("docs")
    assert brained.container.documents.get(brain, result["path"]).content_type == "text/markdown"


async def test_path_traversal_is_refused_naming_where_files_may_be_read(
    brained: LiveServer, tmp_path: Path
) -> None:
    (tmp_path / "secret.md").write_text("do not read")
    err = await _refused(brained, "memory_ingest_file", {"path": "../secret.md"})
    assert err["code"] == "forbidden"
    where = f"{brained.ingest_root}, the directory files may be read from"
    assert err["message"] == f"../secret.md is outside {where}"


async def test_swapping_a_directory_for_an_outside_symlink_never_ingests_the_outside_file(
    brained: LiveServer, tmp_path: Path
) -> None:
    # Given a directory under the ingest root that a thread keeps swapping (by rename) for a
    # symlink to an outside directory holding a file of the same name
    root = brained.ingest_root
    lay_out(root, tmp_path / "outside")
    leaked = hashlib.sha256(OUTSIDE).hexdigest()
    outcomes: Counter[str] = Counter()
    with swapping(root, outcomes):
        # When memory_ingest_file reads through the swapped name hundreds of times (and on, on a
        # busy machine, until the race has gone both ways)
        async with Client(brained.url) as client:
            for calls in range(3_000):
                result = await client.call_tool("memory_ingest_file", {"path": "d/f.txt"})
                if result.is_error:
                    outcomes[error(result)["code"]] += 1
                else:
                    outcomes["leaked" if ok(result)["hash"] == leaked else "ingested"] += 1
                if calls >= 300 and outcomes["ingested"] and outcomes["swaps"] > 50:
                    break
    # Then the outside file is never ingested, and both sides of the race were seen
    assert outcomes["leaked"] == 0, outcomes
    assert outcomes["ingested"] > 0 and outcomes["swaps"] > 50, outcomes
    brain = brained.container.brains.get("docs")
    assert brained.container.documents.read(brain, "ingest/f.txt") == b"inside"


async def test_an_absolute_path_outside_the_root_is_refused(brained: LiveServer, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("not yours")
    assert (await _refused(brained, "memory_ingest_file", {"path": str(outside)}))["code"] == "forbidden"


async def test_a_symlink_out_of_the_root_is_refused(brained: LiveServer, tmp_path: Path) -> None:
    target = tmp_path / "target.md"
    target.write_text("linked")
    (brained.ingest_root / "link.md").symlink_to(target)
    assert (await _refused(brained, "memory_ingest_file", {"path": "link.md"}))["code"] == "forbidden"


async def test_a_missing_file_is_not_found(brained: LiveServer) -> None:
    assert (await _refused(brained, "memory_ingest_file", {"path": "nope.md"}))["code"] == "not_found"


async def test_a_file_over_25_mib_is_file_too_large(brained: LiveServer) -> None:
    big = brained.ingest_root / "big.txt"
    with big.open("wb") as f:
        f.truncate(26 * MiB)  # sparse: no 26 MiB written to disk
    assert os.path.getsize(big) == 26 * MiB
    err = await _refused(brained, "memory_ingest_file", {"path": "big.txt"})
    assert err["code"] == "file_too_large"


async def test_ingest_url_to_loopback_is_refused_by_default(brained: LiveServer) -> None:
    err = await _refused(brained, "memory_ingest_url", {"url": f"{brained.base}/healthz"})
    assert err["code"] == "url_refused"


async def test_ingest_url_refuses_other_schemes(brained: LiveServer) -> None:
    err = await _refused(brained, "memory_ingest_url", {"url": "file:///etc/passwd"})
    assert err["code"] == "url_refused"


@pytest.fixture
def private_ok(tmp_path: Path) -> Iterator[LiveServer]:
    for live in start_server(tmp_path, allow_private_urls=True):
        live.container.brains.create("Web", slug="web")
        yield live


async def test_ingest_url_server_path_returns_the_ingest_response(private_ok: LiveServer) -> None:
    # The server fetches its own /healthz: loopback is allowed for this container only.
    result = await _call(private_ok, "memory_ingest_url", {"url": f"{private_ok.base}/healthz"})
    payload = ok(result)
    assert set(payload) == {"path", "result"} and payload["path"] == "server"
    assert set(payload["result"]) == INGEST_KEYS and payload["result"]["status"] == "completed"
    brain = private_ok.container.brains.get("web")
    stored = private_ok.container.documents.read(brain, payload["result"]["path"])
    assert b'"status":"ok"' in stored
    assert payload["result"]["path"] in text(result)


async def test_credentials_in_an_ingested_url_are_kept_in_no_audit_entry_or_summary(
    private_ok: LiveServer,
) -> None:
    """The audit log is read by other principals (a tenant's admins): a site's password or token in
    the URL an agent ingested must not be in it, nor in the summary an agent's transcript keeps."""
    host = private_ok.base.removeprefix("http://")
    url = f"http://siteuser:PASSWORD-MARKER@{host}/healthz?api_token=TOKEN-MARKER"
    result = await _call(private_ok, "memory_ingest_url", {"url": url, "brain": "web"})
    ok(result)
    entries, _ = private_ok.container.audit.query(tenant="local", limit=100)
    [entry] = [e for e in entries if e.action == "mcp.memory_ingest_url"]
    assert entry.target == f"http://{host}/healthz?…"
    for marker in ("PASSWORD-MARKER", "TOKEN-MARKER", "siteuser"):
        assert marker not in str(entry) and marker not in text(result)
