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
so: a job is given up on for dying with its worker, not for its process being stopped.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from cairn.adapters.local.job_rows import JobRow, JobStore, check_name, json_object, plain_json
from cairn.domain.errors import (
    CairnError,
    Conflict,
    DamagedContent,
    FetchRefused,
    FileTooLarge,
    Forbidden,
    InvalidInput,
    NoBrain,
    NotFound,
    PayloadTooLarge,
)
from cairn.domain.models import Job, JobStatus
from cairn.ports.clock import Clock
from cairn.ports.jobs import JobHandler, JobHolds

log = logging.getLogger("cairn.jobs")

MAX_ERROR_CHARS = 500
MAX_MESSAGE_CHARS = 500


HOLD_AT_MOST_S = 6 * 3600.0
"""How long a running handler's lease is renewed for; past it the job is taken as stuck."""

STOP_GRACE_S = 1.0
"""How long a stopping process waits for its running handlers before handing their jobs back.
Short: an MCP client sends its stdio server SIGTERM two seconds after closing its input (some at
once, or SIGKILL soon after), and a job still claimed when the process dies waits out its lease."""


def progress_changes(fraction: float, message: str | None) -> dict[str, Any]:
    """The job fields a progress report sets: the fraction clamped to [0, 1], a short message."""
    if not isinstance(fraction, int | float) or math.isnan(fraction):
        raise InvalidInput("progress must be a number")
    changes: dict[str, Any] = {"progress": min(max(float(fraction), 0.0), 1.0)}
    if message is not None:
        changes["message"] = str(message)[:MAX_MESSAGE_CHARS]
    return changes


class LeaseLost(Conflict):
    """This attempt no longer owns its job (its lease expired and another worker took it, or its
    process, stopping, handed it back)."""


REFUSALS: tuple[type[CairnError], ...] = (
    InvalidInput,
    NotFound,
    Forbidden,
    NoBrain,
    FileTooLarge,
    PayloadTooLarge,
    FetchRefused,
    DamagedContent,
)
"""What a handler raises when its input cannot be done: another attempt would only fail the same
way, so the job fails at once, logged in a line (no traceback: nothing is wrong with Cairn)."""


def error_text(exc: BaseException) -> str:
    """One line for callers: a CairnError's message, else `Type: message`; never a traceback."""
    text = exc.message if isinstance(exc, CairnError) else f"{type(exc).__name__}: {exc}".rstrip(": ")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:MAX_ERROR_CHARS]


class _Context:
    def __init__(self, engine: JobEngine, row: JobRow) -> None:
        self._engine, self._row = engine, row
        self._checkpoints = dict(row.checkpoints)

    def progress(self, fraction: float, message: str | None = None) -> None:
        changes = progress_changes(fraction, message)
        self._engine._write(self._row, changes)

    def checkpoint(self, key: str, value: Any = True) -> None:
        check_name("checkpoint key", key)
        updated = {**self._checkpoints, key: plain_json(value, f"checkpoint {key!r}")}
        self._engine._write(self._row, {"checkpoints": updated})
        self._checkpoints = updated

    def checkpoints(self) -> dict[str, Any]:
        copied: dict[str, Any] = plain_json(self._checkpoints, "checkpoints")
        return copied


class StartsJobs(ABC):
    """How every runner starts a job: the row checked and made (JobRow.new), then submitted its way."""

    _clock: Clock
    _start_listeners: tuple[Callable[[Job], None], ...] = ()  # on_start's, per runner once added

    def start(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        brain_id: str | None = None,
        principal: str | None = None,
        idempotency_key: str | None = None,
    ) -> Job:
        row = JobRow.new(
            kind,
            payload,
            self._clock.now(),
            brain_id=brain_id,
            principal=principal,
            idempotency_key=idempotency_key,
        )
        job = self._submit(row)
        if job.id == row.id:
            for listener in self._start_listeners:
                try:
                    listener(job)
                except Exception:  # the job is queued; a listing that misses it is not worth failing it
                    log.exception("a job start listener failed for %s", job.id)
        return job

    def on_start(self, listener: Callable[[Job], None]) -> None:
        self._start_listeners = (*self._start_listeners, listener)

    @abstractmethod
    def _submit(self, row: JobRow) -> Job:
        """Store and run `row`, or the job its idempotency key already names; Conflict when that
        job is of another kind."""


