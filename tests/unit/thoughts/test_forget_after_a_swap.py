"""A hard forget erases the memory it found by id: when, before its erase, another process moves
that memory's document away and another memory's document to its path, the forgotten one goes
where it is now and the other stays whole. On the fakes, SQLite and DynamoDB under moto."""

from __future__ import annotations

import posixpath
from typing import Any

import pytest

from cairn.bootstrap import Container
from tests.support.thought_links import USER, adapters, c, remembered

__all__ = ["adapters", "c"]  # fixtures

TEXT = "The lighthouse keeper logged the lamp lit at six and the fog horn tested at seven."


def test_a_forget_erases_its_memory_though_another_moved_to_its_path(
    c: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = c.brains.create("Thoughts", slug="thoughts")
    gone, stays = remembered(c, brain, TEXT), remembered(c, brain, "The ferry left at noon, half empty.")
    gone_doc, stays_doc = c.documents.repo.get_by_id(gone), c.documents.repo.get_by_id(stays)
    assert gone_doc is not None and stays_doc is not None
    away = posixpath.join(posixpath.dirname(gone_doc.path), "moved-away.md")
    found = c.thoughts._remains
    swaps = [True]

    def found_then_swapped(*args: Any) -> Any:
        remains = found(*args)
        if swaps.pop() if swaps else False:  # another process, once, after the forget read
            c.documents.rename(brain, gone_doc.path, away)
            c.documents.rename(brain, stays_doc.path, gone_doc.path)
        return remains

    monkeypatch.setattr(c.thoughts, "_remains", found_then_swapped)
    c.thoughts.forget(brain, gone, USER)

    assert c.documents.repo.stored_by_id(gone) is None
    kept = c.documents.repo.stored_by_id(stays)
    assert kept is not None and kept.path == gone_doc.path and kept.deleted_at is None
    assert b"The ferry left at noon" in c.documents.read(brain, kept.path)
    assert c.adapters.chunks.get_chunks(brain.id, stays) != []
