"""scripts/aws_local.py: the API function in-process against a moto server (S3, DynamoDB), driven
over real HTTP with httpx, the official MCP client and the `cairn` command, as it starts from the
README (callers without credentials are the open owner, as under `sam local`)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import boto3
import httpx
import pytest
from botocore.config import Config
from mcp import Client

from tests.integration.aws.aws_local_run import AwsLocal, aws_local, moto_credentials, run_smoke, smoke_steps
from tests.unit.ingest.pdfs import make_pdf

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsLocal]:
    with aws_local(tmp_path_factory.mktemp("aws-local")) as running:
        yield running


def moto_client(running: AwsLocal, service: str, **kw: Any) -> Any:
    key, secret = moto_credentials().values()
    return boto3.client(
        service,
        endpoint_url=running.moto,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        **kw,
    )


async def test_rest_and_mcp_through_the_api_handler_on_moto(emulated: AwsLocal) -> None:
    async with httpx.AsyncClient(base_url=emulated.base, timeout=30) as http:
        created = await http.post("/v1/brains", json={"name": "Local"})
        assert created.status_code == 201
        put = await http.put(
            "/v1/brains/local/documents",
            params={"path": "memory/global/tea.md"},
            content=b"# Tea\n\nI like green tea in the morning.",
            headers={"content-type": "application/octet-stream"},
        )
        assert put.status_code == 204
        read = await http.get("/v1/brains/local/documents/read", params={"path": "memory/global/tea.md"})
        found = (await http.post("/v1/brains/local/search", json={"query": "green tea"})).json()
    assert read.content == b"# Tea\n\nI like green tea in the morning."
    assert found["hits"][0]["path"] == "memory/global/tea.md"
    async with Client(f"{emulated.base}/mcp") as client:
        listed = await client.call_tool("memory_list_brains", {})
    assert "local" in [b["slug"] for b in (listed.structured_content or {})["items"]]
    # The bytes and records really live in moto's S3 and DynamoDB.
    objects = moto_client(emulated, "s3").list_objects_v2(Bucket="cairn-local").get("Contents", [])
    items = moto_client(emulated, "dynamodb").scan(TableName="cairn-local", Select="COUNT")["Count"]
    assert objects and items > 2


async def test_bodies_that_are_not_utf8_reach_the_function_base64_encoded(emulated: AwsLocal) -> None:
    """As API Gateway does: binary bytes are stored as sent, a PDF is ingested, bad JSON is the
    function's own 400 (not the emulation's 500)."""
    binary = b"\x00\x9c\xff\xfe raw bytes \xe2\x28\xa1"
    pdf = make_pdf([["The heron nests by the weir."]], title="Heron")
    pdf = pdf.replace(b"%PDF-1.4\n", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", 1)  # a real PDF's binary marker
    async with httpx.AsyncClient(base_url=emulated.base, timeout=30) as http:
        assert (await http.post("/v1/brains", json={"name": "Bytes"})).status_code == 201
        put = await http.put(
            "/v1/brains/bytes/documents",
            params={"path": "raw/blob.bin"},
            content=binary,
            headers={"content-type": "application/octet-stream"},
        )
        read = await http.get("/v1/brains/bytes/documents/read", params={"path": "raw/blob.bin"})
        ingested = await http.post(
            "/v1/brains/bytes/documents/ingest/file",
            data={"path": "papers/heron.pdf"},
            files={"file": ("heron.pdf", pdf, "application/pdf")},
        )
        bad_json = await http.post(
            "/v1/brains", content=b"\xff{", headers={"content-type": "application/json"}
        )
    assert put.status_code == 204 and read.content == binary
    assert ingested.status_code == 200, ingested.text
    assert ingested.json()["path"] == "papers/heron.pdf" and ingested.json()["chunk_count"] >= 1
    assert bad_json.status_code == 400 and bad_json.json()["code"] == "validation_error"


async def test_concurrent_clients_get_no_errors(emulated: AwsLocal) -> None:
    """Lambda runs one invocation per environment, on the loop Mangum built: aws_local queues calls
    onto that one thread instead of failing the ones that land on another."""
    async with httpx.AsyncClient(base_url=emulated.base, timeout=30) as http:
        assert (await http.post("/v1/brains", json={"name": "Busy"})).status_code == 201

        async def healthz(i: int) -> int:
            return (await http.get("/healthz")).status_code

        async def rest(i: int) -> int:
            path = f"memory/global/n{i}.md"
            put = await http.put(
                "/v1/brains/busy/documents",
                params={"path": path},
                content=f"Note {i}: the kettle descales on Fridays.".encode(),
                headers={"content-type": "application/octet-stream"},
            )
            if put.status_code != 204:
                return put.status_code
            return (await http.post("/v1/brains/busy/search", json={"query": "kettle"})).status_code

        async def mcp(i: int) -> int:
            async with Client(f"{emulated.base}/mcp") as client:
                note = {"brain": "busy", "content": f"Runbook {i}: restart the queue."}
                result = await client.call_tool("memory_remember", note)
            return 500 if result.is_error else 200

        calls = [f(i) for i in range(16) for f in (healthz, rest, mcp)]
        with anyio.fail_after(30):  # a client stuck on a failed exchange fails the test, not CI
            outcomes = await asyncio.gather(*calls, return_exceptions=True)
        listed = await http.get("/v1/brains/busy/documents/stat", params={"path": "memory/global/n15.md"})
    failures = [o for o in outcomes if o != 200 and o != 204]
    assert len(outcomes) == 48 and failures == []
    assert listed.status_code == 200


def test_a_folder_ingest_through_the_cli_completes(emulated: AwsLocal, tmp_path: Path) -> None:
    """`cairn ingest DIR --server URL`, the run that hung against it before moto took one request
    at a time, finishes well inside its bound with every file ingested."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(30):
        (folder / f"note-{n:02}.md").write_text(
            f"# Note {n}\n\nThe heron of pond {n} nests in reed bed {n}.\n"
        )
    cmd = [sys.executable, "-m", "cairn.entrypoints.cli", "ingest", str(folder), "--server", emulated.base]
    started = time.monotonic()
    done = subprocess.run(
        [*cmd, "--brain", "herons", "--create"], capture_output=True, text=True, timeout=120
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr + emulated.log()
    assert "created 30, reused 0, failed 0" in done.stdout + done.stderr
    assert took < 60, f"the ingest took {took:.0f} s"
    found = httpx.post(f"{emulated.base}/v1/brains/herons/search", json={"query": "reed bed 17"}, timeout=30)
    assert found.json()["hits"][0]["path"].endswith("note-17.md")


def test_moto_takes_concurrent_writes_without_losing_any(emulated: AwsLocal) -> None:
    """moto's TransactWriteItems deep-copies the whole table, once per item, while a concurrent
    PutItem grows it: on moto's own threaded server some of these calls fail with a 500
    ("dictionary changed size during iteration"; measured here: every run of this workload). The
    emulation's moto takes one request at a time, so none does and every item is stored."""
    dynamodb = moto_client(emulated, "dynamodb")
    keys = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}]
    schema = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    dynamodb.create_table(
        TableName="race", BillingMode="PAY_PER_REQUEST", AttributeDefinitions=keys, KeySchema=schema
    )
    for batch in range(40):  # a table big enough that each transaction's copies take a while
        rows = [
            {"PutRequest": {"Item": {"pk": {"S": f"seed{batch}"}, "sk": {"S": str(n)}}}} for n in range(25)
        ]
        dynamodb.batch_write_item(RequestItems={"race": rows})
    errors: list[str] = []
    once = Config(retries={"total_max_attempts": 1, "mode": "standard"})  # a 500 is not retried away

    def writer(n: int) -> None:
        client = moto_client(emulated, "dynamodb", config=once)
        for i in range(20):
            try:
                if n % 2:
                    client.put_item(TableName="race", Item={"pk": {"S": f"put{n}"}, "sk": {"S": str(i)}})
                else:
                    puts = [{"pk": {"S": f"tx{n}"}, "sk": {"S": f"{i}.{j}"}} for j in range(3)]
                    ops = [{"Put": {"TableName": "race", "Item": item}} for item in puts]
                    client.transact_write_items(TransactItems=ops)
            except Exception as error:
                errors.append(f"{type(error).__name__}: {error}"[:200])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    count = dynamodb.scan(TableName="race", Select="COUNT")["Count"]
    assert errors == []
    assert count == 40 * 25 + 2 * 20 + 2 * 20 * 3


