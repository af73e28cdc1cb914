"""The Lambda functions of the AWS stack (functions/*/app.py), wired here: the API function's app
and the job task function's tasks, each built on a function's first invocation."""

from __future__ import annotations

from typing import Any

from cairn.bootstrap.options import schedule_window_s
from cairn.bootstrap.shared import build_container
from cairn.bootstrap.sweep import index_sweeper
from cairn.config import Settings
from cairn.container import Container
from cairn.entrypoints import log_scrub
from cairn.entrypoints.aws_lambda import Handler, JobTasks, api_handler, jobs_handler

MEND_WITHIN_S = 3600.0
"""How far back each index sweep (every five minutes) looks for brains without pointers: a deploy's
switch-over, when the previous release's code may still make one, takes minutes."""


def api_function(settings: Settings | None = None) -> Handler:
    log_scrub.install()  # no credential reaches the function's log (entrypoints/log_scrub.py)
    return api_handler(lambda: build_container(settings))


def jobs_function(settings: Settings | None = None) -> Handler:
    log_scrub.install()

    def make() -> JobTasks:
        resolved = settings if settings is not None else Settings()
        return job_tasks(build_container(resolved), resolved)

    return jobs_handler(make)


def job_tasks(container: Container, settings: Settings) -> JobTasks:
    """The job task function's work over `container`, which must run jobs on Step Functions."""
    from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner
    from cairn.adapters.aws.sfn_tasks import task_handler
    from cairn.services.memory.schedule import ConsolidationSchedule

    if not isinstance(container.jobs, StepFunctionsJobRunner):
        raise RuntimeError("the job task function needs CAIRN_STATE_MACHINE_ARNS (Step Functions jobs)")
    task = task_handler(container.jobs)
    records = container.adapters.records
    client = getattr(records, "client", None)  # the record store's own DynamoDB client (same endpoint)
    if settings.table:  # steps become idempotent on the record table (adapters/aws/sfn_idempotency.py)
        from cairn.adapters.aws.sfn_idempotency import idempotent_steps

        task = idempotent_steps(task, settings.table, client)

    def schedule() -> dict[str, Any]:
        queued = ConsolidationSchedule(
            container.brains, container.consolidation, container.adapters.clock, schedule_window_s(settings)
        ).tick()
        # Tidy large DynamoDB transactions a crashed writer left behind (correctness never
        # depends on it: the next writer of an item finishes or aborts them too).
        recovered = records.recover() if hasattr(records, "recover") else 0
        return {"queued": queued, "recovered": recovered}

    def mend() -> int:
        return len(container.brains.mend_pointers(made_within_s=MEND_WITHIN_S))

    def maintenance() -> dict[str, Any]:
        kept = container.health.maintenance.last() if container.health.maintenance is not None else None
        return {} if kept is None or kept.quiet else kept.summary(named=True)  # the function's own log

    return JobTasks(
        task=task, sweep=index_sweeper(container).tick, schedule=schedule, mend=mend, maintenance=maintenance
    )
