"""An erasure that meets a damaged file of the store stops at once (another try cannot help: only a
repair does), stays running with the damage on its receipt, and finishes when resumed after."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.auth import access
from cairn.domain.errors import DamagedStore
from tests.fakes.container import fake_container


def test_an_erasure_meeting_a_damaged_store_stops_at_once_and_resumes_after_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = fake_container(tmp_path)
    erasure = container.erasure
    scrubs: list[list[str]] = []
    damage = DamagedStore("a database file of the server is damaged: `cairn check` names it")

    def damaged(brain_ids: list[str]) -> None:
        scrubs.append(brain_ids)
        raise damage

    with access.as_system():
        brain = container.brains.create("Team", slug="team")
        container.ingest.remember(brain, "# Tea\n\nScout likes tea.", path="memory/agent/scout/tea.md")
        monkeypatch.setattr(erasure, "_scrub_once", damaged)
        with pytest.raises(DamagedStore):
            erasure.erase("agent_scope", "scout")
        assert len(scrubs) == 1  # not tried again
        (pending,) = erasure.erasures.running()
        assert pending.receipt.status == "running" and pending.receipt.stalled == damage.message
        assert erasure.resume() == [] and len(scrubs) == 2  # still damaged: it stays, said in the log

        monkeypatch.undo()  # repaired
        (finished,) = erasure.resume()
    assert finished.id == pending.receipt.id
    assert finished.status == "completed" and finished.stalled is None and finished.removed["documents"] == 1
