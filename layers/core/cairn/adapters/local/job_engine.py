"""The JobRunner semantics shared by the SQLite queue and the in-memory fake.

A `JobStore` (job_rows.py) holds rows and claims them atomically; `JobEngine` decides everything else
(retries, unknown kinds, fencing, the worker thread), so both runners behave identically.

Fencing: a claim sets the row running and increments `attempts`; every later write by that
attempt is conditional on `status = running AND attempts = <its attempt>`. When a lease expired
and another worker re-claimed the job, the stale attempt's writes change nothing and its
context calls raise LeaseLost, which stops its handler.

Hand-over: a process that stops cleanly waits a short grace for its running handlers, then puts
each unfinished job back in the queue (`JobStore.release`), so another process takes it at once
rather than after the lease. The released attempt's writes are fenced as above; it is counted
in `handed_over`, and the attempts a job is allowed (`max_attempts`) are those that did not end
so: a job is given up on for dying with its worker, not for its process being stopped. Time bounds
hand-overs: a job whose handed-back attempts ran `max_handed_over_s` in all (`handed_over_s`) fails
at its next claim. A handed-back attempt ends quietly however it ends (its process's exit may cut
it short): the job is another attempt's, so it records nothing and logs no failure.

A caller's thread (run_pending, run_one) waits a lease at most for a write the store refuses; the
write it gives up on is kept and made before this engine's next claim (job_attempt.Unwritten): an
outcome as it was, a checkpoint with the job handed back, so a lock held past a lease neither runs
a finished job again nor counts against `max_attempts`.

`close()` waits up to `close_wait_s` for the handlers still running, then closes the store once no
call is inside it (StoreGate); a handler still running finds its later writes refused.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from datetime import datetime

from cairn.adapters.local.job_attempt import HOLD_AT_MOST_S, AttemptWrites, StoreStayedLocked, Unwritten
from cairn.adapters.local.job_outcomes import REFUSALS, LeaseLost, duration, error_text
from cairn.adapters.local.job_rows import JobRow, JobStore, check_name, json_object
from cairn.adapters.local.starts_jobs import StartsJobs
from cairn.adapters.local.store_gate import StoreGate
from cairn.domain.errors import Conflict, NotFound, Unavailable
from cairn.domain.models import Job, JobStatus
from cairn.ports.clock import Clock
from cairn.ports.jobs import JobHandler, JobHolds

log = logging.getLogger("cairn.jobs")

STOP_GRACE_S = 1.0
"""How long a stopping process waits for its running handlers before handing their jobs back.
Short: an MCP client sends its stdio server SIGTERM two seconds after closing its input (some at
once, or SIGKILL soon after), and a job still claimed when the process dies waits out its lease."""

HANDED_OVER_AT_MOST_S = HOLD_AT_MOST_S
"""How long a job's handed-back attempts may run in all: as long as one attempt may hold its lease."""

CLOSE_WAIT_S = 10.0
"""How long `close()` waits for the handlers still running before it closes the store beside them."""


