"""`cairn serve`'s start-up warm-up: the long-lived objects are frozen only once every warm-up
task has ended, so a full collection never walks them again."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from cairn.entrypoints.cli.warm_start import warm_in_background


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_what_the_warm_up_loaded_is_frozen_once_every_task_has_ended() -> None:
    release = threading.Event()
    loaded: list[object] = []

    def slow_load() -> None:
        release.wait(10)
        loaded.append({"rows": list(range(100))})  # a tracked object made by the warm-up

    waiter = warm_in_background([slow_load, lambda: loaded.append(["model"])])
    waiter.join(0.2)
    assert waiter.is_alive()  # still waiting for the slow task: nothing frozen yet
    assert gc.get_freeze_count() == 0

    release.set()
    waiter.join(10)
    assert not waiter.is_alive()
    assert len(loaded) == 2
    assert gc.get_freeze_count() > 0
    frozen_after = gc.get_freeze_count()
    gc.collect()
    assert gc.get_freeze_count() == frozen_after  # a collection no longer looks at them


def test_a_failing_warm_up_task_is_logged_and_the_others_finish_and_freeze(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> None:
        raise OSError("index file unreadable")

    done = threading.Event()
    waiter = warm_in_background([broken, done.set])
    waiter.join(10)
    assert done.is_set()
    assert gc.get_freeze_count() > 0
    assert any(
        r.levelname == "WARNING" and "OSError: index file unreadable" in r.getMessage()
        for r in caplog.records
    )