class JobEngine(StartsJobs):
    """JobRunner over a JobStore: register, start, status, run_pending, start/stop_worker.

    `start_worker` runs `workers` threads. Each claims with a cap of `workers - 1` (at least 1)
    jobs per principal, so one principal's long jobs never hold every worker; `run_pending`, which
    works in its caller's thread, claims without it. `stop_worker` claims nothing more, waits up to
    `stop_grace_s` for the attempts running here, and hands the unfinished ones back (see above)."""

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
    ) -> None:
        if lease_s <= 0 or max_attempts < 1 or poll_s <= 0 or workers < 1 or stop_grace_s < 0:
            raise ValueError(
                "lease_s and poll_s must be positive, max_attempts and workers at least 1, "
                "stop_grace_s not negative"
            )
        self._store, self._clock = store, clock
        self.lease_s, self.max_attempts, self.poll_s = lease_s, max_attempts, poll_s
        self.workers, self.stop_grace_s = workers, stop_grace_s
        self._handlers: dict[str, JobHandler] = {}
        self._wake = threading.Condition()
        self._started = 0  # jobs this process queued: a worker that saw it change looks again before sleeping
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._halted: list[threading.Thread] = []  # stopped, perhaps still running a handed-back handler
        self._worker_lock = threading.Lock()
        self._stopping = False  # set by stop_worker until start_worker: no claims meanwhile
        self._running: dict[tuple[str, int], JobRow] = {}  # the attempts this engine runs
        self._running_lock = threading.Lock()

    # -- JobRunner ---------------------------------------------------------------------------

    def register(self, kind: str, handler: JobHandler) -> None:
        self._handlers[check_name("job kind", kind)] = handler

    def _submit(self, row: JobRow) -> Job:
        stored = self._store.insert(row)
        if stored.kind != row.kind:
            raise Conflict(f"idempotency key already used for a job of kind {stored.kind!r}")
        if stored.id == row.id:
            with self._wake:
                self._started += 1
                self._wake.notify()
        return stored.to_job()

    def status(self, job_id: str) -> Job:
        row = self._store.get(job_id) if isinstance(job_id, str) and job_id else None
        if row is None:
            raise NotFound(f"job {job_id!r} not found")
        return row.to_job()

    def run_pending(self) -> int:
        ran = 0
        while self._run_next():
            ran += 1
        return ran

    def run_one(self, job_id: str) -> bool:
        return self._run_next(job_id=job_id)

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

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None = None) -> int:
        return self._store.forget(job_ids, holds)

    def close(self) -> None:
        self._halt()
        with self._worker_lock:  # those an earlier stop_worker left too
            halted = list(self._halted)
        for thread in halted:  # a handed-back handler ends at its next write; the store outlives it
            if thread is not threading.current_thread():
                thread.join()
        self._store.close()

    # -- internals ---------------------------------------------------------------------------

    def _work(self, stop: threading.Event) -> None:
        cap = max(1, self.workers - 1)
        while not stop.is_set():
            with self._wake:
                seen = self._started
            try:
                ran = self._run_next(cap)
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

    def _run_next(self, per_principal: int | None = None, job_id: str | None = None) -> bool:
        if self._stopping:
            return False
        now = self._clock.now()
        row = self._store.claim(
            now, now.timestamp() + self.lease_s, per_principal=per_principal, job_id=job_id
        )
        if row is None:
            return False
        key = (row.id, row.attempts)
        with self._running_lock:
            stopping = self._stopping
            if not stopping:
                self._running[key] = row
        if stopping:  # the stop began during the claim, after its hand-back had looked or will look
            self._release(row)
            return False
        try:
            self._execute(row)
        finally:
            with self._running_lock:
                self._running.pop(key, None)
        return True

    def _hand_back(self) -> None:
        """Release every attempt still running here: the process is stopping."""
        with self._running_lock:
            running = list(self._running.values())
        for row in running:
            self._release(row)

    def _release(self, row: JobRow) -> None:
        try:
            released = self._store.release(row.id, row.attempts, self._clock.now())
        except Exception:  # the store unreachable: the lease expires instead
            log.warning("could not hand job %s back; it waits out its lease", row.id, exc_info=True)
            return
        if released:
            log.info("job %s attempt %d handed back: this process is stopping", row.id, row.attempts)

    def _execute(self, row: JobRow) -> None:
        handler = self._handlers.get(row.kind)
        if handler is None:
            self._finish(row, JobStatus.failed, error=f"no handler is registered for job kind {row.kind!r}")
            return
        if row.tries > self.max_attempts:  # earlier attempts died without finishing
            error = f"gave up after {row.tries - 1} attempts: the worker running the job stopped"
            self._finish(row, JobStatus.failed, error=error)
            return
        try:
            with self._holding(row):
                result = json_object(handler(row.to_job(), _Context(self, row)), "job result")
        except LeaseLost:
            log.warning(
                "job %s attempt %d no longer holds its job (lease lost or handed back)", row.id, row.attempts
            )
        except REFUSALS as exc:
            log.warning("job %s (%s) failed: %s", row.id, row.kind, error_text(exc))
            self._finish(row, JobStatus.failed, error=error_text(exc))
        except Exception as exc:
            log.warning("job %s (%s) attempt %d failed", row.id, row.kind, row.attempts, exc_info=True)
            retry = row.tries < self.max_attempts
            self._finish(row, JobStatus.queued if retry else JobStatus.failed, error=error_text(exc))
        else:
            self._finish(row, JobStatus.completed, result=result)

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
        while not stop.wait(self.lease_s / 3) and time.monotonic() < until:
            now = self._clock.now()
            try:
                held = self._store.update(
                    row.id, row.attempts, now, {"lease_until": now.timestamp() + self.lease_s}
                )
            except Exception:  # the store unreachable a moment: the next beat tries again
                log.warning("could not renew the lease of job %s", row.id, exc_info=True)
                continue
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
        changes: dict[str, Any] = {"status": status, "error": error, "lease_until": None}
        if status is JobStatus.completed:
            changes.update(result=result, progress=1.0)
        if not self._store.update(row.id, row.attempts, self._clock.now(), changes):
            log.warning("job %s attempt %d finished after losing its lease", row.id, row.attempts)

    def _write(self, row: JobRow, changes: dict[str, Any]) -> None:
        """A running attempt's progress/checkpoint write; it also renews the lease."""
        now = self._clock.now()
        if not self._store.update(
            row.id, row.attempts, now, {**changes, "lease_until": now.timestamp() + self.lease_s}
        ):
            raise LeaseLost(f"job {row.id} attempt {row.attempts} no longer holds its lease")
