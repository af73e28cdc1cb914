"""Real MCP clients against scripts/aws_local.py, at once: `mcp-proxy-for-aws` (stdio <-> SigV4, as
agents reach the stack's IAM API) driven by the official Python MCP client, and the MCP Inspector
CLI over HTTP. aws_local verifies each signature as API Gateway's IAM authorizer would, so a
forged one is refused with 403 before the function runs and changes nothing."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import boto3
import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult, TextContent

from cairn.entrypoints.mcp.canonical import SURFACE as CANONICAL
from tests.integration.aws.aws_local_run import aws_local as start_aws_local
from tests.integration.mcp.node_clients import run_node
from tests.integration.mcp.test_inspector_cli import INSPECTOR
from tests.support.loopback import loopback

ROOT = Path(__file__).resolve().parents[3]
PROXY = ROOT / ".venv-aws-proxy" / "bin" / "mcp-proxy-for-aws"
# aws_local's default local credential and the assumed-role session it stands for.
ACCESS_KEY, SECRET_KEY = "AKIACAIRNLOCAL000000", "cairn-local-secret"
REGION = "us-east-1"
# Two proxies interleave their calls as four did: the emulated function runs one invocation at a
# time, as one Lambda instance does.
CLIENTS_AT_ONCE = 2
pytestmark = pytest.mark.anyio


@dataclass
class AwsLocal:
    base: str
    moto: str
    data: Path  # the function's CAIRN_DATA_DIR
    pages: str  # a local web server memory_ingest_url may fetch

    def records(self) -> int:
        kw = {"endpoint_url": self.moto, "region_name": REGION}
        kw |= {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}  # moto's
        count: int = boto3.client("dynamodb", **kw).scan(TableName="cairn-local", Select="COUNT")["Count"]
        return count


class Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        n = self.path.strip("/").removesuffix(".html").removeprefix("page-")
        body = f"<html><head><title>Boiler {n}</title></head><body><h1>Boiler {n}</h1>"
        body += f"<p>The boiler in wing {n} is serviced every April by Hendricks.</p></body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def aws_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsLocal]:
    data = tmp_path_factory.mktemp("aws-local")
    # CAIRN_ALLOW_PRIVATE_URLS lets memory_ingest_url fetch this test's page on 127.0.0.1 (refused
    # on a deployed function).
    with loopback(Pages) as pages, start_aws_local(data, env={"CAIRN_ALLOW_PRIVATE_URLS": "true"}) as running:
        yield AwsLocal(running.base, running.moto, data, pages)


@pytest.fixture
def proxy() -> None:
    if not PROXY.exists():
        pytest.skip(
            f"mcp-proxy-for-aws is not installed at {PROXY.relative_to(ROOT)} (scripts/test creates it)"
        )


def proxy_params(base: str, secret: str = SECRET_KEY) -> StdioServerParameters:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    env |= {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": REGION}
    args = [f"{base}/mcp", "--service", "execute-api", "--region", REGION, "--disable-telemetry"]
    return StdioServerParameters(command=str(PROXY), args=args, env=env)


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def signed(server: AwsLocal, method: str, path: str, payload: Any = None) -> httpx.Response:
    """A REST call signed as the proxy signs: what an agent on the IAM API does beside MCP."""
    body = b"" if payload is None else json.dumps(payload).encode()
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.send(signed_request(method, f"{server.base}{path}", body))


async def upload(server: AwsLocal, brain: str, name: str, data: bytes) -> str:
    """What an agent does on AWS before memory_ingest_file: a presigned POST from the API, then
    the file straight to S3 (moto)."""
    ticket = await signed(server, "POST", f"/v1/brains/{brain}/documents/uploads", {"file_name": name})
    assert ticket.status_code == 200, ticket.text
    post = ticket.json()["upload"]
    async with httpx.AsyncClient(timeout=30) as http:
        sent = await http.post(post["url"], data=post["fields"], files={"file": (name, data)})
    assert sent.status_code == 204, sent.text
    key: str = ticket.json()["key"]
    return key


async def finished(server: AwsLocal, job: str) -> str:
    """The job's status once it is no longer queued or running."""
    with anyio.fail_after(120):
        while True:
            answer = await signed(server, "GET", f"/v1/jobs/{job}")
            assert answer.status_code == 200, answer.text
            if answer.json()["status"] not in ("queued", "running"):
                return str(answer.json()["status"])
            await anyio.sleep(0.2)


