"""Cairn's AWS stack for the integration tests of a surface: API Gateway HTTP API v2 events into the
API function, records on DynamoDB and blobs on S3 (moto), chunks on OpenSearchChunkIndex over the
fake cluster, and jobs on Step Functions (moto) with each task routed to the real job task handler.
Callers authenticate with a Cairn API key (`x-api-key`, or a bearer token over MCP); the events
carry no authorizer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import boto3
import pytest

from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex
from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.bootstrap import Container, build_container
from cairn.bootstrap.aws import JOB_MACHINES
from cairn.bootstrap.functions import job_tasks
from cairn.config import Settings
from cairn.domain.models import Brain
from cairn.entrypoints.aws_lambda import Handler, api_handler, jobs_handler
from tests.contract.aws_storage import BUCKET, REGION, S3_CONFIG, create_bucket, fake_credentials
from tests.events.apigw import LambdaContext, body_of, http_event
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.support.moto_lambda import Invocation, route_lambda
from tests.support.sfn_runner import TASK_FUNCTION, MotoJobs, moto_job_runner
from tests.unit.aws.test_opensearch_fake import FakeCluster, fake_client

DIM = 64
TABLE = "cairn-jobs"  # moto_job_runner's table: records and the step tasks' idempotency items
SCOPES = ["documents:read", "documents:write", "brains:admin"]
CTX = LambdaContext()
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@dataclass
class Stack:
    core: Container
    api: Handler
    jobs: MotoJobs
    blobs: S3BlobStore
    calls: list[Invocation]  # the job task function's invocations
    key: str  # a Cairn API key
    settings: Settings

    def steps(self) -> list[str]:
        return [str(c.event.get("step") or c.event["action"]) for c in self.calls]

    def items(self) -> int:
        """Every item of the DynamoDB table."""
        client = self.jobs.records.client  # type: ignore[attr-defined]
        return sum(
            page["Count"] for page in client.get_paginator("scan").paginate(TableName=TABLE, Select="COUNT")
        )

    def objects(self) -> int:
        return int(self.blobs.client.list_objects_v2(Bucket=BUCKET)["KeyCount"])

    def brain(self) -> Brain:
        (brain,) = self.core.brains.list()
        return brain

    def process(self) -> Container:
        """Another container over the same DynamoDB table, bucket and index, as a second Lambda
        instance would be: its own services and path locks."""
        return build_container(self.settings, self.core.adapters)


@contextmanager
def aws_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key_name: str) -> Iterator[Stack]:
    fake_credentials(monkeypatch)
    clock = FakeClock()
    with moto_job_runner(clock, records="dynamodb", machines=JOB_MACHINES, run_timeout_s=60) as mj:
        s3 = boto3.client("s3", region_name=REGION, config=S3_CONFIG)
        create_bucket(s3, BUCKET)
        blobs = S3BlobStore(s3, BUCKET, prefix="blobs")
        chunks = OpenSearchChunkIndex(fake_client(FakeCluster()), DIM)  # production's fusion and refresh
        adapters = replace(
            fake_adapters(DIM, clock=clock), records=mj.records, blobs=blobs, chunks=chunks, jobs=mj.runner
        )
        settings = Settings(data_dir=tmp_path / "data", backend="aws", table=TABLE)
        core = build_container(settings, adapters)
        key = core.keys.create(name=key_name, tenant="acme", scopes=SCOPES).plaintext
        with route_lambda({TASK_FUNCTION: jobs_handler(lambda: job_tasks(core, settings))}) as calls:
            yield Stack(core, api_handler(lambda: core), mj, blobs, calls, key, settings)


def mcp_client(stack: Stack, path: str) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """What an MCP client sends over streamable HTTP, every message one POST through the API
    function: initialize and notifications/initialized now, then `call(tool, arguments)` for each
    tools/call, answering the JSON-RPC response (its `result` or its `error`)."""
    ids = iter(range(1, 1_000_000))

    def post(message: dict[str, Any]) -> dict[str, Any]:
        headers = {**MCP_HEADERS, "authorization": f"Bearer {stack.key}"}
        if message["method"] != "initialize":
            headers["mcp-protocol-version"] = "2025-06-18"
        return stack.api(
            http_event("POST", path, body=json.dumps(message), headers=headers, anonymous=True), CTX
        )

    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    answer = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    assert answer["statusCode"] == 200, body_of(answer)
    assert post({"jsonrpc": "2.0", "method": "notifications/initialized"})["statusCode"] == 202

    def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}
        answer = post({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params})
        assert answer["statusCode"] == 200, body_of(answer)
        response: dict[str, Any] = json.loads(body_of(answer))
        return response

    return call


def mcp_session(stack: Stack, path: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """One session making each call in turn; the calls' results (none may fail)."""
    call = mcp_client(stack, path)
    results = []
    for tool, arguments in calls:
        response = call(tool, arguments)
        assert "result" in response, response
        result = response["result"]
        assert not result.get("isError"), result
        results.append(result)
    return results


def text_of(result: dict[str, Any]) -> Any:
    return json.loads(result["content"][0]["text"])
