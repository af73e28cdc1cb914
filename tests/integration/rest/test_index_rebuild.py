"""A brain whose index is being rebuilt, seen through a live server: every surface refuses its
searches with a 503 in its own style (Retry-After where HTTP carries it), never a 500 and never a
partial answer; another brain answers meanwhile; /healthz names the brain; and once the rebuild is
done the brain answers as before. The server runs on the embedded store, over a vector file that
lost its last rows while the server was down."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mcp import Client

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from tests.integration.mcp.conftest import ServerThread
from tests.support.index_check import index_problems
from tests.support.shapes import embedded

pytestmark = pytest.mark.anyio

NOTES = {
    "notes/heron.md": "# Heron\n\nThe heron waits by the weir at dawn.",
    "notes/ferry.md": "# Ferry\n\nThe ferry to the island leaves at nine.",
    "notes/tide.md": "# Tide\n\nTide tables for the estuary are printed weekly.",
}


@dataclass
class Rebuilding:
    base: str
    container: Container
    brain: Brain
    other: Brain
    release: threading.Event


@pytest.fixture
def rebuilding(tmp_path: Path) -> Iterator[Rebuilding]:
    data = tmp_path / "data"
    first = build_container(Settings(data_dir=data), embedded(data))
    brain = first.brains.create("Shore", slug="shore")
    other = first.brains.create("Other", slug="other")
    for path, body in NOTES.items():
        first.documents.write(brain, path, body.encode())
    first.documents.write(other, "x.md", b"# X\n\nThe heron of the other brain.")
    first.adapters.chunks.close()  # type: ignore[attr-defined]
    (vectors,) = [p for p in (data / "vectors").glob("*.f32") if p.stat().st_size == 3 * 4 * 64]
    with vectors.open("r+b") as fh:  # the shore brain's file loses its last row and a half
        fh.truncate(vectors.stat().st_size - 6 * 64)

    container = build_container(Settings(data_dir=data), embedded(data))
    found = container.repair.check_all(container.brains.list(), repair=False)  # as `cairn serve` starts
    assert [f.slug for f in found if not f.sound] == ["shore"]
    release = threading.Event()
    reconcile = container.documents.reconcile

    def held_back(brain_id: str, doc_id: str, *, context: str | None = None) -> bool:
        assert release.wait(60)
        return reconcile(brain_id, doc_id, context=context)

    container.documents.reconcile = held_back  # type: ignore[method-assign]
    container.repair.start(found)
    with ServerThread(container) as server:
        yield Rebuilding(f"http://127.0.0.1:{server.port}", container, brain, other, release)
        release.set()
        container.repair.stop()


def test_every_surface_refuses_the_brain_with_a_503_until_it_is_rebuilt(rebuilding: Rebuilding) -> None:
    base = rebuilding.base
    rest = httpx.post(f"{base}/v1/brains/shore/search", json={"query": "heron"}, timeout=30)
    assert rest.status_code == 503
    assert int(rest.headers["retry-after"]) >= 2
    assert rest.headers["content-type"].startswith("application/problem+json")
    assert rest.json()["code"] == "unavailable" and "rebuilt" in rest.json()["detail"]

    zengram = httpx.get(
        f"{base}/zengram/memory/search", params={"q": "heron"}, timeout=30
    )  # the default brain
    assert zengram.status_code == 503 and int(zengram.headers["retry-after"]) >= 2
    assert set(zengram.json()) == {"error"} and "rebuilt" in zengram.json()["error"]
    other = httpx.post(f"{base}/v1/brains/other/search", json={"query": "heron"}, timeout=30)
    assert other.status_code == 200 and other.json()["hits"]

    health = httpx.get(f"{base}/healthz", timeout=30).json()
    assert health["status"] == "rebuilding"
    assert [b["brain_id"] for b in health["rebuilding"]] == [rebuilding.brain.id]

    rebuilding.release.set()
    deadline = time.monotonic() + 60
    while rebuilding.container.repair.rebuilding.now():  # a stop would leave the rest for the next start
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert httpx.get(f"{base}/healthz", timeout=30).json()["status"] == "ok"
    done = httpx.post(f"{base}/v1/brains/shore/search", json={"query": "heron weir"}, timeout=30)
    assert done.status_code == 200 and done.json()["hits"][0]["path"] == "notes/heron.md"
    assert index_problems(rebuilding.container) == []


async def test_mcp_tools_say_the_brain_is_being_rebuilt(rebuilding: Rebuilding) -> None:
    async with Client(f"{rebuilding.base}/mcp") as client:
        result = await client.call_tool("memory_search", {"query": "heron", "brain": "shore"})
    assert result.is_error
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert body["code"] == "unavailable" and "retry" in body["message"]
