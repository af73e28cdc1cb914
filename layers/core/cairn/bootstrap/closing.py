"""Closing the stores a container opened, at the end of `cairn serve` and `cairn mcp`.

Closing the embedded chunk index stops its maintenance worker (a postings build, a compaction) at
its next step and leaves the rest to the next write or start; closing a SQLite file as its last
connection goes checkpoints its write-ahead log into it. Only the caller knows that nothing runs
in the stores any more (no request, job handler, sweep or repair): it must not close them under
one, since a SQLite connection closed under a statement can crash the process."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cairn.container import Container


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
