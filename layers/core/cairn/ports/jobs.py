"""JobRunner: durable background jobs with progress, retries and idempotent steps.

Adapters: a SQLite queue worked by an in-process thread (embedded), Step Functions (AWS).

Delivery is at least once: a handler may run again after a failure, after the process
running it died, or after that process stopped cleanly and handed the job back. Jobs are
*exactly once in effect* only when handlers make every side effect idempotent — the JobContext
contract:

- Split the work into named steps. Before a step, look it up in `ctx.checkpoints()`; if it is
  there, skip it (and reuse its recorded value). After the step's side effect is durable, call
  `ctx.checkpoint(step, value)`.
- A crash between a side effect and its checkpoint reruns that one step, so each step must also
  tolerate being redone (write by deterministic id/path, upsert rather than append).
- Report progress with `ctx.progress(fraction, message)`; each report (and each checkpoint)
  renews the job's lease, so a handler that runs longer than the lease must report.
- Raise to fail an attempt; the runner retries up to its max_attempts, then marks the job
  failed. The error text shown to callers is the exception's message (one line, truncated);
  raise CairnError subclasses with messages that carry no secrets.
- Return a JSON-serialisable dict: it becomes `job.result`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cairn.domain.models import Job


class JobContext(Protocol):
    """What a running handler may do to its own job."""

    def progress(self, fraction: float, message: str | None = None) -> None:
        """Record progress in [0, 1] (clamped) and an optional human-readable message."""

    def checkpoint(self, key: str, value: Any = True) -> None:
        """Durably record that step `key` is done, with a JSON value to reuse on a rerun."""

    def checkpoints(self) -> dict[str, Any]:
        """The steps recorded so far, by this attempt and every earlier one."""


JobHandler = Callable[[Job, JobContext], dict[str, Any]]
"""Runs one attempt of a job in a worker thread (synchronously) and returns its result."""


class JobRunner(Protocol):
    def register(self, kind: str, handler: JobHandler) -> None:
        """Handle jobs of `kind` with `handler`; register every kind before running jobs."""

    def start(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        brain_id: str | None = None,
        principal: str | None = None,
        idempotency_key: str | None = None,
    ) -> Job:
        """Queue a job and return it (status queued).

        A repeated `idempotency_key` returns the job first queued with it, whatever its state,
        and queues nothing (the first payload wins); a different `kind` raises Conflict.
        A payload that is not a JSON object raises InvalidInput.
        """

    def status(self, job_id: str) -> Job:
        """The job as it is now; raises NotFound."""

    def run_pending(self) -> int:
        """Run queued jobs in the calling thread until none is left; returns attempts run. After
        stop_worker, and until start_worker, it runs none (returns 0), as run_one returns False:
        a stopping process claims nothing. Unavailable when the store stays locked by another
        process: a claim refused, or an attempt's checkpoint or final write refused for a lease
        (the job then waits out its lease; run_one the same)."""

    def run_one(self, job_id: str) -> bool:
        """Run this job now in the calling thread if it is queued and no worker has taken it (a
        process without workers, or workers busy); False when it is not. Other jobs are left
        where they are: a request waiting for its own job never runs another principal's."""

    def start_worker(self) -> None:
        """Start the background worker threads (idempotent); start() wakes an idle one."""

    def stop_worker(self) -> None:
        """Stop the workers (idempotent): claim nothing more until start_worker, wait a short grace
        for the handlers running here, then hand their unfinished jobs back to the queue for any
        worker (another process's included) to take at once."""

    def running_here(self) -> int:
        """How many handlers are still running in this process after stop_worker (their jobs
        handed back): a process ending with some must not run its native libraries' teardown
        under them (entrypoints/cli/leaving.py)."""


StepHandler = Callable[[Job, JobContext, dict[str, Any]], dict[str, Any]]
"""Runs one named step of a job; `item` is the step's input (a Map item on Step Functions, or {})."""


@dataclass(frozen=True)
class JobSteps:
    """A job kind split into named steps, for a runner that runs each step as its own task (one
    state of a Step Functions machine). The embedded runner runs the kind's whole handler instead,
    so the two must do the same work; steps follow the JobContext contract above.

    `finish` names the step whose return value is the job's result; `cleanup`, when given, runs
    with the job's checkpoints after the job failed for good (it must tolerate running twice)."""

    steps: Mapping[str, StepHandler]
    finish: str
    cleanup: Callable[[Job, dict[str, Any]], None] | None = None


@runtime_checkable
class AnnouncesStarts(Protocol):
    def on_start(self, listener: Callable[[Job], None]) -> None:
        """Call `listener` with each job this runner queues anew (not one an idempotency key
        returns again), after it is stored; a listener's failure does not fail the start."""


JobHolds = Callable[[dict[str, Any]], bool]
"""Given what a job holds ({"input", "checkpoints", "result"}), whether an erasure must take it."""


@runtime_checkable
class ForgetsJobs(Protocol):
    def forget(self, job_ids: Sequence[str], holds: JobHolds | None = None) -> int:
        """Delete those of the jobs that have finished and that `holds` picks (every finished
        one without it), with their checkpoints and idempotency keys, leaving nothing of them in
        the store's own files; returns how many. A job queued or running keeps what it needs to
        run; an unknown id is passed over. A forgotten job's status answers NotFound, and its
        idempotency key starts a new job."""


@runtime_checkable
class SteppedJobRunner(Protocol):
    def register_steps(self, kind: str, steps: JobSteps) -> None:
        """Run jobs of `kind` step by step (registered besides the kind's whole handler)."""
