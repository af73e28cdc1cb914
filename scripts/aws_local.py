"""Run the API function in-process against a moto server: the AWS deployment without AWS or Docker.

    .venv/bin/python scripts/aws_local.py [--port 8787] [--moto-port 0] [--env infra/local/env.json]
        [--data-dir DIR] [--iam-access-key ... --iam-session ...: the SigV4 caller, below]

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

SigV4 callers, as the stack's IAM API lets them in: a request whose Authorization header is
`AWS4-HMAC-SHA256 ...` has its signature recomputed (botocore's SigV4Auth over the method, the raw
path and query, every signed header exactly as sent, host included, and the SHA-256 of the body
as received; service `execute-api`, the region of the credential scope, X-Amz-Date within 5
minutes) with the one local credential below. A bad or stale signature, another access key or
an unexpected security token is refused with 403 `{"message": ...}` before the handler runs, as
API Gateway's IAM authorizer does; a good one reaches the handler with
`requestContext.authorizer.iam` naming the assumed-role session
`arn:aws:sts::<account>:assumed-role/<role>/<session>`. infra/local/env.json maps the default
account to tenant `local` with every scope, like the template's IamScopes default. Bearer and
unauthenticated requests are passed on unchanged (env.json allows open callers). Defaults:

    --iam-access-key AKIACAIRNLOCAL000000   --iam-secret-key cairn-local-secret
    --iam-session-token (none: a request must carry no X-Amz-Security-Token)
    --iam-account 123456789012   --iam-role cairn-local-agents   --iam-session aws-local

mcp-proxy-for-aws (stdio <-> SigV4; it needs `mcp` 1.x, so scripts/test installs it into
.venv-aws-proxy) connects an MCP client to the canonical surface with those credentials:

    AWS_ACCESS_KEY_ID=AKIACAIRNLOCAL000000 AWS_SECRET_ACCESS_KEY=cairn-local-secret \
      .venv-aws-proxy/bin/mcp-proxy-for-aws http://127.0.0.1:8787/mcp \
      --service execute-api --region us-east-1
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import importlib.util
import json
import logging
import math
import os
import re
import socket
import sys
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import uvicorn
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
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


SIGV4 = "AWS4-HMAC-SHA256"
SERVICE = "execute-api"
MAX_SKEW = timedelta(minutes=5)  # API Gateway's window for X-Amz-Date
MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS "
    "Secret Access Key and signing method. Consult the service documentation for details."
)
BAD_TOKEN = "The security token included in the request is invalid."


class Refused(Exception):
    """API Gateway's 403 for a SigV4 request it does not accept; the message is its body's."""


@dataclass(frozen=True)
class LocalIam:
    """The one IAM credential aws_local accepts, and the assumed-role session it stands for."""

    access_key: str = "AKIACAIRNLOCAL000000"
    secret_key: str = "cairn-local-secret"
    session_token: str | None = None
    account: str = "123456789012"
    role: str = "cairn-local-agents"
    session: str = "aws-local"

    def identity(self) -> dict[str, Any]:
        """`requestContext.authorizer.iam` as API Gateway fills it for an assumed-role caller."""
        role_id = "AROA" + hashlib.sha256(self.role.encode()).hexdigest()[:17].upper()
        return {
            "accessKey": self.access_key,
            "accountId": self.account,
            "callerId": f"{role_id}:{self.session}",
            "cognitoIdentity": None,
            "principalOrgId": None,
            "userArn": f"arn:aws:sts::{self.account}:assumed-role/{self.role}/{self.session}",
            "userId": f"{role_id}:{self.session}",
        }

    def verify(
        self,
        method: str,
        target: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """The caller's identity if `Authorization` holds a valid signature of this request, else
        Refused. `target` is the path and query exactly as sent; `headers` are the raw pairs."""
        pairs = [(name.lower(), value) for name, value in headers]
        fields = _auth_fields(next((v for n, v in pairs if n == "authorization"), ""))
        key, date, region, service, terminal = (fields["Credential"].split("/") + [""] * 5)[:5]
        signed = fields["SignedHeaders"].split(";")
        if terminal != "aws4_request" or not region:
            raise Refused("Credential should be scoped to a valid region.")
        if service != SERVICE:
            raise Refused(f"Credential should be scoped to correct service: '{SERVICE}'.")
        if "host" not in signed:
            raise Refused("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
        if not hmac.compare_digest(key.encode(), self.access_key.encode()):
            raise Refused(BAD_TOKEN)
        token = next((v for n, v in pairs if n == "x-amz-security-token"), None)
        if not hmac.compare_digest((token or "").encode(), (self.session_token or "").encode()):
            raise Refused(BAD_TOKEN)
        stamp = next((v for n, v in pairs if n == "x-amz-date"), "")
        try:
            when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise Refused(
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
            ) from None
        now = now or datetime.now(UTC)
        if abs(now - when) > MAX_SKEW:
            raise Refused(f"Signature expired: {stamp} is now earlier than the allowed 5 minute window.")
        if date != stamp[:8]:
            raise Refused(
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP."
            )

        host = next((v for n, v in pairs if n == "host"), "")
        aws = AWSRequest(method=method, url=f"http://{host}{target}", data=body)
        for name, value in pairs:
            if name in signed:
                aws.headers[name] = value  # appends: a repeated header keeps all its values
        aws.context["timestamp"] = stamp
        signer = SigV4Auth(Credentials(self.access_key, self.secret_key, self.session_token), service, region)
        canonical = signer.canonical_request(aws)
        listed = canonical.split("\n")[-2]
        body_hash = canonical.rsplit("\n", 1)[-1]
        # botocore leaves a few headers (user-agent, expect) out of any signature and trusts a
        # stated X-Amz-Content-SHA256: neither may differ from what the client signed and sent.
        if listed != fields["SignedHeaders"] or body_hash != hashlib.sha256(body).hexdigest():
            raise Refused(MISMATCH)
        expected = signer.signature(signer.string_to_sign(aws, canonical), aws)
        if not hmac.compare_digest(expected.encode(), fields["Signature"].encode()):
            raise Refused(MISMATCH)
        return self.identity()


def _auth_fields(authorization: str) -> dict[str, str]:
    scheme, _, rest = authorization.strip().partition(" ")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    for name in ("Credential", "SignedHeaders", "Signature"):
        if scheme != SIGV4 or not fields.get(name):
            raise Refused(f"Authorization header requires '{name}' parameter.")
    return fields


def event_of(request: Request, body: bytes, iam: dict[str, Any] | None = None) -> dict[str, Any]:
    text = body.decode("utf-8") if body else None
    binary = bool(body) and not _is_text(request.headers.get("content-type", ""))
    event: dict[str, Any] = {
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
    if iam is not None:
        event["requestContext"]["authorizer"] = {"iam": iam}
    return event


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


def sigv4_identity(request: Request, body: bytes, iam: LocalIam) -> dict[str, Any] | None:
    """The IAM identity of a SigV4-signed request (Refused if its signature is bad), None for any
    other request. What is verified is what came over the wire: raw path, query and headers."""
    if not request.headers.get("authorization", "").startswith(SIGV4):
        return None
    scope = request.scope
    sent = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
    target = scope["raw_path"].decode("latin-1")
    if scope["query_string"]:
        target += "?" + scope["query_string"].decode("latin-1")
    return iam.verify(request.method, target, sent, body)


def front(handler: Any, invoker: ThreadPoolExecutor, iam: LocalIam | None = None) -> Starlette:
    """`invoker` must have exactly one thread: Mangum's event loop belongs to the thread that first
    called the handler, and Lambda never runs two invocations in one environment at once."""
    local_iam = iam or LocalIam()

    async def call(request: Request) -> Response:
        body = await request.body()
        try:
            identity = sigv4_identity(request, body, local_iam)
        except Refused as refused:  # API Gateway answers before the function runs
            return Response(json.dumps({"message": str(refused)}), 403, media_type="application/json")
        event = event_of(request, body, identity)
        result = await asyncio.wrap_future(invoker.submit(handler, event, LocalContext()))
        answer = result.get("body") or ""
        raw = base64.b64decode(answer) if result.get("isBase64Encoded") else answer.encode()
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
    default = LocalIam()
    parser.add_argument("--iam-access-key", default=default.access_key)
    parser.add_argument("--iam-secret-key", default=default.secret_key)
    parser.add_argument("--iam-session-token", default=None)
    parser.add_argument("--iam-account", default=default.account)
    parser.add_argument("--iam-role", default=default.role)
    parser.add_argument("--iam-session", default=default.session)
    args = parser.parse_args()
    iam = LocalIam(
        args.iam_access_key,
        args.iam_secret_key,
        args.iam_session_token,
        args.iam_account,
        args.iam_role,
        args.iam_session,
    )

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
        uvicorn.run(
            front(load_handler(), invoker, iam), host="127.0.0.1", port=args.port, log_level="warning"
        )
    finally:
        invoker.shutdown(cancel_futures=True)
        moto.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
