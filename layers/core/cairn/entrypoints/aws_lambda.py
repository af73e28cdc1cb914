"""Lambda entry points: the API function (FastAPI through Mangum) over the same app as `cairn serve`.

The container and app are built once per execution environment (cold start) and reused by every
warm invocation; Mangum runs with `lifespan="off"` because the MCP endpoints enter their own
per-request lifespan (entrypoints/mcp/http.py), the pattern that survives warm invocations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cairn.bootstrap import Container

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


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

    return handle


def jobs_handler(make_container: Callable[[], Container]) -> Handler:
    """The job task function: Step Functions' `execute` / `fail` for a job, and EventBridge's
    `schedule` (queue a consolidation of every brain for this window)."""
    from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner, task_handler
    from cairn.services.schedule import ConsolidationSchedule

    built: dict[str, Any] = {}

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "container" not in built:
            container = make_container()
            if not isinstance(container.jobs, StepFunctionsJobRunner):
                raise RuntimeError(
                    "the job task function needs CAIRN_STATE_MACHINE_ARNS (Step Functions jobs)"
                )
            built["container"], built["task"] = container, task_handler(container.jobs)
        container = built["container"]
        if event.get("action") == "schedule":
            every = container.settings.consolidate_every_s or 86400.0
            schedule = ConsolidationSchedule(
                container.brains, container.consolidation, container.adapters.clock, every
            )
            return {"queued": schedule.tick()}
        result: dict[str, Any] = built["task"](event, context)
        return result

    return handle
