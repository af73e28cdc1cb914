"""An erasure takes every byte of a document's raw rows: the bytes its rows name, those of rows an
overwrite replaced (named by no record any more), and no other document's."""

from __future__ import annotations

from pathlib import Path

from cairn.auth import access
from cairn.bootstrap import Container
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.container import fake_container


def _raw_bytes(container: Container) -> list[bytes]:
    blobs = container.adapters.blobs
    assert isinstance(blobs, MemoryBlobStore)
    return [body for key, body in blobs.items.items() if "/raw/" in key]


def test_an_erasure_takes_the_bytes_of_raw_rows_an_overwrite_replaced(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    with access.as_system():
        brain = container.brains.create("Team", slug="team")
        doomed = container.ingest.remember(
            brain, "# Tea\n\nScout likes tea.", path="memory/agent/scout/tea.md"
        )
        kept = container.ingest.remember(brain, "# Plan\n\nThe plan.", path="notes/plan.md")
        container.raw_data.put(brain, doomed.id, "crm", {"home": "12 Larkspur Lane"})
        container.raw_data.put(brain, doomed.id, "crm", {"home": "moved"}, overwrite=True)
        container.raw_data.put(brain, doomed.id, "exa", {"home": "moved"})
        container.raw_data.put(brain, kept.id, "crm", {"home": "moved"})
        assert any(b"Larkspur" in body for body in _raw_bytes(container))

        receipt = container.erasure.erase("agent_scope", "scout")

        left = _raw_bytes(container)
        assert not any(b"Larkspur" in body for body in left)
        assert len(left) == 1 and container.raw_data.get(brain, kept.id, "crm") is not None
        assert receipt.removed["blobs"] >= 3  # each of the doomed rows' bytes counted once at least
