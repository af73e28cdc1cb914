"""An erasure that meets a damaged file of the store stops at once (another try cannot help: only a
repair does), stays running with the damage on its receipt, and finishes when resumed after."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.domain.errors import DamagedStore
from cairn.services.erasure.subjects import unnamed
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


def test_what_a_stopped_erasure_says_leaves_the_subject_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged record under the erased agent's folder stops the erasure with its key, which names
    the subject: the error raised (answered and logged by the surface), the receipt while it waits
    and the log of a resume say "[erased]" in its place, and the rest of the key stays for the
    operator."""
    container = fake_container(tmp_path)
    erasure = container.erasure
    with access.as_system():
        brain = container.brains.create("Team", slug="team")
        container.documents.write(brain, "memory/agent/Scout/tea.md", b"# Tea\n\nScouting for tea.")
        container.documents.write(brain, "memory/agent/Scout/cake.md", b"# Cake\n\nScout likes cake.")
        held = container.adapters.records.get(f"brain#{brain.id}", "doc#memory/agent/Scout/tea.md")
        assert held is not None
        container.adapters.records.put(replace(held, data={"path": 5}), held.version)
        with pytest.raises(DamagedStore) as raised:
            erasure.erase("agent_scope", "Scout")
        (pending,) = erasure.erasures.running()
        with caplog.at_level(logging.DEBUG):
            assert erasure.resume() == []
    said = [raised.value.message, str(raised.value), pending.receipt.stalled or "", caplog.text]
    assert "memory/agent/[erased]/tea.md" in raised.value.message
    assert all("Scout/" not in text and "scout/" not in text for text in said), said
    assert "memory/agent/[erased]/tea.md" in caplog.text


def test_only_the_subject_s_own_words_are_left_out() -> None:
    said = unnamed(DamagedStore("doc#memory/agent/scout/x.md, Scout, scouting, boyscout"), "scout").message
    assert said == "doc#memory/agent/[erased]/x.md, [erased], scouting, boyscout"
    assert unnamed(DamagedStore("memory/agent/scout/"), None).message == "memory/agent/scout/"
