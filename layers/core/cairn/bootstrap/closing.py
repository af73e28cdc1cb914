"""Closing the stores a container opened, at the end of `cairn serve`, `cairn mcp` and one-off
commands, and writing the read counts kept in memory before.

Closing the embedded chunk index stops its maintenance worker (a postings build, a compaction) at
its next step and leaves the rest to the next write or start; closing a SQLite file as its last
connection goes checkpoints its write-ahead log into it. Only the caller knows that nothing runs
in the stores any more (no request, job handler, sweep or repair): it must not close them under
one, since a SQLite connection closed under a statement can crash the process."""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

from cairn.container import Container
from cairn.domain.errors import CairnError

log = logging.getLogger("cairn.stop")


@runtime_checkable
class Closes(Protocol):
    def close(self) -> None: ...


def close_stores(container: Container) -> None:
    """The job queue first (its handlers write to the others), then the chunk index, the change
    log and the records. Adapters with nothing to close (the AWS clients) are passed by."""
    adapters = container.adapters
    for store in (adapters.jobs, adapters.chunks, adapters.changes, adapters.records):
        if isinstance(store, Closes):
            store.close()


def write_read_counts(container: Container, when: str) -> None:
    """The reads the container's searches counted in memory, written (`when`: for the log). A
    failure loses them and is logged: what follows of the stop must still run."""
    try:
        if container.search.access is not None:
            container.search.access.flush()
    except CairnError as exc:  # a busy store
        log.warning("the read counts could not be written %s: %s", when, exc.message)
    except Exception:
        log.exception("the read counts could not be written %s", when)