async def one_agent(server: AwsLocal, n: int) -> dict[str, Any]:
    """One `mcp-proxy-for-aws` process, driven over stdio: every canonical tool, with meaningful
    arguments, checking that what it wrote is found. Returns what the caller checks further."""
    runbook = f"# Runbook {n}\n\nRestart the ingest queue {n} with `cairn jobs retry` after a deploy.\n"
    (server.data / f"runbook-{n}.md").write_text(runbook)  # on the function's own disk
    called: set[str] = set()
    async with stdio_client(proxy_params(server.base)) as (read, write), ClientSession(read, write) as mcp:

        async def call(tool: str, arguments: dict[str, Any]) -> CallToolResult:
            called.add(tool)
            return await mcp.call_tool(tool, arguments)

        await mcp.initialize()
        listed = {tool.name for tool in (await mcp.list_tools()).tools}
        brain = ok(await call("memory_create_brain", {"name": f"Agent {n}"}))["slug"]
        assert brain == f"agent-{n}"
        kettle = {"brain": brain, "content": f"# Kettle {n}\n\nThe kettle in room {n} descales on Fridays."}
        note = ok(await call("memory_remember", {**kettle, "tags": ["facilities"]}))
        hits = ok(await call("memory_search", {"brain": brain, "query": "kettle descales"}))["hits"]
        recalled = ok(await call("memory_recall", {"brain": brain, "query": "when does the kettle descale"}))
        asked = ok(await call("memory_ask", {"brain": brain, "query": "When does the kettle descale?"}))
        key = await upload(server, brain, f"runbook-{n}.md", runbook.encode())
        ingested = ok(await call("memory_ingest_file", {"brain": brain, "path": key}))
        local = str(server.data / f"runbook-{n}.md")
        refused = await call("memory_ingest_file", {"brain": brain, "path": local})
        fetched = ok(
            await call("memory_ingest_url", {"brain": brain, "url": f"{server.pages}/page-{n}.html"})
        )
        opened = await signed(server, "POST", f"/v1/brains/{brain}/sessions", {"title": f"standup {n}"})
        assert opened.status_code == 201, opened.text
        session = opened.json()["id"]
        messages = [
            {"role": "user", "content": f"Remember that the printer on floor {n} needs toner every Monday."},
            {"role": "assistant", "content": "Noted: toner every Monday."},
        ]
        extracted = ok(
            await call("memory_extract", {"brain": brain, "messages": messages, "session_id": session})
        )
        transcript = ok(await call("memory_extract", {"brain": brain, "messages": messages}))
        in_session = ok(
            await call("memory_recall", {"brain": brain, "query": "kettle descales", "session_id": session})
        )
        reflected = ok(await call("memory_reflect", {"brain": brain, "session_id": session}))
        consolidating = ok(await call("memory_consolidate", {"brain": brain}))
        brains = ok(await call("memory_list_brains", {}))["items"]
        found_file = ok(await call("memory_search", {"brain": brain, "query": "restart the ingest queue"}))
        found_url = ok(await call("memory_search", {"brain": brain, "query": "boiler serviced April"}))

    assert listed == set(CANONICAL.scopes) == called
    assert hits[0]["path"] == note["path"] and f"room {n}" in hits[0]["content"]
    assert recalled["hits"][0]["path"] == note["path"]
    assert "Fridays" in asked["answer"] and asked["retrieved"][0]["document_id"] == note["id"]
    assert ingested["status"] == "completed" and ingested["chunk_count"] >= 1
    refusal = json.loads(" ".join(c.text for c in refused.content if isinstance(c, TextContent)))
    assert refused.is_error and refusal["code"] == "validation_error"
    assert "is not an upload key" in refusal["message"] and "/documents/uploads" in refusal["message"]
    assert fetched["result"]["status"] == "completed"
    assert extracted["mode"] == "session" and len(extracted["messages"]) == 2
    assert {m["session_id"] for m in extracted["messages"]} == {session}
    assert transcript["mode"] == "transcript" and transcript["document"]["path"]
    assert in_session["chunks"][0]["path"] == note["path"]
    assert reflected["reflection_attempted"] is True and reflected["ended_at"]
    assert consolidating["result"]["job_id"]
    assert brain in {b["slug"] for b in brains}
    assert found_file["hits"][0]["path"] == ingested["path"]
    assert found_url["hits"][0]["path"] == fetched["result"]["path"]
    return {"brain": brain, "note": note, "job": consolidating["result"]["job_id"]}


