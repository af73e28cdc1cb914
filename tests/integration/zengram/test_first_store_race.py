"""Concurrent first stores on a fresh server all land in the one "Shared Brain" zengram reads: none
is refused because another made the brain first, and none makes a second brain zengram never reads
(services/brains.py `first`). On the embedded store and the AWS adapters."""

from __future__ import annotations

import pytest

from cairn.bootstrap import Container
from cairn.services.zengram.reply import Reply
from tests.support.first_writes import RACES, at_once, fresh_store, racing_creates

WRITERS = 8
__all__ = ["fresh_store"]


@pytest.mark.parametrize("race", RACES)
def test_concurrent_first_stores_all_land_in_one_shared_brain(c: Container, race: str) -> None:
    with racing_creates(c, WRITERS, race):
        answers = at_once(
            WRITERS,
            lambda i: c.zengram.store(
                {"type": "event", "content": f"Deploy number {i} finished", "source_agent": "claude-code"}
            ),
        )

    stored = [a for a in answers if isinstance(a, Reply) and a.status == 201]
    assert len(stored) == WRITERS, answers
    assert [(b.slug, b.name) for b in c.brains.list()] == [("shared-brain", "Shared Brain")]
    exported = c.zengram.export({"limit": "100"}).body["memories"]
    assert sorted(m["id"] for m in exported) == sorted(a.body["id"] for a in stored)
