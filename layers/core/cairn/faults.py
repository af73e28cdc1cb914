"""Fault injection for the crash suite: named points inside writes where a test kills the process
(SIGKILL, exactly what `kill -9` does) or makes it raise, instead of guessing with sleeps.

Disarmed unless asked for: `CAIRN_FAULTS=point[:n][,point[:n]...]` in a process's environment
kills it the n-th time (default the first) it reaches that point; a test in the same process arms
a point with `armed(...)`. A disarmed point costs one truth test of an empty dict. POINTS lists
every point and where it sits. tests/crash/ kills a real process at the embedded server's; the
rest are raised in process (`armed`): the AWS queued ingest's `ingest.staged` under moto's Step
Functions (tests/integration/aws/test_stepped_machines.py), and `ingest.written`,
`documents.erase_marked` and the `counts.*` points by contract suites on every record store.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

POINTS: dict[str, str] = {
    "documents.committed": "a document write: records and intent committed, no chunk written yet",
    "documents.indexed": "a document write: chunks written, its intent not finished yet",
    "documents.erase_marked": "an erasure: its mark under way written, the document's bytes not removed",
    "documents.bytes_erased": "an erasure: the document's bytes removed, its record not yet",
    "batch.committed": "batch-ops: every record committed, no chunk written yet",
    "batch.indexed": "batch-ops: half the documents' chunks written",
    "chunks.vectors_appended": "embedded index: vectors appended to the file, chunk rows not committed",
    "ingest.staged": "queued ingest: a batch of chunks upserted inactive, the record not committed",
    "ingest.written": "an ingest: its document committed, the image references it shows not recorded",
    "compaction.copied": "compaction: live rows copied to the next epoch's file, not swapped in",
    "compaction.swapped": "compaction: rows renumbered and committed, old files not deleted",
    "erasure.documents": "erasure: some of the subject's documents removed, not all",
    "counts.read": "a memory commit: the counts and the records it replaces read, nothing committed",
    "counts.step": "a build of a brain's memory counts: a step's records counted, the counts not written",
    "counts.times_step": "a build of a brain's creation-time entries: a step's entries made, none written",
    "consolidation.merged": "consolidation: a merged memory written, its sources not retired",
    "index.tag_words": "opening a store written before tag words: some titles appended, not committed",
    "index.retokenize": "opening a store of an earlier tokenizer: a brain's rows copied, not committed",
    "index.keywords_rebuilt": "`cairn check`: a damaged keyword table made again and filled, not committed",
    "secret.ring_made": "`cairn secret rotate`, key file: the new ring written and fsynced, not renamed",
    "secret.rotated": "`cairn secret rotate`: the new ring written where it is kept, no key check names it",
}
ENV = "CAIRN_FAULTS"


class InjectedFault(RuntimeError):
    """Raised at an armed point by an in-process test."""


_lock = threading.Lock()
_armed: dict[str, tuple[int, Callable[[], None]]] = {}  # point -> (hits left, what happens then)


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _raise() -> None:
    raise InjectedFault("injected fault")


def _from_environment() -> None:
    for spec in filter(None, (part.strip() for part in os.environ.get(ENV, "").split(","))):
        point, _, count = spec.partition(":")
        if point not in POINTS:
            raise ValueError(f"{ENV}: unknown fault point {point!r}")
        _armed[point] = (int(count or 1), _kill)


def reached(point: str) -> None:
    """Mark that the running code is at `point`; dies (or raises) there when armed."""
    if not _armed:
        return
    with _lock:
        found = _armed.get(point)
        if found is None:
            return
        left, action = found
        if left > 1:
            _armed[point] = (left - 1, action)
            return
        del _armed[point]
    action()


@contextmanager
def armed(point: str, *, at: int = 1, action: Callable[[], None] = _raise) -> Iterator[None]:
    """Within the block, the `at`-th time `point` is reached runs `action` (default: raise
    InjectedFault, which a test treats as the process dying there)."""
    if point not in POINTS:
        raise ValueError(f"unknown fault point {point!r}")
    with _lock:
        _armed[point] = (at, action)
    try:
        yield
    finally:
        with _lock:
            _armed.pop(point, None)


_from_environment()
