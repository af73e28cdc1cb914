"""Run Step Functions definitions under moto with the real task code in-process.

Under `mock_aws(config={"lambda": {"use_docker": False}})` moto answers Lambda `Invoke` from
`LambdaSimpleBackend.invoke`, which echoes the request or pops canned results. `route_lambda`
patches that method for the duration of a with-block so every invocation (from a test's own
boto3 client or from a state machine run with `execute_state_machine`) calls a Python function
chosen by function name or ARN, the way the Lambda runtime would:

- the event is the parsed JSON payload, the context a small LambdaContext look-alike;
- a JSON-serialisable return value becomes the response payload;
- an exception becomes an unhandled function error (`FunctionError: Unhandled`, payload
  `{"errorMessage", "errorType", "stackTrace"}`), which ASL sees as an error named after the
  exception class (so `States.TaskFailed` matches it);
- any other BaseException but KeyboardInterrupt stands for the runtime process dying mid-call:
  errorType `Runtime.ExitError`, as Lambda reports it;
- `LambdaServiceError` makes the Invoke call itself fail, which ASL sees as `Lambda.<code>`
  (throttling, service errors);
- an unknown function fails Invoke with ResourceNotFoundException, as Lambda does.

moto's Retry sleeps for real (`time.sleep` of at least IntervalSeconds, ASL's minimum of 1 s,
jittered); `no_retry_waits` records the requested waits instead of sleeping, to keep tests fast.
"""

from __future__ import annotations

import json
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from unittest import mock

from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.exceptions import JsonRESTError
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

LambdaHandler = Callable[[Any, Any], Any]


class LambdaServiceError(Exception):
    """Raise from a routed handler to fail the Invoke call itself (not the function)."""

    def __init__(
        self, code: str = "TooManyRequestsException", status: int = 429, message: str = "Rate exceeded"
    ) -> None:
        super().__init__(message)
        self.error_code, self.status, self.message = code, status, message


class _InvokeFailed(JsonRESTError):
    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message)
        self.code = status


@dataclass
class FakeLambdaContext:
    function_name: str
    invoked_function_arn: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 1024
    function_version: str = "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


@dataclass(frozen=True)
class Invocation:
    function_name: str
    event: Any


def function_name_of(name_or_arn: str) -> str:
    """`name`, `name:qualifier`, `acct:function:name` or a full ARN -> `name`."""
    if ":function:" in name_or_arn:
        return name_or_arn.split(":function:", 1)[1].split(":", 1)[0]
    return name_or_arn.split(":", 1)[0]


@contextmanager
def route_lambda(handlers: dict[str, LambdaHandler]) -> Iterator[list[Invocation]]:
    """Route moto Lambda invocations to `handlers` (keyed by function name or ARN).

    Yields the list of invocations made, in order (appended from moto's worker threads).
    """
    routes = {function_name_of(key): handler for key, handler in handlers.items()}
    calls: list[Invocation] = []
    lock = threading.Lock()

    def invoke(
        backend: LambdaSimpleBackend,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: dict[str, str],
    ) -> bytes:
        name = function_name_of(function_name)
        handler = routes.get(name)
        if handler is None:
            raise _InvokeFailed("ResourceNotFoundException", f"Function not found: {name}", 404)
        event = json.loads(body) if body else {}
        with lock:
            calls.append(Invocation(name, event))
        arn = f"arn:aws:lambda:{backend.region_name}:{backend.account_id}:function:{name}"
        try:
            result = handler(event, FakeLambdaContext(name, arn))
        except LambdaServiceError as exc:
            raise _InvokeFailed(exc.error_code, exc.message, exc.status) from exc
        except Exception as exc:
            response_headers["x-amz-function-error"] = "Unhandled"
            return _error_payload(type(exc).__name__, str(exc), exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the process died mid-invocation (SystemExit, a crash)
            response_headers["x-amz-function-error"] = "Unhandled"
            return _error_payload("Runtime.ExitError", "Runtime exited with error: exit status 1", exc)
        return json.dumps(result).encode()

    with mock.patch.object(LambdaSimpleBackend, "invoke", invoke):
        yield calls


def _error_payload(error_type: str, message: str, exc: BaseException) -> bytes:
    error = {
        "errorMessage": message,
        "errorType": error_type,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }
    return json.dumps(error).encode()


@contextmanager
def no_retry_waits() -> Iterator[list[float]]:
    """Make moto's ASL Retry record its waits (seconds, after backoff and jitter) instead of sleeping."""
    waits: list[float] = []
    with mock.patch.object(retrier_decl, "time", SimpleNamespace(sleep=waits.append)):
        yield waits
