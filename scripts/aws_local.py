"""Run the API function in-process against a moto server: the AWS deployment without AWS or Docker.

    .venv/bin/python scripts/aws_local.py [--port 8787] [--moto-port 0] [--env infra/local/env.json]

Starts moto's server on 127.0.0.1 (S3, DynamoDB), creates the bucket and the table exactly as
template.yaml declares them, then serves HTTP on 127.0.0.1:<port> by turning every request into
an API Gateway HTTP API (v2) event for `functions/api/app.py`'s handler — the same handler
Lambda runs, with the environment of infra/local/env.json (the file `sam local start-api
--env-vars` takes on machines with Docker). Chunks, embeddings and background jobs use the
embedded adapters there (no OpenSearch, Bedrock or Step Functions emulator runs offline).
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import logging
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import boto3
import uvicorn
from cfnlint.decode import decode_str
from moto.server import ThreadedMotoServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def create_resources(endpoint: str, env: dict[str, str]) -> None:
    """The bucket and table of template.yaml, on the moto server."""
    resources = decode_str((ROOT / "template.yaml").read_text())[0]["Resources"]
    kw: dict[str, Any] = {"endpoint_url": endpoint, "region_name": env["CAIRN_AWS_REGION"]}
    boto3.client("s3", **kw).create_bucket(Bucket=env["CAIRN_BUCKET"])
    table = resources["RecordTable"]["Properties"]
    dynamodb = boto3.client("dynamodb", **kw)
    dynamodb.create_table(
        TableName=env["CAIRN_TABLE"],
        BillingMode=str(table["BillingMode"]),
        AttributeDefinitions=[dict(a) for a in table["AttributeDefinitions"]],
        KeySchema=[dict(k) for k in table["KeySchema"]],
    )
    ttl = table["TimeToLiveSpecification"]
    dynamodb.update_time_to_live(
        TableName=env["CAIRN_TABLE"],
        TimeToLiveSpecification={"AttributeName": str(ttl["AttributeName"]), "Enabled": True},
    )


def load_handler() -> Any:
    spec = importlib.util.spec_from_file_location("cairn_api_function", ROOT / "functions/api/app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def event_of(request: Request, body: bytes) -> dict[str, Any]:
    text = body.decode("utf-8") if body else None
    binary = bool(body) and not _is_text(request.headers.get("content-type", ""))
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": request.url.path,
        "rawQueryString": request.url.query,
        "headers": {k: v for k, v in request.headers.items()},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": request.headers.get("host", "localhost"),
            "http": {
                "method": request.method,
                "path": request.url.path,
                "protocol": "HTTP/1.1",
                "sourceIp": request.client.host if request.client else "127.0.0.1",
                "userAgent": request.headers.get("user-agent", ""),
            },
            "requestId": "local",
            "routeKey": "$default",
            "stage": "$default",
        },
        "body": base64.b64encode(body).decode() if binary else text,
        "isBase64Encoded": binary,
    }


class LocalContext:
    """What the handler reads from Lambda's context object."""

    function_name = "cairn-api-local"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-api-local"
    memory_limit_in_mb = 1024
    aws_request_id = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def _is_text(content_type: str) -> bool:
    return content_type.startswith(("text/", "application/json", "application/x-www-form-urlencoded"))


def front(handler: Any) -> Starlette:
    async def call(request: Request) -> Response:
        event = event_of(request, await request.body())
        # Mangum runs its own event loop: call it from a worker thread, as Lambda would.
        result = await anyio.to_thread.run_sync(handler, event, LocalContext())
        body = result.get("body") or ""
        raw = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
        headers = dict(result.get("headers") or {})
        headers.pop("content-length", None)
        return Response(raw, status_code=result["statusCode"], headers=headers)

    methods = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", call, methods=methods)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--moto-port", type=int, default=0)
    parser.add_argument("--env", type=Path, default=ROOT / "infra/local/env.json")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request access log
    moto_port = args.moto_port or free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
    moto.start()
    endpoint = f"http://127.0.0.1:{moto_port}"
    env = {k: str(v) for k, v in json.loads(args.env.read_text())["ApiFunction"].items()}
    env["CAIRN_AWS_ENDPOINT_URL"] = endpoint  # the file names Docker's host; here moto is local
    env["CAIRN_DATA_DIR"] = str(args.data_dir or tempfile.mkdtemp(prefix="cairn-aws-local-"))
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(key, "testing")
    os.environ.update(env)
    create_resources(endpoint, env)
    print(f"moto on {endpoint}; API function on http://127.0.0.1:{args.port}", flush=True)
    try:
        uvicorn.run(front(load_handler()), host="127.0.0.1", port=args.port, log_level="warning")
    finally:
        moto.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
