"""One attempt of a job inside the Step Functions task function: its JobContext and error texts."""

from __future__ import annotations

import json
from typing import Any

from cairn.adapters.aws.sfn_job_records import JobRecords, owned_by
from cairn.adapters.local.job_outcomes import MAX_ERROR_CHARS, progress_changes
from cairn.adapters.local.job_rows import check_name, plain_json
from cairn.domain.errors import Conflict
from cairn.ports.clock import Clock


class JobAttemptFailed(Exception):
    """Raised out of the task function when a handler fails; its message is the one-line error.

    The Lambda runtime reports it as errorType `JobAttemptFailed`, which the state machine's
    `States.TaskFailed` retrier matches; raising it `from None` keeps the handler's traceback
    (and anything in it) out of the execution history.
    """


class JobStepRejected(Exception):
    """A step failed in a way a retry cannot fix (invalid input, something missing): the state
    machines retry JobAttemptFailed but not this, so it goes straight to their Catch."""


class AttemptSuperseded(Conflict):
    """This attempt no longer owns its job: another attempt started, or the job finished."""


class SfnJobContext:
    """JobContext backed by the job's records, fenced on the attempt number."""

    def __init__(self, records: JobRecords, clock: Clock, job_id: str, attempt: int) -> None:
        self._records, self._clock = records, clock
        self._job_id, self._attempt = job_id, attempt
        self._checkpoints = records.checkpoints(job_id)

    def progress(self, fraction: float, message: str | None = None) -> None:
        changes = progress_changes(fraction, message)
        written = self._records.update(
            self._job_id,
            self._clock.now(),
            lambda row: changes if owned_by(row, self._attempt) else None,
        )
        if written is None:
            raise self._superseded()

    def checkpoint(self, key: str, value: Any = True) -> None:
        check_name("checkpoint key", key)
        copied = plain_json(value, f"checkpoint {key!r}")
        if not self._records.checkpoint(self._job_id, self._attempt, key, copied, self._clock.now()):
            raise self._superseded()
        self._checkpoints[key] = copied

    def checkpoints(self) -> dict[str, Any]:
        copied: dict[str, Any] = plain_json(self._checkpoints, "checkpoints")
        return copied

    def _superseded(self) -> AttemptSuperseded:
        return AttemptSuperseded(f"job {self._job_id} attempt {self._attempt} no longer owns the job")


def one_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0][:MAX_ERROR_CHARS] if stripped else ""


def failure_text(error: Any) -> str:
    """A caller-facing line from what the state machine caught: `{"Error", "Cause"}` or a string.

    A handler failure's message is already the job's one-line error; a Lambda function error
    (a timeout, an out-of-memory) keeps its type and first line; a service error, only its name
    (its cause carries request ids and service chatter).
    """
    if isinstance(error, str):
        return one_line(error) or "the job failed"
    if not isinstance(error, dict):
        return "the job failed"
    name = str(error.get("Error") or "States.TaskFailed")
    cause = error.get("Cause")
    try:
        payload = json.loads(cause) if isinstance(cause, str) else None
    except ValueError:
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("errorMessage"), str):
        message = one_line(payload["errorMessage"])
        kind = str(payload.get("errorType") or name)
        if kind in (JobAttemptFailed.__name__, JobStepRejected.__name__):
            return message or "the job failed"
        return one_line(f"{kind}: {message}" if message else kind)
    return one_line(f"{name}: the job's task could not run")
