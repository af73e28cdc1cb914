"""Run the API function in-process against a moto server: the AWS deployment without AWS or Docker.

    .venv/bin/python scripts/aws_local.py [--port 8787] [--moto-port 0] [--env infra/local/env.json]

Starts moto's server on 127.0.0.1 (S3, DynamoDB), creates the bucket and the table exactly as
template.yaml declares them, then serves HTTP on 127.0.0.1:<port> by turning every request into
an API Gateway HTTP API (v2) event for `functions/api/app.py`'s handler — the same handler
Lambda runs, with the environment of infra/local/env.json (the file `sam local start-api
--env-vars` takes on machines with Docker): only what the Lambda layer can run. Embeddings go
through the Bedrock adapter to moto, whose Titan stand-in answers deterministic hashed
bag-of-words vectors (moto's own InvokeModel answers none); chunks and background jobs use the
embedded adapters (no OpenSearch or Step Functions emulator runs offline).

Lambda gives each execution environment one invocation at a time, and Mangum drives the app on
the event loop of the thread that built it: every handler call here runs on one dedicated
thread, in arrival order, while the HTTP server accepts any number of concurrent clients.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import importlib.util
import json
import logging
import math
import os
import re
import socket
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import uvicorn
from cfnlint.decode import decode_str
from moto.bedrockruntime.models import BedrockRuntimeBackend
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


def titan_stand_in(self: BedrockRuntimeBackend, payload: dict[str, Any], model_id: str) -> dict[str, Any]:
    """Titan Text Embeddings V2's reply shape: each word hashed to a signed dimension, L2-normalised,
    so texts sharing words land near each other (enough for the dense leg to rank sensibly)."""
    dimension = int(payload.get("dimensions", 1024))
    vector = [0.0] * dimension
    words = re.findall(r"\w+", str(payload.get("inputText", "")).lower())
    for word in words:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "big") % dimension
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    if not any(vector):
        vector[0], norm = 1.0, 1.0
    return {"embedding": [v / norm for v in vector], "inputTextTokenCount": len(words)}


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


def front(handler: Any, invoker: ThreadPoolExecutor) -> Starlette:
    """`invoker` must have exactly one thread: Mangum's event loop belongs to the thread that first
    called the handler, and Lambda never runs two invocations in one environment at once."""

    async def call(request: Request) -> Response:
        event = event_of(request, await request.body())
        result = await asyncio.wrap_future(invoker.submit(handler, event, LocalContext()))
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
    BedrockRuntimeBackend.invoke_model = titan_stand_in  # type: ignore[method-assign]
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
    moto.start()
    endpoint = f"http://127.0.0.1:{moto_port}"
    env = {k: str(v) for k, v in json.loads(args.env.read_text())["ApiFunction"].items()}
    env["CAIRN_AWS_ENDPOINT_URL"] = endpoint  # the file names Docker's host; here moto is local
    env["CAIRN_DATA_DIR"] = str(args.data_dir or tempfile.mkdtemp(prefix="cairn-aws-local-"))
    # Only S3 and DynamoDB run on moto: the other ports take their embedded adapters, by request
    # (a deployed function without its OpenSearch URL or state machines refuses to start).
    env["CAIRN_AWS_LOCAL_FALLBACKS"] = "true"
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(key, "testing")
    os.environ.update(env)
    create_resources(endpoint, env)
    print(f"moto on {endpoint}; API function on http://127.0.0.1:{args.port}", flush=True)
    invoker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lambda-invoke")
    try:
        uvicorn.run(front(load_handler(), invoker), host="127.0.0.1", port=args.port, log_level="warning")
    finally:
        invoker.shutdown(cancel_futures=True)
        moto.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
