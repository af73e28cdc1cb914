"""Lambda entry points: the API function (FastAPI through Mangum) over the same app as `cairn serve`,
and the job task function.

The container and app are built once per execution environment (cold start) and reused by every
warm invocation; Mangum runs with `lifespan="off"` because the MCP endpoints enter their own
per-request lifespan (entrypoints/mcp/http.py), the pattern that survives warm invocations.
Powertools logs each invocation with its Lambda context (structured JSON, request id as the
correlation id) and emits a ColdStart metric and an Invocations metric per call; the task
functions also trace with Powertools' Tracer (a no-op outside Lambda), the API function with
Lambda's active tracing alone. Events are never logged: they carry bearer tokens and memory
contents. An API event Mangum could not read (not HTTP API payload 2.0, or mistyped) is answered
with a 400 Problem+JSON and one log line, and a task event that is not an object raises
InvalidInput, as task_handler refuses other invalid input: never a traceback from inside. An
exception leaving either function has its text scrubbed of credentials first (the runtime prints
it, and Step Functions keeps it in the execution's history).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from cairn.container import Container
from cairn.domain.errors import InvalidInput
from cairn.entrypoints.log_scrub import scrubbed_error

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
log = logging.getLogger("cairn.lambda")


def _encodable(text: str) -> str:
    """Mangum encodes the event's strings as UTF-8: a lone surrogate (JSON's `"\\ud800"`, which a
    direct Invoke can send) would raise there."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("holds a lone surrogate, which is not text") from None
    return text


Text = Annotated[str, AfterValidator(_encodable)]


class _Http(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    method: Text
    path: Text
    sourceIp: Text


class _RequestContext(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    http: _Http


class HttpApiEvent(BaseModel):
    """What of an API Gateway HTTP API (payload 2.0) event Mangum reads, typed as API Gateway
    sends it: anything else would fail inside Mangum, before the app could answer."""

    model_config = ConfigDict(extra="allow", strict=True)
    version: Literal["2.0"]
    requestContext: _RequestContext
    headers: dict[Text, Text] = {}
    cookies: list[Text] | None = None
    rawQueryString: Text = ""
    body: Text | None = None
    isBase64Encoded: bool = False


def http_event_problem(event: Any) -> str | None:
    """Why `event` is not an HTTP API request the app can be given (None: it is one)."""
    if not isinstance(event, dict) or not {"version", "requestContext", "rawPath", "headers"} & set(event):
        return "not an API Gateway HTTP API event"
    try:
        parsed = HttpApiEvent.model_validate(event)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"not an API Gateway HTTP API (payload 2.0) event: {where}: {first['msg']}"
    if parsed.isBase64Encoded and parsed.body:
        try:
            base64.b64decode(parsed.body)
        except (binascii.Error, ValueError):
            return "the event's body is marked base64-encoded but is not base64"
    host = parsed.headers.get("host", "")
    port = host.split(":", 1)[1] if ":" in host else parsed.headers.get("x-forwarded-port", "80")
    if not (port.isascii() and port.isdigit() and len(port) <= 5):  # "²" is a digit int() refuses
        return "the event's host or x-forwarded-port header names no port"
    return None


def refused(detail: str) -> dict[str, Any]:
    """API Gateway's answer of a 400 Problem+JSON, as the REST surface words one."""
    from cairn.entrypoints.rest.problems import PROBLEM_JSON

    body = {"status": 400, "title": "Bad Request", "detail": detail, "code": "validation_error"}
    return {
        "statusCode": 400,
        "headers": {"content-type": PROBLEM_JSON},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


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
        try:
            return handler(event, context)
        except Exception as exc:
            clean = scrubbed_error(exc)
            if clean is exc:
                raise
            raise clean.with_traceback(exc.__traceback__) from None

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

    def handle(event: Any, context: Any) -> dict[str, Any]:
        problem = http_event_problem(event)
        if problem is not None:  # one line: the event itself may hold tokens and memories
            log.error("refused an API invocation: %s", problem)
            return refused(problem)
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
    sweep: Callable[[Callable[[], bool]], int]
    """Index the documents whose writer stopped between its commit and its index writes, then the
    sweep's other chores (bootstrap/shared.py `index_sweeper`), each ending at its next step once
    the question it is given says the invocation's time is running out."""
    schedule: Callable[[], dict[str, Any]]
    """Queue a consolidation of every brain for this window."""
    mend: Callable[[], int]
    """Give the brains made in the last hour the pointers they lack (run with each sweep): one
    the previous release's code made while a deploy switched over has none (docs/DEPLOY.md)."""
    maintenance: Callable[[], dict[str, Any]] = dict
    """What the sweep found left to do for brains (services/maintenance.py), said in its answer
    when there is any: memory counts `over` or being built, deletions still settling, brains the
    concept-reach pass has still to scan."""


SWEEP_MARGIN_S = 60.0
"""How long before the invocation's limit (900 s) the sweep starts no more work: what a step under
way (a build step, a deletion's look) and the reply take. What is left, the next sweep does."""


def time_running_out(context: Any, margin_s: float = SWEEP_MARGIN_S) -> Callable[[], bool]:
    """Whether the invocation has less than `margin_s` left (never, for a context that cannot say)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return lambda: False
    return lambda: float(remaining()) < margin_s * 1000


def jobs_handler(make_tasks: Callable[[], JobTasks]) -> Handler:
    """The job task function: Step Functions' `execute` / `fail` for a job, and EventBridge's
    `schedule` and `sweep` actions; built on first use."""
    built: dict[str, JobTasks] = {}

    def handle(event: Any, context: Any) -> dict[str, Any]:
        if "tasks" not in built:
            built["tasks"] = make_tasks()
        tasks = built["tasks"]
        if not isinstance(event, dict):
            raise InvalidInput(f"not a job task event: a JSON object expected, not {type(event).__name__}")
        if event.get("action") == "sweep":
            running_out = time_running_out(context)
            settled = tasks.sweep(running_out)
            left = tasks.maintenance()
            said = {"maintenance": left} if left else {}
            if running_out():  # the mend is work too: the next sweep, five minutes on, does it
                return {"settled": settled, "mended": 0, "cut_short": True, **said}
            return {"settled": settled, "mended": tasks.mend(), **said}
        if event.get("action") == "schedule":
            return tasks.schedule()
        return tasks.task(event, context)

    return observed(handle, traced=True)
