"""cairn/off_loop.py: a counted run is counted from its dispatch to the end of its settling, is left
running when its caller is cancelled, and its outcome reaches whichever side is left to take it."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from cairn import off_loop
from cairn.off_loop import CallsInFlight, counted_by, run_counted


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Held:
    """A function that says it started, then waits to be released before it returns (or raises)."""

    def __init__(self, result: Any = "answer", failure: Exception | None = None) -> None:
        self.started, self.release, self.ran = threading.Event(), threading.Event(), 0
        self.result, self.failure = result, failure

    def __call__(self) -> Any:
        self.ran += 1
        self.started.set()
        self.release.wait(10)
        if self.failure is not None:
            raise self.failure
        return self.result


async def cut_while(held: Held, calls: CallsInFlight, settled: list[Any]) -> None:
    """Run `held` counted and cancel its caller once it runs."""
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_counted, calls, held, lambda r, e: settled.append((r, e)))
            await anyio.to_thread.run_sync(held.started.wait, 10)
            scope.cancel()


@pytest.mark.anyio
async def test_a_run_cut_short_runs_on_counted_and_its_outcome_goes_to_after_cut() -> None:
    calls, held, settled = CallsInFlight(), Held(), []
    await cut_while(held, calls, settled)  # returns at once: the caller is not kept waiting
    assert not calls.wait(0.1) and settled == []
    held.release.set()
    assert calls.wait(10)
    assert settled == [("answer", None)]


@pytest.mark.anyio
async def test_a_failure_after_the_cut_goes_to_after_cut_not_to_the_gone_caller() -> None:
    calls, boom, settled = CallsInFlight(), RuntimeError("disk"), []
    held = Held(failure=boom)
    await cut_while(held, calls, settled)
    held.release.set()
    assert calls.wait(10)
    assert settled == [(None, boom)]


@pytest.mark.anyio
async def test_a_run_its_caller_waits_for_answers_it_and_after_cut_is_not_called() -> None:
    calls, held, settled = CallsInFlight(), Held(), []
    held.release.set()
    assert await run_counted(calls, held, lambda r, e: settled.append((r, e))) == "answer"
    assert calls.wait(0) and settled == []


def test_a_run_cut_before_its_thread_took_it_never_runs_and_gives_its_count_back() -> None:
    """The cancel can come between the dispatch and a thread's taking the run (anyio then drops
    it unrun); the run counted from its dispatch must not hold the stop for ever."""
    calls, held, settled = CallsInFlight(), Held(), []
    run = off_loop._Run(calls, held, lambda r, e: settled.append((r, e)))
    assert not calls.wait(0)  # counted from its dispatch
    run.cut()
    assert calls.wait(0)
    run()  # a thread taking it anyway runs nothing
    assert held.ran == 0 and settled == [] and calls.wait(0)


def test_a_run_that_ended_as_its_caller_was_cut_is_settled_by_the_caller_side() -> None:
    """Its answer was handed to a caller cancelled before it took it: the cut settles it."""
    calls, held, settled = CallsInFlight(), Held(), []
    held.release.set()
    run = off_loop._Run(calls, held, lambda r, e: settled.append((r, e)))
    assert run() == "answer" and settled == []
    run.cut()
    assert settled == [("answer", None)] and calls.wait(0)


@pytest.mark.anyio
async def test_run_sync_is_counted_and_left_only_inside_counted_by() -> None:
    calls, held = CallsInFlight(), Held()
    with counted_by(calls), anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(off_loop.run_sync, held)
            await anyio.to_thread.run_sync(held.started.wait, 10)
            scope.cancel()
    assert not calls.wait(0.1)  # left running, counted
    held.release.set()
    assert calls.wait(10)

    waited = Held()
    with anyio.CancelScope() as scope:  # outside: anyio's own run, which the cancel waits for
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(off_loop.run_sync, waited)
            await anyio.to_thread.run_sync(waited.started.wait, 10)
            scope.cancel()
            threading.Timer(0.2, waited.release.set).start()
    assert waited.release.is_set()
