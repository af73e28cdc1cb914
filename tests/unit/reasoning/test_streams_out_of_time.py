"""run_streams when the budget is spent before a stream's thread picks it up: the stream is
reported timed out, not raised as the CancelledError of its cancelled future."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from cairn.services.thoughtmcp.reasoning import parallel
from cairn.services.thoughtmcp.reasoning.rules import STREAMS


class NeverStarted:
    """An executor whose threads never pick a stream up before the pool shuts down."""

    def __init__(self, **_: Any) -> None:
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.futures.append(future)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            for future in self.futures:
                future.cancel()


def test_streams_never_started_are_reported_out_of_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "ThreadPoolExecutor", NeverStarted)

    def refused(exc: BaseException) -> tuple[parallel.Status, str]:
        raise AssertionError(f"no stream ran, so none failed: {exc!r}")

    runs = parallel.run_streams(lambda name, deadline: None, budget_s=0.01, classify=refused)  # type: ignore[arg-type,return-value]

    assert [(r.name, r.status, r.output) for r in runs] == [(name, "timeout", None) for name in STREAMS]
