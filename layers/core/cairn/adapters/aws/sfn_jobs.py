"""The AWS JobRunner: each job is one Step Functions execution; its state lives in the RecordStore.

Two sides share this class. The API side calls `start` and `status`; the task function (a
Lambda invoked by the state machine) calls `execute` and `fail` through `task_handler`
(sfn_tasks.py), with the same handlers registered as in the embedded runner. Records (sfn_job_records):
`job#<job id>`/`job` holds the job (the domain Job's fields + execution ARN), and
`job#<job id>`/`checkpoint#<key>` one checkpoint each; every write is conditional on the version.

- start: writes the job record (conditional create, keys in sfn_job_records) BEFORE
  StartExecution, with input {"job_id", "kind"}, on state_machine_arns[kind] or the generic
  machine (infra/statemachines/job.asl.json). The execution name is a hash of the job input
  (sfn_names), and a repeated idempotency key maps to the same job id, so a repeat never starts
  a second execution; it re-sends StartExecution only for a job that never ran (a crash between
  the record and the call), which Step Functions answers idempotently.
- execute: one attempt. Counts it, runs the handler with a JobContext on the records (a progress
  report the store refuses is skipped, a refused checkpoint tried again: sfn_attempt.py), records
  the result; a handler error is recorded (job back to `queued`) and raised as JobAttemptFailed,
  so the state machine's Retry decides; when retries run out, its Catch calls `fail`. Failures
  that a retry cannot fix (unknown kind, a result that is not a JSON object, a handler's refusal
  of its input: job_outcomes.REFUSALS) fail the job at once and return {"status": "failed"}, which
  the state machine turns into a failed execution.
- status: the record; while it is queued or running, DescribeExecution reconciles it (an
  execution that ended FAILED, TIMED_OUT or ABORTED without marking the job marks it failed).
- begin / step: a kind registered with `register_steps` runs as a machine with one state per
  step (infra/statemachines/ingest.asl.json, consolidate.asl.json). `begin` claims the job (one
  execution is one attempt) and returns the attempt number the later states carry; `step` runs
  one named step fenced on that attempt (Map items run concurrently under the same attempt), and
  the kind's `finish` step records the job's result. A step that fails with an error a retry
  cannot fix (REFUSALS: invalid input, something missing, forbidden) raises JobStepRejected,
  which the machines do not retry; any other raises JobAttemptFailed, which they do. `fail` runs
  the kind's cleanup.
- run_pending: waits for the executions this runner started (for tests and the CLI); Step
  Functions is the worker, so start_worker/stop_worker do nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from cairn.adapters.aws.sfn_attempt import (
    JobAttemptFailed,
    JobStepRejected,
    SfnJobContext,
    failure_text,
    until_taken,
)
from cairn.adapters.aws.sfn_executions import MISSING, Executions, SfnClient
from cairn.adapters.aws.sfn_job_records import JobRecords, StoredJob, owned_by
from cairn.adapters.aws.sfn_names import execution_arn, execution_input, execution_name, job_id_for_key
from cairn.adapters.local.job_outcomes import REFUSALS, error_text
from cairn.adapters.local.job_rows import JobRow, check_name, json_object
from cairn.adapters.local.starts_jobs import StartsJobs
from cairn.domain.errors import CairnError, Conflict, InvalidInput, NotFound
from cairn.domain.models import Job, JobStatus
from cairn.ports.clock import Clock
from cairn.ports.jobs import JobHandler, JobHolds, JobSteps
from cairn.ports.records import RecordStore

log = logging.getLogger("cairn.jobs.sfn")

_UNFINISHED = (JobStatus.queued, JobStatus.running)
_ENDED_BADLY = ("FAILED", "TIMED_OUT", "ABORTED")


class StepFunctionsJobRunner(StartsJobs):
    def __init__(
        self,
        sfn_client: SfnClient,
        records: RecordStore,
        clock: Clock,
        state_machine_arns: dict[str, str],
        *,
        default_kind_key: str = "job",
        run_timeout_s: float = 120.0,
        poll_s: float = 0.05,
        start_grace_s: float = 300.0,
        refused_retry_s: float = 0.1,
    ) -> None:
        self._executions, self._jobs, self._clock = Executions(sfn_client), JobRecords(records), clock
        self._machines, self._default_key = dict(state_machine_arns), default_kind_key
        self.run_timeout_s, self.poll_s, self.start_grace_s = run_timeout_s, poll_s, start_grace_s
        self.refused_retry_s = refused_retry_s  # the first wait before a refused checkpoint is tried again
        self._handlers: dict[str, JobHandler] = {}
        self._steps: dict[str, JobSteps] = {}
        self._started: dict[str, tuple[str, int]] = {}  # execution ARN -> (job id, attempts before)
        self._lock = threading.Lock()

    # -- JobRunner: the API side ---------------------------------------------------------------

    def register(self, kind: str, handler: JobHandler) -> None:
        self._handlers[check_name("job kind", kind)] = handler

    def register_steps(self, kind: str, steps: JobSteps) -> None:
        if steps.finish not in steps.steps:
            raise ValueError(f"the finish step {steps.finish!r} is not one of the steps")
        self._steps[check_name("job kind", kind)] = steps

    def _submit(self, row: JobRow) -> Job:
        kind, key = row.kind, row.idempotency_key
        machine = self._machine_for(kind)
        job_id = row.id if key is None else job_id_for_key(key)
        row = replace(row, id=job_id)
        name = execution_name(job_id, kind, row.input, row.created_at)
        stored, _ = self._jobs.create(row, execution_arn(machine, name))
        if stored.row.kind != kind or stored.row.idempotency_key != key:
            raise Conflict(f"idempotency key already used for a job of kind {stored.row.kind!r}")
        if stored.row.status is JobStatus.queued and stored.row.attempts == 0:
            self._start_execution(stored, machine)
        return stored.row.to_job()

    def status(self, job_id: str) -> Job:
        stored = self._get(job_id)
        if stored.row.status in _UNFINISHED:
            stored = self._reconcile(stored)
        return stored.row.to_job()

    def run_pending(self) -> int:
        """Wait (bounded by run_timeout_s) for this runner's executions; returns the attempts they ran."""
        deadline = time.monotonic() + self.run_timeout_s
        ran = 0
        while True:
            with self._lock:
                started = dict(self._started)
            for arn, (job_id, before) in started.items():
                if self._executions.describe(arn).get("status") == "RUNNING":
                    continue
                with self._lock:
                    self._started.pop(arn, None)
                stored = self._jobs.get(job_id)
                if stored is not None and stored.row.status in _UNFINISHED:
                    stored = self._reconcile(stored)
                ran += max((stored.row.attempts if stored else before) - before, 0)
            with self._lock:
                left = len(self._started)
            if not left:
                return ran
            if time.monotonic() > deadline:
                log.warning("run_pending: %d executions still running after %.0f s", left, self.run_timeout_s)
                return ran
            time.sleep(self.poll_s)

    def run_one(self, job_id: str) -> bool:
        """Nothing to run here: Step Functions runs the job from its start."""
        return False

    def start_worker(self) -> None:
        """Nothing to start: Step Functions runs the jobs."""

    def stop_worker(self) -> None:
        """Nothing to stop."""

    def running_here(self) -> int:
        """None: Step Functions runs the jobs."""
        return 0

    def forget(self, job_ids: Sequence[str], holds: JobHolds | None = None) -> int:
        """ForgetsJobs.forget on the job records (Step Functions keeps each execution's input and
        output for its own retention period: docs/AUTH.md)."""
        return self._jobs.forget(job_ids, holds)

    def close(self) -> None:
        """Nothing to release: the clients belong to the caller."""

    # -- the task side (the Lambda function the state machine invokes) -------------------------

    def execute(self, job_id: str) -> dict[str, Any]:
        """Run one attempt of the job; returns {"job_id", "status", "error"} for the state machine."""
        claimed = self._jobs.update(job_id, self._clock.now(), _claim)
        if claimed is None:
            return self._unclaimed(job_id)[0]
        row = claimed.row
        handler = self._handlers.get(row.kind)
        if handler is None:
            return self._finish(
                row, JobStatus.failed, error=f"no handler is registered for job kind {row.kind!r}"
            )
        try:
            returned = handler(row.to_job(), self._context(job_id, row.attempts))
        except REFUSALS as exc:
            log.warning("job %s (%s) failed: %s", job_id, row.kind, error_text(exc))
            return self._finish(row, JobStatus.failed, error=error_text(exc))
        except Exception as exc:
            error = error_text(exc)
            log.warning("job %s (%s) attempt %d failed", job_id, row.kind, row.attempts, exc_info=True)
            self._finish(row, JobStatus.queued, error=error)
            raise JobAttemptFailed(error) from None
        try:
            result = json_object(returned, "job result")
        except InvalidInput as exc:
            return self._finish(row, JobStatus.failed, error=error_text(exc))
        return self._finish(row, JobStatus.completed, result=result)

    def begin(self, job_id: str) -> dict[str, Any]:
        """Claim a stepped job for this execution: {"job_id", "status", "error", "attempt"}.

        A job that already finished (a repeated delivery) answers its status, so the machine ends."""
        claimed = self._jobs.update(job_id, self._clock.now(), _claim)
        if claimed is None:
            outcome, attempts = self._unclaimed(job_id)
            return {**outcome, "attempt": attempts}
        row = claimed.row
        if row.kind not in self._steps:
            error = f"job kind {row.kind!r} has no registered steps"
            return {**self._finish(row, JobStatus.failed, error=error), "attempt": row.attempts}
        return {**_outcome(job_id, JobStatus.running, None), "attempt": row.attempts}

    def step(self, job_id: str, attempt: int, name: str, item: dict[str, Any]) -> dict[str, Any]:
        """Run step `name` of the job's attempt; the finish step also records the job's result."""
        stored = self._jobs.get(job_id)
        if stored is None:
            raise JobStepRejected(f"job {job_id!r} not found")
        row = stored.row
        steps = self._steps.get(row.kind)
        handler = steps.steps.get(name) if steps else None
        if steps is None or handler is None:
            raise JobStepRejected(f"job kind {row.kind!r} has no step {name!r}")
        if name == steps.finish and row.status is JobStatus.completed and row.attempts == attempt:
            return {**_outcome(job_id, row.status, None), "result": row.result}  # a repeated finish
        if not owned_by(row, attempt):
            raise JobStepRejected(f"job {job_id} attempt {attempt} no longer owns the job")
        try:
            returned = handler(row.to_job(), self._context(job_id, attempt), item)
            result = json_object(returned, f"step {name!r} result")
        except REFUSALS as exc:
            raise JobStepRejected(error_text(exc)) from None
        except Exception as exc:
            log.warning("job %s (%s) step %s failed", job_id, row.kind, name, exc_info=True)
            raise JobAttemptFailed(error_text(exc)) from None
        if name == steps.finish:
            return {**self._finish(row, JobStatus.completed, result=result), "result": result}
        return result

    def fail(self, job_id: str, error: Any = None) -> dict[str, Any]:
        """Mark the job failed after the state machine caught `error` ({"Error", "Cause"} or text),
        then run its kind's cleanup (again on a repeat: cleanups tolerate it)."""
        text = failure_text(error)
        stored = self._jobs.update(
            job_id,
            self._clock.now(),
            lambda row: {"status": JobStatus.failed, "error": text} if row.status in _UNFINISHED else None,
        ) or self._jobs.get(job_id)
        if stored is None:
            return _outcome(job_id, JobStatus.failed, text)
        steps = self._steps.get(stored.row.kind)
        if steps is not None and steps.cleanup is not None and stored.row.status is JobStatus.failed:
            steps.cleanup(stored.row.to_job(), self._jobs.checkpoints(job_id))
        return _outcome(job_id, stored.row.status, stored.row.error or text)

    # -- internals -----------------------------------------------------------------------------

    def _context(self, job_id: str, attempt: int) -> SfnJobContext:
        return SfnJobContext(self._jobs, self._clock, job_id, attempt, retry_s=self.refused_retry_s)

    def _unclaimed(self, job_id: str) -> tuple[dict[str, Any], int]:
        """The outcome and attempts of a job no attempt could claim: missing, or already finished
        (a repeated delivery)."""
        stored = self._jobs.get(job_id)
        if stored is None:
            return _outcome(job_id, JobStatus.failed, f"job {job_id!r} not found"), 0
        return _outcome(job_id, stored.row.status, stored.row.error), stored.row.attempts

    def _machine_for(self, kind: str) -> str:
        machine = self._machines.get(kind) or self._machines.get(self._default_key)
        if not machine:
            raise CairnError(f"no state machine is configured for job kind {kind!r}")
        return machine

    def _get(self, job_id: str) -> StoredJob:
        valid = isinstance(job_id, str) and 0 < len(job_id) <= 200
        stored = self._jobs.get(job_id) if valid else None
        if stored is None:
            raise NotFound(f"job {job_id!r} not found")
        return stored

    def _start_execution(self, stored: StoredJob, machine: str) -> None:
        name = stored.execution_arn.rsplit(":", 1)[1]
        self._executions.start(machine, name, execution_input(stored.row.id, stored.row.kind))
        with self._lock:
            self._started.setdefault(stored.execution_arn, (stored.row.id, stored.row.attempts))

    def _reconcile(self, stored: StoredJob) -> StoredJob:
        execution = self._executions.describe(stored.execution_arn)
        state = execution.get("status")
        if state in _ENDED_BADLY:
            error = f"the job's execution ended {state}: {execution.get('error') or 'no error given'}"
        elif state == MISSING and self._never_started(stored):
            error = "the job's execution was never started"
        else:
            return stored
        marked = self._jobs.update(
            stored.row.id,
            self._clock.now(),
            lambda row: (
                {"status": JobStatus.failed, "error": failure_text(error)}
                if row.status in _UNFINISHED
                else None
            ),
        )
        return marked or self._jobs.get(stored.row.id) or stored

    def _never_started(self, stored: StoredJob) -> bool:
        age = self._clock.now() - stored.row.created_at
        return stored.row.attempts == 0 and age > timedelta(seconds=self.start_grace_s)

    def _finish(
        self,
        row: JobRow,
        status: JobStatus,
        *,
        result: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> dict[str, Any]:
        changes: dict[str, Any] = {"status": status, "error": error}
        if status is JobStatus.completed:
            changes.update(result=result, progress=1.0)
        attempt = row.attempts
        written = until_taken(  # refused, the state machine would run the finished job again
            lambda: self._jobs.update(
                row.id, self._clock.now(), lambda now_row: changes if owned_by(now_row, attempt) else None
            ),
            f"the outcome of job {row.id} attempt {attempt}",
            self.refused_retry_s,
        )
        if written is None:
            log.warning("job %s attempt %d finished after another attempt took over", row.id, attempt)
            raise JobAttemptFailed(f"job {row.id} attempt {attempt} no longer owns the job")
        return _outcome(row.id, status, error)


def _claim(row: JobRow) -> dict[str, Any] | None:
    if row.status not in _UNFINISHED:
        return None
    return {"status": JobStatus.running, "attempts": row.attempts + 1}


def _outcome(job_id: str, status: JobStatus, error: str | None) -> dict[str, Any]:
    return {"job_id": job_id, "status": status.value, "error": error}