@pytest.mark.usefixtures("proxy")
async def test_concurrent_proxies_call_every_canonical_tool(aws_local: AwsLocal) -> None:
    outcomes: list[dict[str, Any]] = []

    async def agent(n: int) -> None:
        outcomes.append(await one_agent(aws_local, n))

    with anyio.fail_after(240):
        async with anyio.create_task_group() as group:
            for n in range(CLIENTS_AT_ONCE):
                group.start_soon(agent, n)

    assert sorted(o["brain"] for o in outcomes) == [f"agent-{n}" for n in range(CLIENTS_AT_ONCE)]
    # The consolidations queued run on: waited for, so the stack the module's other tests count
    # records on is quiet (each finished job wrote one more record under them).
    for outcome in outcomes:
        assert await finished(aws_local, outcome["job"]) == "completed", outcome
    # The brains are private to the role the signatures proved (every proxy signed as one role,
    # which the template's IAM settings put in the stage's tenant): an unauthenticated caller, the
    # open owner of tenant `local`, does not see them.
    async with httpx.AsyncClient(base_url=aws_local.base, timeout=30) as http:
        open_view = (await http.get("/v1/brains")).json()["items"]
        signed = await http.send(signed_request("GET", f"{aws_local.base}/v1/brains"))
    assert not any(b["slug"].startswith("agent-") for b in open_view)
    assert signed.status_code == 200
    assert {f"agent-{n}" for n in range(CLIENTS_AT_ONCE)} <= {b["slug"] for b in signed.json()["items"]}


def inspector(url: str, *args: str) -> dict[str, Any]:
    out = run_node([INSPECTOR, "--cli", url, "--transport", "http", *args])
    reply: dict[str, Any] = json.loads(out)
    return reply


def tool_call(url: str, tool: str, *pairs: str) -> dict[str, Any]:
    args = ["--method", "tools/call", "--tool-name", tool]
    return inspector(url, *args, *(["--tool-arg", *pairs] if pairs else []))


def test_inspector_cli_runs_at_once_over_http(aws_local: AwsLocal) -> None:
    url = f"{aws_local.base}/mcp"
    names = [f"inspected-{n}" for n in range(3)]
    with ThreadPoolExecutor(max_workers=5) as pool:
        listed = pool.submit(inspector, url, "--method", "tools/list")
        made = [
            pool.submit(tool_call, url, "memory_create_brain", f"name={name}", "visibility=tenant")
            for name in names
        ]
        created = [f.result() for f in made]
        remembered = [
            pool.submit(
                tool_call,
                url,
                "memory_remember",
                f"brain={name}",
                f"content=# Fern {n}\n\nWater fern {n} on Sundays.",
            )
            for n, name in enumerate(names)
        ]
        notes = [f.result() for f in remembered]
        searched = [
            pool.submit(tool_call, url, "memory_search", f"brain={name}", "query=water fern Sundays")
            for name in names
        ]
        brains = pool.submit(tool_call, url, "memory_list_brains")
        found = [f.result() for f in searched]

    assert {t["name"] for t in listed.result()["tools"]} == set(CANONICAL.scopes)
    for n, (made_one, note, hits) in enumerate(zip(created, notes, found, strict=True)):
        assert made_one["isError"] is False and made_one["structuredContent"]["slug"] == names[n]
        assert note["isError"] is False and hits["isError"] is False
        assert hits["structuredContent"]["hits"][0]["path"] == note["structuredContent"]["path"]
        assert f"fern {n}" in hits["structuredContent"]["hits"][0]["content"]
    assert brains.result()["isError"] is False
    assert set(names) <= {b["slug"] for b in brains.result()["structuredContent"]["items"]}


