"""The task Lambda's handler for the Step Functions JobRunner: one event shape for every machine
(infra/statemachines/*.asl.json), dispatched to the runner's task side."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner
from cairn.adapters.local.job_outcomes import error_text
from cairn.domain.errors import InvalidInput


class TaskEvent(BaseModel):
    """What the state machine sends the task function (infra/statemachines/job.asl.json)."""

    model_config = ConfigDict(extra="ignore")
    action: Literal["execute", "fail", "begin", "step"]
    job_id: str
    error: Any = None
    attempt: int = 0
    step: str = ""
    item: dict[str, Any] = {}


def task_handler(runner: StepFunctionsJobRunner) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The task Lambda's handler: `handler = task_handler(container.jobs)` in its app.py."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            task = TaskEvent.model_validate(event)
        except ValueError as exc:
            raise InvalidInput(f"not a job task event: {error_text(exc)}") from None
        if task.action == "execute":
            return runner.execute(task.job_id)
        if task.action == "begin":
            return runner.begin(task.job_id)
        if task.action == "step":
            return runner.step(task.job_id, task.attempt, task.step, task.item)
        return runner.fail(task.job_id, task.error)

    return handle
