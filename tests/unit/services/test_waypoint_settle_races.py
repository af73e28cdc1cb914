"""A settler finishing a ThoughtMCP memory's waypoint links (services/links/pending.py) while the
memory changes under it: what it leaves is what the memory's current text links to, each end's
statistics counting exactly the links left. On the fakes, SQLite and DynamoDB."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain
from cairn.services.thoughtmcp.models import MAX_CONNECTIONS
from tests.support.thought_links import adapters, c
from tests.unit.services.test_links_after_commit import (
    LATER,
    TEXT,
    counted,
    refused,
    remember,
    row_stats,
    waypoints,
)

__all__ = ["adapters", "c"]  # fixtures


@pytest.fixture
def brain(c: Container) -> Brain:
    return c.brains.create("Links", slug="links")


def chosen_now(c: Container, brain: Brain, memory_id: str) -> set[str]:
    """What the memory, as it is now, links to when it is linked afresh."""
    row = c.thoughts._rows(brain.id, "ada", [memory_id])[memory_id]
    return {other.id for _, other in c.thoughts._chosen(brain, row)}


def test_a_settler_linking_an_old_text_while_an_update_relinks_leaves_the_current_text_s_links(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remember whose links were refused is settled past its grace; just before the settler's
    link commits, an update of the memory commits a new text and relinks it whole. The settler's
    link, chosen for the old text, must not stay beside the update's."""
    old_match = remember(c, brain, TEXT)["memoryId"]
    new_match = remember(c, brain, LATER)["memoryId"]
    refused(monkeypatch, c)
    memory = remember(c, brain, TEXT + " Again.")["memoryId"]
    monkeypatch.undo()
    assert waypoints(c, brain, memory) == {}
    assert chosen_now(c, brain, memory) == {old_match}

    connect = c.thoughts._connect
    updated: list[dict[str, Any]] = []
    settler = [True]

    def update_first(*args: Any, **kwargs: Any) -> int:
        if settler:  # the settler, about to commit the old text's link: the update runs whole
            settler.clear()
            updated.append(c.thoughts.update(brain, memory, "ada", content=LATER + " Again."))
        return connect(*args, **kwargs)

    monkeypatch.setattr(c.thoughts, "_connect", update_first)
    assert c.pending_links.settle() == 1
    monkeypatch.undo()

    assert [u["embeddingsRegenerated"] for u in updated] == [True]
    wanted = chosen_now(c, brain, memory)
    assert wanted == {new_match}
    assert set(waypoints(c, brain, memory)) == wanted
    assert len(waypoints(c, brain, memory)) <= MAX_CONNECTIONS
    for end in (memory, old_match, new_match):
        assert row_stats(c, brain, end) == counted(c, brain, end)
    assert list(c.pending_links.pending()) == []


def test_an_update_linking_after_a_later_update_leaves_the_current_text_s_links(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two updates of one memory: the first has dropped the old links and is about to commit the
    link it chose for its text when the second runs whole (commits, relinks to what its text is
    like). The first's link, for a text no longer the memory's, must not stay beside it."""
    near_old = remember(c, brain, TEXT)["memoryId"]
    near_first = remember(c, brain, LATER)["memoryId"]
    memory = remember(c, brain, TEXT + " Again.")["memoryId"]
    assert set(waypoints(c, brain, memory)) == {near_old}

    connect = c.thoughts._connect
    first = [True]

    def second_first(*args: Any, **kwargs: Any) -> int:
        if first:  # the first update, about to commit its link: the second runs whole
            first.clear()
            c.thoughts.update(brain, memory, "ada", content=TEXT + " Once more.")
        return connect(*args, **kwargs)

    monkeypatch.setattr(c.thoughts, "_connect", second_first)
    c.thoughts.update(brain, memory, "ada", content=LATER + " Again.")
    monkeypatch.undo()

    assert not first
    wanted = chosen_now(c, brain, memory)
    assert wanted == {near_old}
    assert set(waypoints(c, brain, memory)) == wanted
    for end in (memory, near_old, near_first):
        assert row_stats(c, brain, end) == counted(c, brain, end)
    assert list(c.pending_links.pending()) == []


def test_an_update_whose_corrective_relink_is_refused_leaves_it_marked_for_the_sweep(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, but the store refuses the first update's corrective relink (after its own mark
    went with its link for the older text, and the second update's with its own): a mark must
    stand for that link, and the sweep leaves what the current text links to."""
    near_old = remember(c, brain, TEXT)["memoryId"]
    near_first = remember(c, brain, LATER)["memoryId"]
    memory = remember(c, brain, TEXT + " Again.")["memoryId"]

    connect, caught_up = c.thoughts._connect, c.thoughts._caught_up
    first, checks = [True], [0]

    def second_first(*args: Any, **kwargs: Any) -> int:
        if first:  # the first update, about to commit its link: the second runs whole
            first.clear()
            c.thoughts.update(brain, memory, "ada", content=TEXT + " Once more.")
        return connect(*args, **kwargs)

    def refused_second_check(*args: Any, **kwargs: Any) -> bool:
        checks[0] += 1
        if checks[0] == 1:  # the second update's (nested): nothing changed under it
            return caught_up(*args, **kwargs)
        with monkeypatch.context() as m:
            m.setattr(c.thoughts.rows, "commit", refusing)
            return caught_up(*args, **kwargs)

    def refusing(ops: Any) -> None:
        raise Unavailable("the record store was kept busy by another writer", retry_after_s=1)

    monkeypatch.setattr(c.thoughts, "_connect", second_first)
    monkeypatch.setattr(c.thoughts, "_caught_up", refused_second_check)
    c.thoughts.update(brain, memory, "ada", content=LATER + " Again.")
    monkeypatch.undo()

    assert not first and checks[0] == 2
    assert near_first in waypoints(c, brain, memory)  # the older text's link, left by the refusal
    assert [m.memory_id for m in c.pending_links.pending()] == [memory]

    c.pending_links.settle()

    wanted = chosen_now(c, brain, memory)
    assert set(waypoints(c, brain, memory)) == wanted
    for end in (memory, near_old, near_first):
        assert row_stats(c, brain, end) == counted(c, brain, end)
    assert list(c.pending_links.pending()) == []
