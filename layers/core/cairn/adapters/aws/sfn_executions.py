"""The two Step Functions calls the JobRunner makes, with errors mapped for the core."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from cairn.domain.errors import CairnError

log = logging.getLogger("cairn.jobs.sfn")

MISSING = "MISSING"
"""describe()'s status for an execution Step Functions does not know."""
UNKNOWN = "UNKNOWN"
"""describe()'s status when Step Functions could not be asked (logged)."""


class SfnClient(Protocol):
    """What the runner needs of a boto3 `stepfunctions` client."""

    def start_execution(self, **kwargs: Any) -> dict[str, Any]: ...

    def describe_execution(self, **kwargs: Any) -> dict[str, Any]: ...


class JobNotStarted(CairnError):
    code = "job_not_started"


class Executions:
    def __init__(self, client: SfnClient) -> None:
        self._client = client

    def start(self, state_machine_arn: str, name: str, execution_input: str) -> None:
        """Start the execution; one already started under `name` counts as started."""
        try:
            self._client.start_execution(stateMachineArn=state_machine_arn, name=name, input=execution_input)
        except ClientError as exc:
            code = _code(exc)
            if code != "ExecutionAlreadyExists":
                log.warning("StartExecution %s failed: %s", name, code)
                raise JobNotStarted(f"could not start the job: Step Functions answered {code}") from None
        except BotoCoreError as exc:
            log.warning("StartExecution %s failed: %s", name, type(exc).__name__)
            raise JobNotStarted(f"could not start the job: {type(exc).__name__}") from None

    def describe(self, execution_arn: str) -> dict[str, Any]:
        """DescribeExecution's answer; status MISSING or UNKNOWN when there is none."""
        try:
            return self._client.describe_execution(executionArn=execution_arn)
        except ClientError as exc:
            if _code(exc) == "ExecutionDoesNotExist":
                return {"status": MISSING}
            log.warning("DescribeExecution failed: %s", _code(exc))
        except BotoCoreError as exc:
            log.warning("DescribeExecution failed: %s", type(exc).__name__)
        return {"status": UNKNOWN}


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))
