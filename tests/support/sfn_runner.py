"""A StepFunctionsJobRunner wired to moto: the real job.asl.json executed by moto, its Lambda tasks
routed in-process to `task_handler(runner)`, retry waits recorded instead of slept.

Usable as a factory for the JobRunner contract suite and by the AWS integration tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import boto3
import pytest
from moto import mock_aws

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner
from cairn.adapters.aws.sfn_tasks import task_handler
from cairn.ports.clock import Clock
from cairn.ports.records import RecordStore
from tests.fakes.records import MemoryRecordStore
from tests.support.moto_lambda import Invocation, no_retry_waits, route_lambda

MACHINES = Path(__file__).resolve().parents[2] / "infra" / "statemachines"
ASL = MACHINES / "job.asl.json"
REGION = "us-east-1"
TASK_FUNCTION = "cairn-job-task"
MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}


def job_definition(task_function_arn: str = TASK_FUNCTION, machine: str = "job") -> str:
    """<machine>.asl.json with its DefinitionSubstitutions applied, as CloudFormation would."""
    text = (MACHINES / f"{machine}.asl.json").read_text().replace("${TaskFunctionArn}", task_function_arn)
    json.loads(text)  # every placeholder must sit inside a JSON string
    return text


@dataclass
class MotoJobs:
    runner: StepFunctionsJobRunner
    sfn: Any
    records: RecordStore
    state_machine_arn: str
    invocations: list[Invocation]
    waits: list[float]


def dynamodb_records(table: str = "cairn-jobs") -> RecordStore:
    """A DynamoRecordStore on a fresh pk/sk table; call inside mock_aws."""
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return DynamoRecordStore(client, table)


@contextmanager
def moto_job_runner(
    clock: Clock,
    records: Literal["memory", "dynamodb"] = "memory",
    machines: tuple[str, ...] = ("job",),
    **runner_opts: Any,
) -> Iterator[MotoJobs]:
    """The runner on MemoryRecordStore, or on DynamoRecordStore in the same moto, with the named
    machines (`job`, and the `ingest` and `consolidate` kinds' own) all invoking one task function."""
    with mock_aws(config=MOTO_CONFIG):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arns = {
            machine: sfn.create_state_machine(
                name=f"cairn-{machine}",
                definition=job_definition(machine=machine),
                roleArn="arn:aws:iam::123456789012:role/cairn-job-machine",
            )["stateMachineArn"]
            for machine in machines
        }
        arn = arns["job"]
        store = dynamodb_records() if records == "dynamodb" else MemoryRecordStore()
        runner = StepFunctionsJobRunner(sfn, store, clock, arns, **runner_opts)
        with route_lambda({TASK_FUNCTION: task_handler(runner)}) as calls, no_retry_waits() as waits:
            yield MotoJobs(runner, sfn, store, arn, calls, waits)
            runner.run_pending()  # let nothing run on after moto's mock is gone


@contextmanager
def sfn_jobs_for_contract(request: pytest.FixtureRequest) -> Iterator[StepFunctionsJobRunner]:
    """Contract-suite factory: the runner over moto, on the suite's `clock` fixture."""
    clock: Clock = request.getfixturevalue("clock")
    with moto_job_runner(clock, run_timeout_s=20) as jobs:
        yield jobs.runner
