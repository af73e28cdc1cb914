"""Concurrent update_memory calls on one memory: every one succeeds (each applied on top of the
one before), none loses, and no answer shows a record key or a version."""

from __future__ import annotations

import threading
from pathlib import Path

from cairn.services.thoughtmcp.models import NewMemory
from tests.fakes.container import fake_container
from tests.support.threads import run_together


def test_every_concurrent_update_succeeds_and_none_is_lost(tmp_path: Path) -> None:
    c = fake_container(tmp_path)
    brain = c.brains.create("ThoughtMCP", slug="t")
    memory = c.thoughts.remember(brain, NewMemory("The first draft of the plan.", "u1", "s", "semantic"))
    memory_id = memory["memoryId"]
    answers: list[object] = []
    read_together = threading.Barrier(8)
    owned = c.thoughts._owned
    first_reads: set[int] = set()

    def owned_then_wait(*args, **kwargs):  # type: ignore[no-untyped-def]
        row = owned(*args, **kwargs)
        if threading.get_ident() not in first_reads:  # every update reads the same version first
            first_reads.add(threading.get_ident())
            read_together.wait(timeout=10)
        return row

    c.thoughts._owned = owned_then_wait  # type: ignore[method-assign]

    def update(n: int) -> None:
        try:
            answers.append(c.thoughts.update(brain, memory_id, "u1", salience=round(0.1 * (n + 1), 1)))
        except Exception as exc:  # what a surface would show
            answers.append(exc)

    run_together(update, range(8))

    assert all(isinstance(a, dict) and a["memoryId"] == memory_id for a in answers), answers
    assert "thoughts#" not in str(answers) and "expected version" not in str(answers)
    final = c.thoughts.get_many(brain, "u1", [memory_id])[memory_id]
    assert round(final.row.salience, 1) in {round(0.1 * (n + 1), 1) for n in range(8)}
