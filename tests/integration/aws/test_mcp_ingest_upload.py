"""memory_ingest_file on the AWS stack: the API function (API Gateway v2 events) presigns an upload,
the client posts the file to S3 (moto's server, over HTTP), and memory_ingest_file takes the upload's
key as its `path`. Above the queueing threshold the ingest state machine (moto's Step Functions,
each task routed to the real job task handler) finishes it. Local files mean nothing on a Lambda:
anything but one of this brain's uploads is refused, leaving the brain and the bucket unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.bootstrap import Container, build_container
from cairn.bootstrap.functions import job_tasks
from cairn.config import Settings
from cairn.domain.models import JobStatus
from cairn.entrypoints.aws_lambda import Handler, api_handler, jobs_handler
from cairn.services.ingest.inputs import LocalFilePolicy
from tests.contract.aws_storage import fake_credentials
from tests.events.apigw import LambdaContext, body_of, http_event, json_of
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.integration.aws.moto_http import UPLOAD_BUCKET, post_upload, s3_over_http
from tests.support.moto_lambda import Invocation, route_lambda
from tests.support.sfn_runner import TASK_FUNCTION, moto_job_runner

MiB = 1024 * 1024
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


@dataclass
class Stack:
    core: Container
    api: Handler
    store: S3BlobStore
    calls: list[Invocation]
    brain_id: str


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    fake_credentials(monkeypatch)
    clock = FakeClock()
    machines = ("job", "ingest", "consolidate")
    with (
        moto_job_runner(clock, records="dynamodb", machines=machines, run_timeout_s=120) as mj,
        s3_over_http(monkeypatch) as store,
    ):
        adapters = replace(
            fake_adapters(clock=clock), records=mj.records, jobs=mj.runner, blobs=store, uploads=store
        )
        settings = Settings(
            data_dir=tmp_path / "data",
            backend="aws",
            table="cairn-jobs",  # the step tasks' idempotency records
            ingest_queue_bytes=6 * MiB,
            max_content_chars=8_000_000,
            chunk_target_chars=100_000,  # a 7 MiB file in one Map batch: the test stays quick
            ingest_batch_chunks=200,
        )
        core = build_container(settings, adapters)
        with route_lambda({TASK_FUNCTION: jobs_handler(lambda: job_tasks(core, settings))}) as calls:
            api = api_handler(lambda: core)
            made = api(
                http_event("POST", "/v1/brains", body={"name": "Notes", "slug": "notes"}), LambdaContext()
            )
            assert made["statusCode"] == 201, body_of(made)
            yield Stack(core, api, store, calls, json_of(made)["id"])


def upload(stack: Stack, name: str, data: bytes) -> str:
    """POST …/uploads through the API function, then the file straight to S3."""
    event = http_event(
        "POST", "/v1/brains/notes/documents/uploads", body={"file_name": name, "size": len(data)}
    )
    ticket = stack.api(event, LambdaContext())
    assert ticket["statusCode"] == 200, body_of(ticket)
    body = json_of(ticket)
    sent = post_upload(body["upload"]["url"], body["upload"]["fields"], data, name)
    assert sent.status_code == 204, sent.text
    key: str = body["key"]
    return key


def call_tool(stack: Stack, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    rpc = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    response = stack.api(
        http_event("POST", "/mcp", body=json.dumps(rpc), headers=MCP_HEADERS), LambdaContext()
    )
    assert response["statusCode"] == 200, body_of(response)
    result: dict[str, Any] = json.loads(body_of(response))["result"]
    return result


def ingest(stack: Stack, path: str) -> dict[str, Any]:
    result = call_tool(stack, "memory_ingest_file", {"path": path, "brain": "notes"})
    assert not result.get("isError"), result["content"][0]["text"]
    payload: dict[str, Any] = result["structuredContent"]
    return payload


def refusal(stack: Stack, path: str) -> dict[str, str]:
    result = call_tool(stack, "memory_ingest_file", {"path": path, "brain": "notes"})
    assert result.get("isError"), result
    error: dict[str, str] = json.loads(result["content"][0]["text"])
    return error


def big_markdown(size: int, phrase: str) -> bytes:
    paragraph = b"Cairn keeps notes for agents; this paragraph pads the upload past the limit.\n\n"
    return b"# Field report\n\n" + paragraph * (size // len(paragraph)) + f"\n{phrase}\n".encode()


def hits(stack: Stack, query: str) -> list[str]:
    """Paths of the hits holding every word of `query` (the fake embedder's vector leg returns
    every chunk, related or not)."""
    found = call_tool(stack, "memory_search", {"query": query, "brain": "notes"})["structuredContent"]["hits"]
    words = query.split()
    return [h["path"] for h in found if all(w in h["content"] for w in words)]


def test_a_7_mb_upload_is_ingested_by_key_through_the_ingest_state_machine(stack: Stack) -> None:
    data = big_markdown(7 * MiB, "quokka zeppelin harmonica")
    assert len(data) > 6 * MiB  # past what one API Gateway request to Lambda may carry
    key = upload(stack, "report.md", data)
    assert key.startswith(f"uploads/{stack.brain_id}/upl_")

    queued = ingest(stack, key)
    assert queued["status"] == "queued" and queued["job_id"]
    assert queued["path"] == "ingest/report.md"
    assert stack.store.size(key) is None  # spent: the job reads a copy of its own
    prefix = key.rsplit("/", 2)[0] + "/"
    assert stack.store.client.list_objects_v2(Bucket=UPLOAD_BUCKET, Prefix=prefix)["KeyCount"] == 1
    assert hits(stack, "quokka zeppelin harmonica") == []

    stack.core.jobs.run_pending()
    job = stack.core.jobs.status(queued["job_id"])
    assert job.status is JobStatus.completed, job.error
    steps = [str(c.event.get("step") or c.event["action"]) for c in stack.calls]
    assert steps[:4] == ["begin", "validate", "extract", "chunk"] and steps[-1] == "finalize"
    assert hits(stack, "quokka zeppelin harmonica") == ["ingest/report.md"]
    doc = stack.core.documents.get(stack.core.brains.resolve("notes"), "ingest/report.md")
    assert doc.id == queued["document_id"] and doc.byte_size == len(data)
    left = stack.store.client.list_objects_v2(Bucket=UPLOAD_BUCKET, Prefix=prefix)
    assert left["KeyCount"] == 0  # the job's copy too is dropped once ingested


def test_the_s3_url_of_an_upload_is_taken_too(stack: Stack) -> None:
    key = upload(stack, "note.md", b"# Note\n\nThe heron nests by the weir.\n")
    done = ingest(stack, f"s3://{UPLOAD_BUCKET}/{key}")
    assert done["status"] == "completed" and done["path"] == "ingest/note.md"
    assert hits(stack, "heron nests") == ["ingest/note.md"]
    assert stack.store.size(key) is None


def test_anything_but_one_of_this_brains_uploads_is_refused_and_changes_nothing(
    stack: Stack, tmp_path: Path
) -> None:
    mine = f"uploads/{stack.brain_id}"
    too_big = f"{mine}/upl_big/big.md"
    stack.store.put(too_big, b"x" * (25 * MiB + 1))
    kept = upload(stack, "kept.md", b"# Kept\n\nNot ingested by any refused call.\n")
    local = tmp_path / "report.md"
    local.write_text("# On the function's own disk\n")
    objects = stack.store.client.list_objects_v2(Bucket=UPLOAD_BUCKET)["KeyCount"]

    refused = [
        (str(local), "validation_error", "not an upload key"),  # a path on the Lambda's disk
        ("ingest/report.md", "validation_error", "not an upload key"),
        (f"s3://other-bucket/{kept}", "validation_error", "not an object of this server's upload bucket"),
        (f"s3://{UPLOAD_BUCKET}/ingest/report.md", "validation_error", "not an upload key"),
        (f"{mine}/upl_none/missing.md", "not_found", "no upload"),
        (f"{mine}/staging/job_1/content", "not_found", "no upload"),  # not a presigned key
        (too_big, "file_too_large", "25 MiB"),
    ]
    for path, code, message in refused:
        error = refusal(stack, path)
        assert error["code"] == code and message in error["message"], (path, error)

    brain = stack.core.brains.resolve("notes")
    assert list(stack.core.documents.documents(brain, "")) == []
    assert stack.core.jobs.run_pending() == 0
    assert stack.store.client.list_objects_v2(Bucket=UPLOAD_BUCKET)["KeyCount"] == objects
    assert stack.store.size(too_big) == 25 * MiB + 1


def test_without_an_ingest_root_a_local_path_is_read_even_with_s3_uploads(
    stack: Stack, tmp_path: Path
) -> None:
    """stdio and the CLI run as the caller: their local files are real, whatever the backend."""
    own = tmp_path / "own.md"
    own.write_text("# Own\n\nThe kettle descales monthly.\n")
    brain = stack.core.brains.resolve("notes")
    policy = LocalFilePolicy(root=None, max_bytes=25 * MiB)
    result = stack.core.ingest.ingest_file(brain, str(own), policy, uploads=stack.store)
    assert result.status == "completed" and result.path == "ingest/own.md"