class JobEngine(StartsJobs, AttemptWrites):
    """JobRunner over a JobStore: register, start, status, run_pending, start/stop_worker.

    `start_worker` runs `workers` threads. Each claims with a cap of `workers - 1` (at least 1)
    jobs per principal, so one principal's long jobs never hold every worker; `run_pending`, which
    works in its caller's thread, claims without it. `stop_worker` claims nothing more, waits up to
    `stop_grace_s` for the attempts running here, and hands the unfinished ones back (see above).
    `close` stops so, waits up to `close_wait_s` for every handler still running, then closes the store."""

    def __init__(
        self,
        store: JobStore,
        clock: Clock,
        *,
        lease_s: float = 60.0,
        max_attempts: int = 3,
        poll_s: float = 1.0,
        workers: int = 2,
        stop_grace_s: float = STOP_GRACE_S,
        max_handed_over_s: float = HANDED_OVER_AT_MOST_S,
        close_wait_s: float = CLOSE_WAIT_S,
    ) -> None:
        if (
            min(lease_s, poll_s, max_handed_over_s) <= 0
            or min(max_attempts, workers) < 1
            or min(stop_grace_s, close_wait_s) < 0
        ):
            raise ValueError(
                "lease_s, poll_s and max_handed_over_s must be positive, max_attempts and workers "
                "at least 1, stop_grace_s and close_wait_s not negative"
            )
        self._store, self._clock = store, clock
        self.lease_s, self.max_attempts, self.poll_s = lease_s, max_attempts, poll_s
        self.workers, self.stop_grace_s = workers, stop_grace_s
        self.max_handed_over_s, self.close_wait_s = max_handed_over_s, close_wait_s
        self._handlers: dict[str, JobHandler] = {}
        self._wake = threading.Condition()
        self._started = 0  # jobs this process queued: a worker that saw it change looks again before sleeping
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._halted: list[threading.Thread] = []  # stopped, perhaps still running a handed-back handler
        self._worker_lock = threading.Lock()
        self._stopping = False  # set by stop_worker until start_worker: no claims meanwhile
        self._running: dict[tuple[str, int], tuple[JobRow, datetime]] = {}  # attempts run here, claimed at
        self._refused = False  # a worker's claim was refused (unavailable): said once, until one works
        self._handed: set[tuple[str, int]] = set()  # those of them handed back
        self._finishing: set[tuple[str, int]] = set()  # those whose final write waits for the store
        self._unwritten: dict[str, Unwritten] = {}  # writes given up in a caller's thread, by job id
        self._running_lock = threading.Lock()
        self._gate = StoreGate()  # every store call goes through it, so close() closes none under one

    # -- JobRunner ---------------------------------------------------------------------------

    def register(self, kind: str, handler: JobHandler) -> None:
        self._handlers[check_name("job kind", kind)] = handler

    def _submit(self, row: JobRow) -> Job:
        with self._gate.open() as is_open:
            if not is_open:
                raise RuntimeError("the job runner is closed")
            stored = self._store.insert(row)
        if stored.kind != row.kind:
            raise Conflict(f"idempotency key already used for a job of kind {stored.kind!r}")
        if stored.id == row.id:
            with self._wake:
                self._started += 1
                self._wake.notify()
        return stored.to_job()

    def status(self, job_id: str) -> Job:
        with self._gate.open() as is_open:
            if not is_open:
                raise RuntimeError("the job runner is closed")
            row = self._store.get(job_id) if isinstance(job_id, str) and job_id else None
        if row is None:
            raise NotFound(f"job {job_id!r} not found")
        return row.to_job()

    def run_pending(self) -> int:
        ran = 0
        while self._run_next(wait_s=self.lease_s):
            ran += 1
        return ran

    def run_one(self, job_id: str) -> bool:
        return self._run_next(job_id=job_id, wait_s=self.lease_s)

    def start_worker(self) -> None:
        with self._worker_lock:
            if any(thread.is_alive() for thread in self._threads):
                return
            with self._running_lock:
                self._stopping = False
            # each start's own event: a thread an earlier stop left finishing a handed-back handler
            # ends with it rather than joining these
            self._stop = stop = threading.Event()
            self._threads = [
                threading.Thread(target=self._work, args=(stop,), name=f"cairn-jobs-{n}", daemon=True)
                for n in range(1, self.workers + 1)
            ]
            for thread in self._threads:
                thread.start()

    def stop_worker(self) -> None:
        self._halt()

    def _halt(self) -> None:
        """Stop claiming, give the running handlers the grace, hand back what is left."""
        with self._worker_lock:
            threads, self._threads = self._threads, []
            self._halted = [thread for thread in (*self._halted, *threads) if thread.is_alive()]
            with self._running_lock:
                self._stopping = True
            with self._wake:
                self._stop.set()
                self._wake.notify_all()
        deadline = time.monotonic() + self.stop_grace_s
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        self._hand_back()

    def running_here(self) -> int:
        with self._worker_lock:
            return sum(thread.is_alive() for thread in self._halted)

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None = None) -> int:
        with self._gate.open() as is_open:
            return self._store.forget(job_ids, holds) if is_open else 0

    def close(self) -> None:
        """Stop, wait up to `close_wait_s` for the handlers still running here (those an earlier
        stop_worker handed back too), then close the store once no call is inside it."""
        self._halt()
        with self._worker_lock:
            halted = list(self._halted)
        deadline = time.monotonic() + self.close_wait_s
        for thread in halted:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        try:
            self._write_unwritten()
        except Exception as exc:  # still locked: those jobs wait out their leases
            log.warning("closing the job queue with writes it could not make, left to their leases: %s", exc)
        if not self._gate.close():
            return
        left = sum(thread.is_alive() for thread in halted if thread is not threading.current_thread())
        if left:
            log.warning(
                "closing the job queue with %d handler(s) still running after %g s; their jobs were "
                "handed back, and what they write to the queue now changes nothing",
                left,
                self.close_wait_s,
            )
        self._store.close()

    # -- internals ---------------------------------------------------------------------------

    def _work(self, stop: threading.Event) -> None:
        cap = max(1, self.workers - 1)
        while not stop.is_set():
            with self._wake:
                seen = self._started
            try:
                ran = self._run_next(cap)
                self._refused = False
            except Unavailable as exc:  # another process holds the store's writer lock: poll again
                with self._running_lock:  # two workers refused at once: said by one
                    say, self._refused = not self._refused, True
                if say:
                    log.warning("job worker: the job store refused a claim, trying again: %s", exc)
                ran = False
            except Exception:  # a store error must not kill the worker; the job's lease recovers it
                log.exception("job worker: claiming or running a job failed")
                ran = False
            if not ran:
                # A job queued since `seen` may have committed after this claim looked, its notify
                # gone to no waiter or to another worker: look again rather than sleep. Polling
                # catches other processes' jobs and expired leases.
                with self._wake:
                    if self._started == seen and not stop.is_set():
                        self._wake.wait(self.poll_s)

    def _run_next(
        self, per_principal: int | None = None, job_id: str | None = None, *, wait_s: float | None = None
    ) -> bool:
        """Claim a job and run it here. `wait_s`: how long its writes the store refuses are tried
        again (AttemptWrites._persist): unbounded in a worker, a lease in a caller's thread."""
        if self._stopping:
            return False
        self._write_unwritten()
        now = self._clock.now()
        with self._gate.open() as is_open:
            row = (
                self._store.claim(
                    now, now.timestamp() + self.lease_s, per_principal=per_principal, job_id=job_id
                )
                if is_open
                else None
            )
        if row is None:
            return False
        key = (row.id, row.attempts)
        with self._running_lock:
            stopping = self._stopping
            if not stopping:
                self._running[key] = (row, now)
        if stopping:  # the stop began during the claim, after its hand-back had looked or will look
            self._release(row, now)
            return False
        try:
            self._execute(row, wait_s)
        finally:
            with self._running_lock:
                self._running.pop(key, None)
                self._handed.discard(key)
        return True

    def _hand_back(self) -> None:
        """Release every attempt still running here: the process is stopping."""
        with self._running_lock:  # an attempt whose final write waits to be let in is not handed back
            running = [value for key, value in self._running.items() if key not in self._finishing]
        for row, claimed_at in running:
            self._release(row, claimed_at)

    def _release(self, row: JobRow, claimed_at: datetime) -> None:
        key, now = (row.id, row.attempts), self._clock.now()
        try:
            # under the lock: an attempt that ends meanwhile learns it was handed back (_handed_back)
            with self._running_lock, self._gate.open() as is_open:
                ran_s = (now - claimed_at).total_seconds()
                released = is_open and self._store.release(row.id, row.attempts, now, ran_s)
                if released and key in self._running:
                    self._handed.add(key)
        except Unavailable as exc:  # another process holds the store's writer lock: nothing wrong here
            log.warning("the job store refused handing job %s back; it waits out its lease: %s", row.id, exc)
            return
        except Exception:  # the store unreachable: the lease expires instead
            log.warning("could not hand job %s back; it waits out its lease", row.id, exc_info=True)
            return
        if released:
            log.info("job %s attempt %d handed back: this process is stopping", row.id, row.attempts)

    def _handed_back(self, row: JobRow) -> bool:
        with self._running_lock:
            return (row.id, row.attempts) in self._handed

    def _execute(self, row: JobRow, wait_s: float | None) -> None:
        handler = self._handlers.get(row.kind)
        if handler is None:
            error = f"no handler is registered for job kind {row.kind!r}"
            self._finish(row, JobStatus.failed, error=error, wait_s=wait_s)
            return
        if row.tries > self.max_attempts:  # earlier attempts died without finishing
            error = f"gave up after {row.tries - 1} attempts: the worker running the job stopped"
            self._finish(row, JobStatus.failed, error=error, wait_s=wait_s)
            return
        if row.handed_over_s >= self.max_handed_over_s:
            self._finish(row, JobStatus.failed, error=self._handed_over_too_long(row), wait_s=wait_s)
            return
        try:
            with self._holding(row):
                result = json_object(handler(row.to_job(), self._context(row, wait_s)), "job result")
        except Exception as exc:
            if self._handed_back(row):  # not this attempt's failure: the job is another's to run
                log.debug("job %s attempt %d, handed back, ended: %s", row.id, row.attempts, error_text(exc))
                return
            self._failed(row, exc, wait_s)
        else:
            if self._handed_back(row):  # its result is refused: the job runs again elsewhere
                log.debug("job %s attempt %d, handed back, ended after all", row.id, row.attempts)
                return
            self._finish(row, JobStatus.completed, result=result, wait_s=wait_s)

    def _handed_over_too_long(self, row: JobRow) -> str:
        return (
            f"gave up after it was handed over {row.handed_over} times without finishing: its attempts "
            f"ran {duration(row.handed_over_s)} in all, each stopped by its process "
            "or by a job store locked past its lease "
            f"(CAIRN_JOB_MAX_HANDED_OVER_S allows {duration(self.max_handed_over_s)})"
        )

    def _failed(self, row: JobRow, exc: Exception, wait_s: float | None) -> None:
        if isinstance(exc, StoreStayedLocked):  # nothing can be written of it: it waits out its lease
            raise exc
        if isinstance(exc, LeaseLost):
            log.warning(
                "job %s attempt %d no longer holds its job (its lease was lost)", row.id, row.attempts
            )
        elif isinstance(exc, REFUSALS):
            log.warning("job %s (%s) failed: %s", row.id, row.kind, error_text(exc))
            self._finish(row, JobStatus.failed, error=error_text(exc), wait_s=wait_s)
        else:
            log.warning("job %s (%s) attempt %d failed", row.id, row.kind, row.attempts, exc_info=exc)
            retry = row.tries < self.max_attempts
            status = JobStatus.queued if retry else JobStatus.failed
            self._finish(row, status, error=error_text(exc), wait_s=wait_s)
