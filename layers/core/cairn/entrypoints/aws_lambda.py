"""Lambda entry points: the API function (FastAPI through Mangum) over the same app as `cairn serve`,
and the job task function.

The container and app are built once per execution environment (cold start) and reused by every
warm invocation; Mangum runs with `lifespan="off"` because the MCP endpoints enter their own
per-request lifespan (entrypoints/mcp/http.py), the pattern that survives warm invocations.
Powertools logs each invocation with its Lambda context (structured JSON, request id as the
correlation id) and emits a ColdStart metric and an Invocations metric per call; the task
functions also trace with Powertools' Tracer (a no-op outside Lambda), the API function with
Lambda's active tracing alone. Events are never logged: they carry bearer tokens and memory
contents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cairn.bootstrap import Container
from cairn.config import Settings

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def observed(handler: Handler, *, traced: bool = False) -> Handler:
    """The handler with Powertools' structured logging and cold-start metric, and with `traced`
    its X-Ray subsegments (Tracer). The API function leaves Tracer out: importing the X-Ray SDK
    costs ~0.4 s of every cold start, and Lambda's active tracing already traces each call."""
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    logger = Logger(service="cairn")
    cold = [True]
    service = {"service": "cairn"}

    # single_metric, not Metrics.log_metrics: each invocation flushes its own metric set. Metrics
    # shares one set per process, and two invocations at once (the tests run Step Functions' Map
    # iterations in threads) could flush it empty under the other and fail the call.
    @logger.inject_lambda_context(log_event=False, correlation_id_path="requestContext.requestId")
    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if cold[0]:
            cold[0] = False
            with single_metric(
                "ColdStart", MetricUnit.Count, 1, namespace="Cairn", default_dimensions=service
            ):
                pass
        with single_metric("Invocations", MetricUnit.Count, 1, namespace="Cairn", default_dimensions=service):
            pass
        return handler(event, context)

    if not traced:
        return handle
    from aws_lambda_powertools import Tracer

    tracer = Tracer(service="cairn")
    # Responses are not captured: they hold memories.
    traced_handle: Handler = tracer.capture_lambda_handler(handle, capture_response=False)
    return traced_handle


def api_handler(make_container: Callable[[], Container]) -> Handler:
    """A Lambda handler for API Gateway HTTP API (payload v2) events; builds the app on first use."""
    from mangum import Mangum

    from cairn.entrypoints.http import create_app

    built: dict[str, Mangum] = {}

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "app" not in built:
            built["app"] = Mangum(create_app(make_container()), lifespan="off", api_gateway_base_path="/")
        response: dict[str, Any] = built["app"](event, context)
        return response

    return observed(handle)


def jobs_handler(make_container: Callable[[], Container]) -> Handler:
    """The job task function: Step Functions' `execute` / `fail` for a job, and EventBridge's
    `schedule` (queue a consolidation of every brain for this window) and `sweep` (index the
    documents whose writer stopped between its commit and its index writes)."""
    from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner
    from cairn.adapters.aws.sfn_tasks import task_handler
    from cairn.services.schedule import ConsolidationSchedule

    built: dict[str, Any] = {}

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "container" not in built:
            container = make_container()
            if not isinstance(container.jobs, StepFunctionsJobRunner):
                raise RuntimeError(
                    "the job task function needs CAIRN_STATE_MACHINE_ARNS (Step Functions jobs)"
                )
            task = task_handler(container.jobs)
            table = container.settings.table
            if table:  # steps become idempotent on the record table (entrypoints/aws_steps.py)
                from cairn.entrypoints.aws_steps import idempotent_steps

                task = idempotent_steps(task, table, _dynamodb_client(container))
            built["container"], built["task"] = container, task
        container = built["container"]
        if event.get("action") == "sweep":
            from cairn.services.index_sweeper import IndexSweeper

            return {"settled": IndexSweeper(container.documents).tick()}
        if event.get("action") == "schedule":
            schedule = ConsolidationSchedule(
                container.brains,
                container.consolidation,
                container.adapters.clock,
                schedule_window_s(container.settings),
            )
            records = container.adapters.records
            # Tidy large DynamoDB transactions a crashed writer left behind (correctness never
            # depends on it: the next writer of an item finishes or aborts them too).
            recovered = records.recover() if hasattr(records, "recover") else 0
            return {"queued": schedule.tick(), "recovered": recovered}
        result: dict[str, Any] = built["task"](event, context)
        return result

    return observed(handle, traced=True)


def schedule_window_s(settings: Settings) -> float:
    """The scheduled consolidation's idempotency window: CAIRN_CONSOLIDATE_EVERY_S, else derived
    from the rule's expression (CAIRN_CONSOLIDATION_SCHEDULE, set by the template), else a day."""
    from cairn.services.schedule import window_for

    if settings.consolidate_every_s:
        return settings.consolidate_every_s
    if settings.consolidation_schedule and settings.consolidation_schedule != "off":
        return window_for(settings.consolidation_schedule)
    return 86400.0


def _dynamodb_client(container: Container) -> Any:
    """The record store's own DynamoDB client when it has one (same endpoint and retries)."""
    return getattr(container.adapters.records, "client", None)
