"""What `cairn serve` loads in the background after it starts, and the garbage collector's share.

A server's long-lived objects (modules, the app, the model session, each big brain's rows) are
made at start-up and live until it stops. Left to the collector, every full collection walks
them all again: at 100,000 chunks a full collection took 110-150 ms, and about one search in 300
waited for one (docs/PERFORMANCE.md, "Garbage collection"). Once the warm-up is done they are
frozen (`gc.freeze`), so later collections look only at what requests make; so is each MCP surface
once its first call has built it (`freeze_built`).
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from cairn.ports.chunks import CompactableChunks

if TYPE_CHECKING:
    from cairn.container import Container

_log = logging.getLogger(__name__)


def warm_up(container: Container) -> threading.Thread:
    """Load the embedding model (so the first search does not pay for it, and /healthz answers
    meanwhile) and each big brain's vector index and rows, in the background; then freeze."""
    tasks: list[Callable[[], object]] = [partial(container.adapters.embedder.embed, ["warm up"])]
    chunks = container.adapters.chunks
    if isinstance(chunks, CompactableChunks):
        tasks.append(partial(chunks.warm, stop=lambda: container.repair.stopping))  # serve's stop sets it
    return warm_in_background(tasks)


def warm_in_background(tasks: Sequence[Callable[[], object]]) -> threading.Thread:
    """Run each task in a daemon thread; when all have ended (a failed one is logged: the first
    request then loads what it needs), freeze every object tracked by then. Returns the thread
    that waits for them."""

    def attempt(task: Callable[[], object]) -> None:
        try:
            task()
        except Exception as exc:  # a warm-up only saves time: serving goes on without it
            _log.warning(
                "warm-up after start failed (%s: %s); requests load what they need", type(exc).__name__, exc
            )

    def run() -> None:
        workers = [threading.Thread(target=attempt, args=(task,), daemon=True) for task in tasks]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        # No collection first: it would pause requests for as long as the full collections this
        # saves; the cyclic garbage left from start-up is small and stays.
        gc.freeze()

    waiter = threading.Thread(target=run, name="warm-start", daemon=True)
    waiter.start()
    return waiter


def freeze_built() -> None:
    """Freeze what a later build made to last (an MCP surface, built on its first call: ~56,000
    objects, which added ~65 ms to each full collection unfrozen; docs/PERFORMANCE.md, "Surfaces
    built on first use"). What the calls in flight hold then is frozen too, and stays if it
    becomes cyclic garbage: a few objects, at most once a surface."""
    gc.freeze()