def leaves(error: BaseException) -> list[str]:
    if isinstance(error, BaseExceptionGroup):
        return [text for inner in error.exceptions for text in leaves(inner)]
    return [f"{type(error).__name__}: {error}"]


async def proxy_failure(base: str, secret: str) -> str:
    """What a proxy signing with `secret` gets when it initializes (it must fail)."""
    try:
        with anyio.fail_after(60):
            async with (
                stdio_client(proxy_params(base, secret)) as (read, write),
                ClientSession(read, write) as mcp,
            ):
                await mcp.initialize()
    except Exception as error:  # the client's task groups wrap the failure
        return " ".join(leaves(error))
    raise AssertionError("a proxy with the wrong secret initialized")


def signed_request(
    method: str,
    url: str,
    body: bytes = b"",
    *,
    secret: str = SECRET_KEY,
    key: str = ACCESS_KEY,
    when: datetime | None = None,
) -> httpx.Request:
    """A request signed as mcp-proxy-for-aws signs (botocore SigV4Auth, service execute-api)."""
    request = httpx.Request(method, url, content=body, headers={"content-type": "application/json"})
    headers = {k: v for k, v in request.headers.items() if k != "connection"}
    aws = AWSRequest(method=method, url=url, data=body, headers=headers)
    stamp = when or datetime.now(UTC)
    with mock.patch("botocore.auth.get_current_datetime", return_value=stamp.replace(tzinfo=None)):
        SigV4Auth(Credentials(key, secret), "execute-api", REGION).add_auth(aws)
    request.headers.update(dict(aws.headers))
    return request


async def test_a_bad_signature_is_refused_with_403_and_changes_nothing(aws_local: AwsLocal) -> None:
    url = f"{aws_local.base}/v1/brains"
    create = json.dumps({"name": "Forged"}).encode()
    tampered = signed_request("POST", url, json.dumps({"name": "Honest"}).encode())
    tampered = httpx.Request("POST", url, content=create, headers=tampered.headers)  # body swapped
    moved = signed_request("POST", url, create)
    moved.headers["host"] = "cairn.example.com"  # signed for 127.0.0.1:<port>
    stale = datetime.now(UTC) - timedelta(minutes=20)
    before = aws_local.records()
    async with httpx.AsyncClient(timeout=30) as http:
        refused = {
            "wrong secret": await http.send(signed_request("POST", url, create, secret="not-the-secret")),
            "body changed after signing": await http.send(tampered),
            "host changed after signing": await http.send(moved),
            "unknown access key": await http.send(
                signed_request("POST", url, create, key="AKIAUNKNOWN000000000")
            ),
            "stale date": await http.send(signed_request("POST", url, create, when=stale)),
        }
        after = aws_local.records()
        # The same request, signed right, is let in as the local role.
        made = await http.send(signed_request("POST", url, create))
        brains = await http.send(signed_request("GET", url))

    for why, answer in refused.items():
        assert answer.status_code == 403, why
        assert set(answer.json()) == {"message"}, why
    for why in ("wrong secret", "body changed after signing", "host changed after signing"):
        assert "signature we calculated does not match" in refused[why].json()["message"], why
    assert (
        "security token included in the request is invalid" in refused["unknown access key"].json()["message"]
    )
    assert refused["stale date"].json()["message"].startswith("Signature expired")
    assert after == before and aws_local.records() > before  # nothing written until the good one
    assert made.status_code == 201 and made.json()["slug"] == "forged"
    assert [b["slug"] for b in brains.json()["items"] if b["slug"] == "forged"] == ["forged"]


@pytest.mark.usefixtures("proxy")
async def test_a_proxy_signing_with_the_wrong_secret_is_refused(aws_local: AwsLocal) -> None:
    before = aws_local.records()
    failure = await proxy_failure(aws_local.base, secret="not-the-secret")
    assert "MCPError" in failure and "403 Forbidden" in failure
    assert aws_local.records() == before
