"""A memory removed with its bytes (an erasure, a hard forget) between a listing's read of its record
and the read of its bytes is left out of that answer, as if the listing had come a moment later:
the answer about many is not refused for it, and nothing calls it damaged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.thoughtmcp.brain import BRAIN_MARK
from cairn.services.thoughtmcp.models import Filters, NewMemory
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.container import fake_container


class GoneAsRead(MemoryBlobStore):
    """The container's blobs: `meanwhile` runs once, just before the first read of `key`."""

    def __init__(self, blobs: MemoryBlobStore) -> None:
        super().__init__()
        self.items = blobs.items
        self.key = ""
        self.meanwhile: Callable[[], object] | None = None

    def get(self, key: str) -> bytes:
        if key == self.key and self.meanwhile is not None:
            then, self.meanwhile = self.meanwhile, None
            then()
        return super().get(key)


@pytest.fixture
def c(tmp_path: Path) -> Container:
    container = fake_container(tmp_path)
    blobs = container.adapters.blobs
    assert isinstance(blobs, MemoryBlobStore)
    assert container.documents.blobs is blobs
    container.documents.blobs = GoneAsRead(blobs)  # every surface reads documents' bytes through it
    return container


def _gone_as_read(c: Container, doc_id: str, remove: Callable[[], object]) -> GoneAsRead:
    doc = c.documents.repo.get_by_id(doc_id)
    assert doc is not None
    blobs = c.documents.blobs
    assert isinstance(blobs, GoneAsRead)
    blobs.key, blobs.meanwhile = doc.blob_key, remove
    return blobs


def test_zengram_listings_leave_out_a_memory_erased_as_they_read_it(c: Container) -> None:
    with access.as_system():
        stored = [
            c.zengram.store({"type": "event", "content": f"Deploy {i} finished", "source_agent": agent}).body
            for i, agent in enumerate(["ops-bot", "scout", "ops-bot"])
        ]
        kept = {stored[0]["id"], stored[2]["id"]}
        for ask in (
            lambda: c.zengram.query({"type": "event"}),
            lambda: c.zengram.export({}),
            lambda: c.zengram.briefing({"since": "2000-01-01", "format": "full"}),
        ):
            blobs = _gone_as_read(c, stored[1]["id"], lambda: c.erasure.erase("source_agent", "scout"))
            answer = ask()
            assert blobs.meanwhile is None  # the erasure ran between the record's read and the bytes'
            assert answer.status == 200, answer.body
            rows = answer.body.get("results") or answer.body.get("memories") or answer.body.get("entries")
            assert {row["id"] for row in rows} == kept and "unreadable" not in answer.body, answer.body
            c.zengram.store({"type": "event", "content": "Deploy 1 finished", "source_agent": "scout"})
            stored[1] = c.zengram.query({"type": "event", "source_agent": "scout"}).body["results"][0]


def test_thoughtmcp_recall_leaves_out_a_long_memory_forgotten_as_it_reads_it(c: Container) -> None:
    with access.as_system():
        brain: Brain = c.brains.create("Team", slug="team", metadata={BRAIN_MARK: True})
        made = [
            c.thoughts.remember(
                brain,
                NewMemory(
                    content=f"The vault code {i} is on the wall." + " It is kept behind the boiler." * 200,
                    user_id="xavier",
                    session_id="s1",
                    sector="semantic",
                ),
            )["memoryId"]
            for i in range(3)
        ]
        blobs = _gone_as_read(c, made[1], lambda: c.thoughts.forget(brain, made[1], "xavier", soft=False))
        page, _ = c.thoughts.recall(brain, "xavier", text=None, filters=Filters())

    assert blobs.meanwhile is None
    assert {found.row.id for found in page} == {made[0], made[2]}


def test_gbrain_lists_leave_out_a_page_erased_as_they_read_it(c: Container) -> None:
    with access.as_system():
        brain = c.brains.create("Alpha", slug="alpha")
        made = [
            c.pages.put(f"alpha::people/lead-{i}", f"# lead {i}\n\nRuns team {i}.").page for i in range(3)
        ]
        doomed = made[1].document
        blobs = _gone_as_read(c, doomed.id, lambda: c.documents.erase(brain, doomed.path))
        listed = c.pages.list("alpha")

    assert blobs.meanwhile is None
    assert [p.document.id for p in listed] == [made[2].document.id, made[0].document.id]


def test_a_damaged_memory_does_not_count_against_a_querys_limit(c: Container) -> None:
    """GET /memory/query has no offset: the newest `limit` readable memories, the damaged one named
    beside them, not one fewer."""
    with access.as_system():
        ids = [
            c.zengram.store({"type": "event", "content": f"Deploy {i} done", "source_agent": "ops"}).body[
                "id"
            ]
            for i in range(5)
        ]
        newest = c.documents.repo.get_by_id(ids[-1])
        assert newest is not None
        c.documents.blobs.delete(newest.blob_key)
        answer = c.zengram.query({"type": "event", "limit": "3"})

    assert answer.status == 200
    assert [row["id"] for row in answer.body["results"]] == ids[-2:-5:-1] and answer.body["count"] == 3
    assert [u["id"] for u in answer.body["unreadable"]] == [newest.id]
