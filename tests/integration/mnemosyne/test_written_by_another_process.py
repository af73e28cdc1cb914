"""A library listing a process keeps (services/mnemosyne/libraries.py) follows what another
process commits to the same data directory (`cairn serve`, `cairn mcp` and the CLI may share one):
a document deleted there leaves the listing here at once, and one added there shows in it at once,
even when the commit lands while the listing is being read. Each process is a container of its
own over its own store objects on the same files."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.mnemosyne.libraries import Library
from tests.support.shapes import embedded, process


@dataclass
class Shared:
    serve: Container  # the process that keeps listings
    other: Container  # another process on the same data directory
    brain: Brain
    library: Library


def titles(c: Container, library: Library) -> list[str]:
    return [item.title for item in c.libraries.items([library], limit=50, offset=0)]


@pytest.fixture
def shared(tmp_path: Path) -> Shared:
    serve, other = (process(embedded(tmp_path / "data"), tmp_path) for _ in range(2))
    brain = serve.brains.create("Library", slug="lib")
    serve.ingest.remember(brain, "# Confidential merger plan\n\nDo not share.", path="docs/merger.md")
    serve.ingest.remember(brain, "# Runbook\n\nRestart the workers.", path="docs/runbook.md")
    library = serve.libraries.library(brain.id)
    # Given the listing kept by `serve`
    assert titles(serve, library) == ["Confidential merger plan", "Runbook"]
    assert serve.libraries.listings
    return Shared(serve, other, brain, library)


def test_a_document_deleted_by_another_process_leaves_the_listing(shared: Shared) -> None:
    shared.other.documents.delete(shared.brain, "docs/merger.md")

    assert titles(shared.serve, shared.library) == ["Runbook"]


def test_a_document_added_by_another_process_shows_in_the_listing(shared: Shared) -> None:
    shared.other.ingest.remember(shared.brain, "# Onboarding\n\nWelcome aboard.", path="docs/onboarding.md")

    assert titles(shared.serve, shared.library) == ["Confidential merger plan", "Onboarding", "Runbook"]


def test_a_listing_read_while_another_process_commits_is_read_again(shared: Shared) -> None:
    shared.serve.libraries.forget_listing(shared.brain.id)  # read afresh below
    raw = shared.serve.documents.repo.raw
    landed: list[bool] = []

    def raw_then_other_writes(brain_id: str, prefix: str = "") -> Iterator[Any]:
        rows = list(raw(brain_id, prefix))
        if not landed:
            landed.append(True)
            shared.other.documents.delete(shared.brain, "docs/runbook.md")
        return iter(rows)

    shared.serve.documents.repo.raw = raw_then_other_writes  # type: ignore[method-assign]
    assert titles(shared.serve, shared.library) == ["Confidential merger plan", "Runbook"]  # read before
    assert landed
    assert titles(shared.serve, shared.library) == ["Confidential merger plan"]
