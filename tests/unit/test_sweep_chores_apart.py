"""One sweep chore failing with a Cairn error (a store busy, a conflict lost again and again) is
that chore's alone: the chores after it still run in the same sweep, and the failure is said."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from cairn.container import Container
from cairn.domain.errors import Conflict, Unavailable
from cairn.services.documents.index_sweeper import IndexSweeper
from tests.fakes.container import fake_container


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


@pytest.mark.parametrize("error", [Conflict("lost eight times"), Unavailable("the store is busy")])
def test_the_chores_after_a_failing_one_still_run(
    container: Container, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    ran: list[str] = []

    def failing(_stop: Callable[[], bool]) -> None:
        ran.append("failing")
        raise error

    def after(_stop: Callable[[], bool]) -> None:
        ran.append("after")

    with caplog.at_level(logging.WARNING, logger="cairn"):
        IndexSweeper(container.documents, chores=[failing, after]).tick()
    assert ran == ["failing", "after"]
    said = [r.getMessage() for r in caplog.records if "left for the next sweep" in r.getMessage()]
    assert len(said) == 1 and "failing" in said[0] and str(error) in said[0]


def test_a_bug_in_a_chore_is_not_swallowed(container: Container) -> None:
    def broken(_stop: Callable[[], bool]) -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        IndexSweeper(container.documents, chores=[broken]).tick()