def test_a_refused_token_is_told_this_servers_own_http_metadata(emulated: AwsLocal) -> None:
    """API Gateway tells the function the scheme the client used (x-forwarded-proto); the
    emulation's is http, so its 401 names a metadata URL a client can reach."""
    headers = {"authorization": "Bearer not-a-token", "content-type": "application/json"}
    refused = httpx.post(f"{emulated.base}/mcp/gbrain", json={}, headers=headers, timeout=30)
    metadata = f"{emulated.base}/.well-known/oauth-protected-resource/mcp/gbrain"
    assert refused.status_code == 401
    assert f'resource_metadata="{metadata}"' in refused.headers["www-authenticate"]
    assert metadata.startswith("http://127.0.0.1:")
    assert httpx.get(metadata, timeout=30).json()["resource"] == f"{emulated.base}/mcp/gbrain"


def test_the_smoke_test_fails_on_an_open_server_naming_each_401_step(emulated: AwsLocal) -> None:
    """A deployed stack never lets a caller without credentials in; this one does (env.json's
    CAIRN_ALLOW_OPEN), and the smoke test says so step by step."""
    done = run_smoke(emulated.base)
    steps = smoke_steps(done.stdout)
    assert done.returncode == 1, done.stdout + done.stderr
    for path in ("/mcp", "/mcp/zengram", "/mcp/gbrain", "/mcp/mnemosyne", "/mcp/thoughtmcp"):
        status, detail = steps[f"401 + metadata {path}"]
        assert status == "FAILED" and "answered 200, not 401 (is it open?)" in detail, detail
    assert steps["healthz"][0] == "ok"
    assert steps["machine token"] == ("skipped", steps["machine token"][1])
    assert "no client credentials given" in steps["machine token"][1]
    summary = done.stdout.splitlines()[-1]
    assert summary.startswith("smoke: 1 passed,") and "failed: 401 + metadata /mcp;" in summary
