"""Sync work a call runs off the event loop, in a worker thread, and the count of such threads a
process's stop waits for.

A worker thread cannot be cancelled. anyio's cancel scope (an MCP stdio session's end) waits for
it however long it runs, and a native cancel (uvicorn's, once its graceful shutdown ran out of
time) leaves it running, uncounted, while the process goes on to close the stores under it. A
call made through `run_counted` instead is counted from its dispatch to its end (its result
settled included) and left to run when its caller is cancelled: the caller goes at once, and the
process's stop waits for `CallsInFlight` within its budget before it closes the stores.

`run_sync` is what the core's coroutines use for such a step (the streaming answer's retrieval,
a generator's step): counted inside `counted_by(calls)`, which a surface sets around a call;
anyio's own run elsewhere (a one-off command, a test).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

AfterCut = Callable[[Any, Exception | None], None]
"""What settles a run whose caller was cut short: (its result, or None; the exception it raised)."""


class CallsInFlight:
    """The counted runs still running (or dispatched and not yet started)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0

    def _enter(self) -> None:
        with self._changed:
            self._running += 1

    def _leave(self) -> None:
        with self._changed:
            self._running -= 1
            self._changed.notify_all()

    def wait(self, within_s: float) -> bool:
        """Wait up to `within_s` for every run to end; whether none runs."""
        with self._changed:
            return self._changed.wait_for(lambda: self._running == 0, timeout=within_s)


_QUEUED, _RUNNING, _DONE, _CUT = "queued", "running", "done", "cut"


class _Run:
    """One counted run. Its outcome goes to whichever side is left to take it: the caller, or,
    once the caller was cut short, `after_cut`, on the worker thread while the run still counts
    (so the stop waits for that too), or on the caller's side when the run had just ended."""

    def __init__(self, calls: CallsInFlight, fn: Callable[[], Any], after_cut: AfterCut | None) -> None:
        self.calls, self.fn, self.after_cut = calls, fn, after_cut
        self._lock = threading.Lock()
        self._state = _QUEUED
        self._outcome: tuple[Any, Exception | None] = (None, None)
        calls._enter()  # from its dispatch: a stop never finds it queued yet uncounted

    def __call__(self) -> Any:  # on the worker thread
        with self._lock:
            if self._state == _CUT:  # cut before it started: nothing to run, the count given back
                return None
            self._state = _RUNNING
        try:
            try:
                result, failure = self.fn(), None
            except Exception as exc:
                result, failure = None, exc
            with self._lock:
                cut = self._state == _CUT
                self._state = _DONE
                self._outcome = (result, failure)
            if cut:
                self._settle(result, failure)
                return None
            if failure is not None:
                raise failure
            return result
        finally:
            self.calls._leave()

    def cut(self) -> None:
        """The caller was cancelled (on its side)."""
        with self._lock:
            before, self._state = self._state, _CUT
            result, failure = self._outcome
        if before == _QUEUED:  # never started, and never will
            self.calls._leave()
        elif before == _DONE:  # ended as it was cut: its outcome was not taken
            self._settle(result, failure)

    def _settle(self, result: Any, failure: Exception | None) -> None:
        if self.after_cut is not None:
            self.after_cut(result, failure)


async def run_counted(calls: CallsInFlight, fn: Callable[[], T], after_cut: AfterCut | None = None) -> T:
    """`fn()` in a worker thread, counted in `calls`; a cancel leaves it running (module docstring).
    `after_cut` gets the outcome of a run whose caller was cut short: only it can settle it then."""
    run = _Run(calls, fn, after_cut)
    try:
        result: T = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        run.cut()
        raise
    return result


_counted_by: ContextVar[CallsInFlight | None] = ContextVar("cairn_counted_by", default=None)


@contextmanager
def counted_by(calls: CallsInFlight | None) -> Iterator[None]:
    """Within it (a task's context), `run_sync` counts its runs in `calls` (None: it does not)."""
    token = _counted_by.set(calls)
    try:
        yield
    finally:
        _counted_by.reset(token)


async def run_sync(fn: Callable[..., T], *args: Any, after_cut: AfterCut | None = None) -> T:
    """`fn(*args)` in a worker thread: counted and left to run at a cancel inside `counted_by`
    (`after_cut` settling it then, as `run_counted`'s); waited for, as anyio does, elsewhere."""
    calls = _counted_by.get()
    if calls is None:
        return await anyio.to_thread.run_sync(fn, *args)
    return await run_counted(calls, functools.partial(fn, *args), after_cut)
