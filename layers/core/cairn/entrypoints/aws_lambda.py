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
from dataclasses import dataclass
from typing import Any

from cairn.container import Container

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


@dataclass(frozen=True)
class JobTasks:
    """What the job task function does, wired by the composition root (bootstrap/functions.py)."""

    task: Handler
    """Step Functions' `execute` / `fail` for one job."""
    sweep: Callable[[], int]
    """Index the documents whose writer stopped between its commit and its index writes."""
    schedule: Callable[[], dict[str, Any]]
    """Queue a consolidation of every brain for this window."""


def jobs_handler(make_tasks: Callable[[], JobTasks]) -> Handler:
    """The job task function: Step Functions' `execute` / `fail` for a job, and EventBridge's
    `schedule` and `sweep` actions; built on first use."""
    built: dict[str, JobTasks] = {}

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "tasks" not in built:
            built["tasks"] = make_tasks()
        tasks = built["tasks"]
        if event.get("action") == "sweep":
            return {"settled": tasks.sweep()}
        if event.get("action") == "schedule":
            return tasks.schedule()
        return tasks.task(event, context)

    return observed(handle, traced=True)
