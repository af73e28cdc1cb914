"""What an erasure logs while it runs never names its subject: the erase of a document whose index
is busy after the commit logs and says it by its id, not by a path that names the agent."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cairn import faults
from cairn.auth import access
from cairn.domain.errors import Unavailable
from tests.fakes.container import fake_container

AGENT = "Quillmoor"


def busy() -> None:
    raise Unavailable("the search index is held by another process", retry_after_s=1)


def test_an_erase_whose_index_is_busy_logs_the_document_by_its_id(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    container = fake_container(tmp_path)
    with access.as_system():
        brain = container.brains.create("Team", slug="team")
        container.documents.write(brain, f"memory/agent/{AGENT}/tea.md", b"# Tea\n\nTea at four.")
        doc = container.documents.repo.stored(brain.id, f"memory/agent/{AGENT}/tea.md")
        assert doc is not None
        indexed = faults.armed("documents.indexed", action=busy)
        with caplog.at_level(logging.DEBUG), indexed, pytest.raises(Unavailable) as raised:
            container.erasure.erase("agent_scope", AGENT)
        (finished,) = container.erasure.resume()  # the index free again
    assert finished.status == "completed" and container.documents.repo.stored_by_id(doc.id) is None
    assert doc.id in caplog.text and "was stored, its chunks left for the sweeper" in caplog.text
    assert AGENT.lower() not in caplog.text.lower() and AGENT.lower() not in raised.value.message.lower()
