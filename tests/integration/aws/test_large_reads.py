"""Reads past Lambda's 6 MB response limit: on the AWS stack a document larger than
`read_redirect_bytes` (4 MiB) is read through a presigned S3 GET, which `GET …/documents/read`
answers with a 307 to. The whole way here: a 10 MB file uploaded with a presigned POST (moto's S3
server, over HTTP), ingested by key through the ingest state machine (moto's Step Functions, each
task routed to the real task handler), and read back through the API function (API Gateway v2
events) and the redirect. Smaller documents keep coming back in the response itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from cairn.bootstrap import build_container
from cairn.bootstrap.functions import job_tasks
from cairn.config import Settings
from cairn.domain.models import JobStatus
from cairn.entrypoints.aws_lambda import api_handler, jobs_handler
from tests.contract.aws_storage import fake_credentials
from tests.events.apigw import LambdaContext, body_of, http_event, json_of
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.integration.aws.moto_http import s3_over_http
from tests.integration.aws.test_mcp_ingest_upload import Stack, big_markdown, upload
from tests.support.moto_lambda import route_lambda
from tests.support.sfn_runner import TASK_FUNCTION, moto_job_runner

MiB = 1024 * 1024
KiB = 1024
READ = "/v1/brains/notes/documents/read"
CTX = LambdaContext()


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """The API function and the job task function on one core: S3 (blobs, uploads, downloads) on
    moto's server, records on moto's DynamoDB, jobs on moto's Step Functions; the thresholds the
    template deploys (queue above 64 KiB, redirect reads above 4 MiB)."""
    fake_credentials(monkeypatch)
    clock = FakeClock()
    with (
        moto_job_runner(
            clock, records="dynamodb", machines=("job", "ingest", "consolidate"), run_timeout_s=120
        ) as mj,
        s3_over_http(monkeypatch) as store,
    ):
        adapters = replace(
            fake_adapters(clock=clock),
            records=mj.records,
            jobs=mj.runner,
            blobs=store,
            uploads=store,
            downloads=store,
        )
        settings = Settings(
            data_dir=tmp_path / "data",
            backend="aws",
            table="cairn-jobs",  # the step tasks' idempotency records
            ingest_queue_bytes=64 * KiB,
            max_content_chars=12_000_000,  # a 10 MB markdown file is 10 million characters
            chunk_target_chars=100_000,  # ~100 chunks in one Map batch: the test stays quick
            ingest_batch_chunks=200,
        )
        core = build_container(settings, adapters)
        with route_lambda({TASK_FUNCTION: jobs_handler(lambda: job_tasks(core, settings))}) as calls:
            api = api_handler(lambda: core)
            made = api(http_event("POST", "/v1/brains", body={"name": "Notes", "slug": "notes"}), CTX)
            assert made["statusCode"] == 201, body_of(made)
            yield Stack(core, api, store, calls, json_of(made)["id"])


def read(stack: Stack, path: str, **event: Any) -> dict[str, Any]:
    return stack.api(http_event("GET", READ, query={"path": path}, **event), CTX)


def test_a_10_mb_document_is_uploaded_ingested_and_read_back_through_a_presigned_download(
    stack: Stack,
) -> None:
    data = big_markdown(10 * MiB + 100, "quokka zeppelin harmonica")
    assert len(data) >= 10 * MiB
    key = upload(stack, "report.md", data)
    ingest = http_event("POST", "/v1/brains/notes/documents/ingest/upload", body={"key": key})
    queued = stack.api(ingest, CTX)
    assert queued["statusCode"] == 202, body_of(queued)
    stack.core.jobs.run_pending()
    job = stack.core.jobs.status(json_of(queued)["job_id"])
    assert job.status is JobStatus.completed, job.error

    answer = read(stack, "ingest/report.md")

    # A redirect, not the bytes: the Lambda response stays a few hundred bytes.
    assert answer["statusCode"] == 307, body_of(answer)[:200]
    headers = answer["headers"]
    assert headers["cache-control"] == "no-store"
    assert len(json.dumps(answer)) < 8 * KiB
    location = headers["location"]
    signed = parse_qs(urlsplit(location).query)
    assert signed["X-Amz-Expires"] == ["300"] and "X-Amz-Signature" in signed
    # What a client following the redirect gets: the document's bytes, as the protocol types them.
    fetched = httpx.get(location, timeout=60)
    assert fetched.status_code == 200
    assert fetched.headers["content-type"] == "application/octet-stream"
    assert fetched.headers["cache-control"] == "no-store"
    assert fetched.content == data


def test_a_document_up_to_the_threshold_comes_back_in_the_response(stack: Stack) -> None:
    brain = stack.core.brains.resolve("notes")
    small = b"# Note\n\nThe heron nests by the weir.\n"
    stack.core.documents.write(brain, "notes/heron.md", small)

    answer = read(stack, "notes/heron.md")

    assert answer["statusCode"] == 200
    assert body_of(answer) == small
    assert answer["headers"]["content-type"] == "application/octet-stream"


def test_only_a_caller_who_may_read_the_document_gets_a_link(stack: Stack) -> None:
    brain = stack.core.brains.resolve("notes")
    stack.core.documents.write(brain, "big.md", b"x" * (4 * MiB + 1))
    stranger = {"sub": "eve", "tenant": "other", "scope": "documents:read"}

    refused = read(stack, "big.md", claims=stranger)
    missing = read(stack, "absent.md")

    assert refused["statusCode"] == 404 and "location" not in refused["headers"]  # as if no brain
    assert missing["statusCode"] == 404 and "location" not in missing["headers"]
    assert read(stack, "big.md")["statusCode"] == 307
