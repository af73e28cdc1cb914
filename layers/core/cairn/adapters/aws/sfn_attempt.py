"""One attempt of a job inside the Step Functions task function: its JobContext and error texts."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from cairn.adapters.aws.sfn_job_records import JobRecords, owned_by
from cairn.adapters.local.job_outcomes import MAX_ERROR_CHARS, progress_changes
from cairn.adapters.local.job_rows import check_name, plain_json
from cairn.domain.errors import Conflict, Unavailable
from cairn.ports.clock import Clock

log = logging.getLogger("cairn.jobs.sfn")

REFUSED = (Unavailable, Conflict)
"""A write the record store refused: throttled (Unavailable), or contended past its own retries (a
transaction conflict, the job item changed by every try: Conflict). Nothing is wrong with the job."""
RETRY_AT_MOST_S = 5.0
T = TypeVar("T")


def until_taken(write: Callable[[], T], what: str, retry_s: float) -> T:
    """`write`, tried again while the store refuses it (REFUSED), waiting `retry_s` first and
    doubling to RETRY_AT_MOST_S; said once when refused, and once when let in. The task function's
    own timeout bounds the wait."""
    delay, refused = retry_s, False
    while True:
        try:
            written = write()
        except REFUSED as exc:
            if not refused:
                log.warning("the job store refused %s, trying again: %s", what, exc)
            refused = True
            time.sleep(delay)
            delay = min(delay * 2, RETRY_AT_MOST_S)
            continue
        if refused:
            log.info("the job store let %s in", what)
        return written


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
    """JobContext backed by the job's records, fenced on the attempt number.

    As in the embedded engine (adapters/local/job_attempt.py): a progress report the store refuses
    is skipped, said once while the store refuses them, and the handler goes on; a checkpoint, the
    step the job resumes from, is tried again with backoff (from `retry_s`, doubling to 5 s) until
    it goes in. Failing the attempt for either would have the state machine run the job again, and
    count the table's throttling against its retries, though nothing is wrong with the job; the
    task function's own timeout bounds the wait."""

    def __init__(
        self, records: JobRecords, clock: Clock, job_id: str, attempt: int, *, retry_s: float = 0.1
    ) -> None:
        self._records, self._clock = records, clock
        self._job_id, self._attempt, self._retry_s = job_id, attempt, retry_s
        self._checkpoints = records.checkpoints(job_id)
        self._progress_refused = False  # said once while the store refuses progress reports

    def progress(self, fraction: float, message: str | None = None) -> None:
        changes = progress_changes(fraction, message)
        try:
            written = self._records.update(
                self._job_id,
                self._clock.now(),
                lambda row: changes if owned_by(row, self._attempt) else None,
            )
        except REFUSED as exc:
            if not self._progress_refused:
                log.warning(
                    "the job store refused a progress report of job %s attempt %d; the job goes on, "
                    "its reports skipped while the store refuses them: %s",
                    self._job_id,
                    self._attempt,
                    exc,
                )
            self._progress_refused = True
            return
        self._progress_refused = False
        if written is None:
            raise self._superseded()

    def checkpoint(self, key: str, value: Any = True) -> None:
        check_name("checkpoint key", key)
        copied = plain_json(value, f"checkpoint {key!r}")
        written = until_taken(
            lambda: self._records.checkpoint(self._job_id, self._attempt, key, copied, self._clock.now()),
            f"checkpoint {key!r} of job {self._job_id} attempt {self._attempt}",
            self._retry_s,
        )
        if not written:
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
