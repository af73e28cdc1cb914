"""A running attempt's writes to its job: the JobContext its handler gets (progress, checkpoints),
the lease renewed while it runs, and its final write.

Every write is fenced (job_engine.py): conditional on the row still running at this attempt, so a
stale attempt's writes change nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


class StoreStayedLocked(Unavailable):
    """An attempt's write the job store refused for as long as the attempt may wait (a caller's
    thread: a lease): the attempt ends with nothing written yet; the engine keeps the write
    (Unwritten) and makes it before it claims again."""


@dataclass(frozen=True)
class Unwritten:
    """A write an attempt in a caller's thread gave up on (StoreStayedLocked), kept by the engine:
    its outcome (`final`), or a checkpoint after which the attempt stopped. The attempt did its
    work, or stopped only because the store was locked: its write is made at the engine's next
    claim, so the job is not run again for it nor the stall counted against max_attempts."""

    row: JobRow
    changes: Callable[[datetime], dict[str, Any]]
    what: str
    final: bool
    claimed_at: datetime
    gave_up_at: datetime  # the attempt's end: the wait until the write goes in is no attempt's


class AttemptContext:
    """The JobContext a handler gets: its writes go through the engine's fenced writes.

    A progress report is advisory: one the job store refuses (unavailable: another process holds
    its writer lock past the wait) is skipped, said once while the store refuses them, and the
    handler goes on; the next report, or a lease renewal, writes again.

    A checkpoint is the handler's resume point, so one the store refuses is tried again until it
    goes in (AttemptWrites._persist), as a final write is. Skipped, a rerun would redo a step whose
    side effect is already durable; failing the attempt would count the other process's lock
    against the job's give-up limit (max_attempts) though nothing is wrong with the job, and the
    failure's own write would be refused the same way. Waiting costs nothing here: while the lock is
    held no other worker can claim the job or write anything of it either."""

    def __init__(self, writes: AttemptWrites, row: JobRow, wait_s: float | None) -> None:
        self._writes, self._row, self._wait_s = writes, row, wait_s
        self._checkpoints = dict(row.checkpoints)
        self._progress_refused = False  # said once while the store refuses progress reports

    def progress(self, fraction: float, message: str | None = None) -> None:
        changes = progress_changes(fraction, message)
        try:
            self._writes._write(self._row, changes)
        except Unavailable as exc:
            if not self._progress_refused:
                log.warning(
                    "the job store refused a progress report of job %s attempt %d; the job goes on, "
                    "its reports skipped while the store refuses them: %s",
                    self._row.id,
                    self._row.attempts,
                    exc,
                )
            self._progress_refused = True
            return
        self._progress_refused = False

    def checkpoint(self, key: str, value: Any = True) -> None:
        check_name("checkpoint key", key)
        updated = {**self._checkpoints, key: plain_json(value, f"checkpoint {key!r}")}
        what = f"checkpoint {key!r} of job {self._row.id} attempt {self._row.attempts}"
        self._writes._write(self._row, {"checkpoints": updated}, keep=what, wait_s=self._wait_s)
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
    _running: dict[tuple[str, int], tuple[JobRow, datetime]]  # attempts run here, claimed at
    _finishing: set[tuple[str, int]]  # attempts whose final write waits for the store
    _unwritten: dict[str, Unwritten]  # by job id: writes given up in a caller's thread

    def _context(self, row: JobRow, wait_s: float | None) -> JobContext:
        return AttemptContext(self, row, wait_s)

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
        wait_s: float | None = None,
    ) -> None:
        """The attempt's final write, kept through the store's refusals (_persist): the job's outcome
        is kept rather than the whole job run again once its lease runs out."""
        changes: dict[str, Any] = {"status": status, "error": error, "lease_until": None}
        if status is JobStatus.completed:
            changes.update(result=result, progress=1.0)
        what = f"finishing job {row.id} attempt {row.attempts} ({status.value})"
        if not self._persist(row, lambda _now: changes, what, final=True, wait_s=wait_s):
            log.warning("job %s attempt %d finished after losing its lease", row.id, row.attempts)

    def _write(
        self, row: JobRow, changes: dict[str, Any], *, keep: str | None = None, wait_s: float | None = None
    ) -> None:
        """A running attempt's progress/checkpoint write; it also renews the lease. With `keep` (what
        it writes, for the log), one the store refuses is tried again until it goes in (_persist)."""

        def renewing(now: datetime) -> dict[str, Any]:
            return {**changes, "lease_until": now.timestamp() + self.lease_s}

        if keep is not None:
            written = self._persist(row, renewing, keep, final=False, wait_s=wait_s)
        else:
            now = self._clock.now()
            written = self._update(row, now, renewing(now))
        if not written:
            raise LeaseLost(f"job {row.id} attempt {row.attempts} no longer holds its lease")

    def _persist(
        self,
        row: JobRow,
        changes: Callable[[datetime], dict[str, Any]],
        what: str,
        *,
        final: bool,
        wait_s: float | None,
    ) -> bool:
        """A write the attempt must not lose (a checkpoint, its final write): one the store refuses
        (unavailable: another process holds its writer lock) is tried again every poll_s, said once,
        until it is written, the attempt no longer holds its job (a claim after the lease took it:
        fenced), or the store is closed; False for the last two. While a final write waits, a
        stopping process does not hand the attempt back (`_finishing`).

        With `wait_s` (an attempt run in its caller's thread: run_pending, run_one), for that long
        at most (by the engine's clock) from the first refusal, then StoreStayedLocked: a lock never
        released must not hang the caller for ever. A lease is enough: renewals stopped or were
        refused meanwhile, so the lease has run out and, once the store lets a claim in, the job is
        claimed again anyway; the write is kept (Unwritten) and made before this engine claims
        again (_write_unwritten). A worker thread waits on: it could claim nothing meanwhile either."""
        key, refused, until = (row.id, row.attempts), False, None
        try:
            while True:
                now = self._clock.now()
                try:
                    written = self._update(row, now, changes(now))
                    break
                except Unavailable as exc:
                    if until is None and wait_s is not None:
                        until = now.timestamp() + wait_s
                    elif until is not None and now.timestamp() >= until:
                        log.warning(
                            "gave up on %s after %g s: the job store stayed locked; it is written "
                            "before this process claims a job again",
                            what,
                            wait_s,
                        )
                        self._keep_unwritten(row, changes, what, final, now)
                        raise StoreStayedLocked(exc.message, retry_after_s=exc.retry_after_s) from exc
                    if not refused:
                        if final:
                            with self._running_lock:
                                self._finishing.add(key)
                        log.warning(
                            "the job store refused %s, trying again every %g s: %s", what, self.poll_s, exc
                        )
                    refused = True
                    time.sleep(self.poll_s)
        finally:
            if refused and final:
                with self._running_lock:
                    self._finishing.discard(key)
        if refused and written:
            log.info("the job store let %s in", what)
        return written

    def _keep_unwritten(
        self,
        row: JobRow,
        changes: Callable[[datetime], dict[str, Any]],
        what: str,
        final: bool,
        now: datetime,
    ) -> None:
        with self._running_lock:
            claimed_at = self._running.get((row.id, row.attempts), (row, now))[1]
            self._unwritten[row.id] = Unwritten(row, changes, what, final, claimed_at, now)

    def _write_unwritten(self) -> None:
        """Make the writes given up in a caller's thread, each fenced on its attempt: an outcome is
        written as it would have been; after a checkpoint the job is put back in the queue as a
        stopping process hands one back (JobStore.release), so the attempt the lock cut short is
        not counted against max_attempts, and the next claim resumes from that checkpoint. A write
        fenced out (another process claimed the job after the lease) is dropped: that attempt has
        the job, and the warning says what became of it (running, queued, finished, forgotten).
        Unavailable while the store still refuses: the caller claims nothing meanwhile, so this
        process never runs again a job whose outcome it holds."""
        with self._running_lock:
            waiting = list(self._unwritten.values())
        for kept in waiting:
            row, now = kept.row, self._clock.now()
            with self._gate.open() as is_open:
                if not is_open:
                    return
                written = self._store.update(row.id, row.attempts, now, kept.changes(now))
                if written and not kept.final:
                    ran_s = max(0.0, (kept.gave_up_at - kept.claimed_at).total_seconds())
                    written = self._store.release(row.id, row.attempts, now, ran_s)
                current = None if written else self._store.get(row.id)
            with self._running_lock:
                if self._unwritten.get(row.id) is kept:
                    del self._unwritten[row.id]
            if not written:
                log.warning("%s was not written: %s", kept.what, _since(current, row.attempts))
            elif kept.final:
                log.info("the job store let %s in", kept.what)
            else:
                log.info(
                    "the job store let %s in; the job is queued again, that attempt not counted", kept.what
                )

    def _update(self, row: JobRow, now: datetime, changes: dict[str, Any]) -> bool:
        """The attempt's fenced write: False once it no longer holds its job or the store is closed."""
        with self._gate.open() as is_open:
            return is_open and self._store.update(row.id, row.attempts, now, changes)


def _since(current: JobRow | None, attempt: int) -> str:
    """What became of a job since its attempt `attempt` gave up on a write: why the write was dropped."""
    if current is None:
        return "the job is no longer stored (forgotten since)"
    by = f"attempt {current.attempts}" if current.attempts != attempt else "that attempt"
    if current.status is JobStatus.completed:
        return f"the job has since completed ({by})"
    if current.status is JobStatus.failed:
        return f"the job has since failed ({by}): {current.error}"
    if current.status is JobStatus.running:
        return f"{by} is running the job"
    return f"the job is queued again after {by}"
