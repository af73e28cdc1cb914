"""A running attempt's writes to its job: the JobContext its handler gets (progress, checkpoints),
the lease renewed while it runs, and its final write.

Every write is fenced (job_engine.py): conditional on the row still running at this attempt, so a
stale attempt's writes change nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cairn.adapters.local.job_outcomes import LeaseLost, progress_changes
from cairn.adapters.local.job_rows import JobRow, JobStore, check_name, plain_json
from cairn.adapters.local.store_gate import StoreGate
from cairn.domain.errors import Unavailable
from cairn.domain.models import JobStatus
from cairn.ports.clock import Clock

if TYPE_CHECKING:
    from cairn.ports.jobs import JobContext

log = logging.getLogger("cairn.jobs")

HOLD_AT_MOST_S = 6 * 3600.0
"""How long a running handler's lease is renewed for; past it the job is taken as stuck."""


class AttemptContext:
    """The JobContext a handler gets: its writes go through the engine's fenced writes."""

    def __init__(self, writes: AttemptWrites, row: JobRow) -> None:
        self._writes, self._row = writes, row
        self._checkpoints = dict(row.checkpoints)

    def progress(self, fraction: float, message: str | None = None) -> None:
        changes = progress_changes(fraction, message)
        self._writes._write(self._row, changes)

    def checkpoint(self, key: str, value: Any = True) -> None:
        check_name("checkpoint key", key)
        updated = {**self._checkpoints, key: plain_json(value, f"checkpoint {key!r}")}
        self._writes._write(self._row, {"checkpoints": updated})
        self._checkpoints = updated

    def checkpoints(self) -> dict[str, Any]:
        copied: dict[str, Any] = plain_json(self._checkpoints, "checkpoints")
        return copied


class AttemptWrites:
    """The engine's part that writes for a running attempt (JobEngine mixes it in)."""

    _store: JobStore
    _clock: Clock
    _gate: StoreGate
    lease_s: float
    poll_s: float
    _running_lock: threading.Lock
    _finishing: set[tuple[str, int]]  # attempts whose final write waits for the store

    def _context(self, row: JobRow) -> JobContext:
        return AttemptContext(self, row)

    @contextmanager
    def _holding(self, row: JobRow) -> Iterator[None]:
        """The attempt's lease renewed every third of it while its handler runs, so a long step
        that reports no progress (embedding one big file) is not taken again by another worker
        as if its process had died; for at most HOLD_AT_MOST_S, after which a handler that never
        returns is taken as stuck."""
        stop = threading.Event()
        renewer = threading.Thread(
            target=self._renew, args=(row, stop), name=f"cairn-job-lease-{row.id}", daemon=True
        )
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()

    def _renew(self, row: JobRow, stop: threading.Event) -> None:
        until = time.monotonic() + HOLD_AT_MOST_S
        refused = False  # said once while the store refuses, again after a renewal goes through
        while not stop.wait(self.lease_s / 3) and time.monotonic() < until:
            now = self._clock.now()
            try:
                held = self._update(row, now, {"lease_until": now.timestamp() + self.lease_s})
            except Unavailable as exc:  # another process holds the store's writer lock a while
                if not refused:
                    log.warning(
                        "the job store refused renewing the lease of job %s, trying again at each beat: %s",
                        row.id,
                        exc,
                    )
                refused = True
                continue
            except Exception:  # the store unreachable a moment: the next beat tries again
                log.warning("could not renew the lease of job %s", row.id, exc_info=True)
                continue
            refused = False
            if not held:  # taken by another worker: the handler's next write says so
                return

    def _finish(
        self,
        row: JobRow,
        status: JobStatus,
        *,
        result: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """The attempt's final write. One the store refuses (unavailable: another process holds its
        writer lock) is tried again every poll_s, so the job's outcome is kept rather than the whole
        job run again once its lease runs out; until it is written, the attempt no longer holds its
        job (a claim after the lease took it: fenced), or the store is closed."""
        changes: dict[str, Any] = {"status": status, "error": error, "lease_until": None}
        if status is JobStatus.completed:
            changes.update(result=result, progress=1.0)
        key, refused = (row.id, row.attempts), False
        try:
            while True:
                try:
                    written = self._update(row, self._clock.now(), changes)
                    break
                except Unavailable as exc:
                    if not refused:
                        with self._running_lock:
                            self._finishing.add(key)
                        log.warning(
                            "the job store refused finishing job %s attempt %d (%s), trying again "
                            "every %g s: %s",
                            row.id,
                            row.attempts,
                            status.value,
                            self.poll_s,
                            exc,
                        )
                    refused = True
                    time.sleep(self.poll_s)
        finally:
            if refused:
                with self._running_lock:
                    self._finishing.discard(key)
        if not written:
            log.warning("job %s attempt %d finished after losing its lease", row.id, row.attempts)
        elif refused:
            log.info("job %s attempt %d finished: the job store let its final write in", row.id, row.attempts)

    def _write(self, row: JobRow, changes: dict[str, Any]) -> None:
        """A running attempt's progress/checkpoint write; it also renews the lease."""
        now = self._clock.now()
        if not self._update(row, now, {**changes, "lease_until": now.timestamp() + self.lease_s}):
            raise LeaseLost(f"job {row.id} attempt {row.attempts} no longer holds its lease")

    def _update(self, row: JobRow, now: datetime, changes: dict[str, Any]) -> bool:
        """The attempt's fenced write: False once it no longer holds its job or the store is closed."""
        with self._gate.open() as is_open:
            return is_open and self._store.update(row.id, row.attempts, now, changes)
