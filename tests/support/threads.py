"""Running a test's callers at once: one thread each, all started before any is waited for."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_together(target: Callable[..., Any], each: range | list[Any]) -> None:
    """`target(x)` for every `x` of `each`, each on its own thread; returns once all have ended.
    What a call raises is the caller's to keep (a thread's exception is not re-raised here)."""
    threads = [threading.Thread(target=target, args=(x,)) for x in each]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
