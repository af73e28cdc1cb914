"""Run the API function in-process against a moto server: the AWS deployment without AWS or Docker.

    .venv/bin/pip install -e '.[aws-local]'     # once: boto3, moto's server, cfn-lint, Mangum, Powertools
    .venv/bin/python scripts/aws_local.py [--port 8787] [--moto-port 0] [--env infra/local/env.json]
        [--data-dir DIR] [--require-auth] [--parameter-overrides Key=Value ...]
        [--machine-client-secret S] [--iam-access-key ... --iam-session ...: the SigV4 caller, below]

Starts moto's server on 127.0.0.1 (S3, DynamoDB), creates the bucket and the table exactly as
template.yaml declares them, then serves HTTP on 127.0.0.1:<port> (0: any free port, named in the
banner) by turning every request into an API Gateway HTTP API (v2) event for
`functions/api/app.py`'s handler — the same handler Lambda runs. Embeddings go through the Bedrock
adapter to moto, whose Titan stand-in answers deterministic hashed bag-of-words vectors (moto's own
InvokeModel answers none); chunks and background jobs use the embedded adapters (no OpenSearch or
Step Functions emulator runs offline). SIGTERM or Ctrl-C stops it: exit 0, ports released.

The function's environment is the deployed stack's: template.yaml's Globals and ApiFunction
variables, resolved with the template's parameter defaults (Stage `dev`, so callers are tenant `dev`;
its JWT rules, IAM tenants and scopes, ingest thresholds and limits), `--parameter-overrides` on top
as `sam deploy` takes them. By default the emulation names its own SigV4 role in
`IamAdminRoleArns` (you are the operator), so that role may create brains. Only what stands for an
AWS resource comes from infra/local/env.json (the file `sam local start-api --env-vars` takes):
the moto endpoint, bucket, table, region, data directory, the embedded fallbacks for OpenSearch and
Step Functions, the extractive generator, and `CAIRN_ALLOW_OPEN`: unauthenticated callers are the
open owner (tenant `local`), as under `sam local`, unless `--require-auth` refuses them with the
stack's 401 (`WWW-Authenticate` naming the endpoint's metadata at this server's own http:// URL:
every event carries API Gateway's `x-forwarded-proto`/`-port`/`-for` for the real connection).

The Cognito user pool is a stand-in on the same port (scripts/aws_local_cognito.py): the issuer
`http://127.0.0.1:<port>/_cognito/us-east-1_CairnLocal` (its JWKS and discovery document) and a
token endpoint `http://127.0.0.1:<port>/_cognito/oauth2/token` for the template's machine client
(`localmachineclient`, secret `--machine-client-secret`, default `cairn-local-machine-secret`;
scopes from MachineClientScopes). Its tokens pass the function's JWT checks as Cognito's would.

Lambda gives each execution environment one invocation at a time, and Mangum drives the app on
the event loop of the thread that built it: every handler call here runs on one dedicated
thread, in arrival order, while the HTTP server accepts any number of concurrent clients. moto's
backends are plain dicts that no lock guards (TransactWriteItems deep-copies a whole table while a
concurrent PutItem grows it: "dictionary changed size during iteration"), and the function, its
job worker and clients posting presigned uploads all call moto at once: moto's server here hands
its backends one request at a time, each request's body read before it queues.

SigV4 callers, as the stack's IAM API lets them in: a request whose Authorization header is
`AWS4-HMAC-SHA256 ...` has its signature recomputed (botocore's SigV4Auth over the method, the raw
path and query, every signed header exactly as sent, host included, and the SHA-256 of the body
as received; service `execute-api`, the region of the credential scope, X-Amz-Date within 5
minutes) with the one local credential below. A bad or stale signature, another access key or
an unexpected security token is refused with 403 `{"message": ...}` before the handler runs, as
API Gateway's IAM authorizer does; a good one reaches the handler with
`requestContext.authorizer.iam` naming the assumed-role session
`arn:aws:sts::<account>:assumed-role/<role>/<session>`, which the template's IAM settings map to
the stage's tenant. Bearer and unauthenticated requests are passed on unchanged. Defaults:

    --iam-access-key AKIACAIRNLOCAL000000   --iam-secret-key cairn-local-secret
    --iam-session-token (none: a request must carry no X-Amz-Security-Token)
    --iam-account 123456789012   --iam-role cairn-local-agents   --iam-session aws-local

mcp-proxy-for-aws (stdio <-> SigV4; it needs `mcp` 1.x, so scripts/test installs it into
.venv-aws-proxy) connects an MCP client to the canonical surface with those credentials:

    AWS_ACCESS_KEY_ID=AKIACAIRNLOCAL000000 AWS_SECRET_ACCESS_KEY=cairn-local-secret \
      .venv-aws-proxy/bin/mcp-proxy-for-aws http://127.0.0.1:8787/mcp \
      --service execute-api --region us-east-1

`cairn smoke http://127.0.0.1:8787 --sigv4` with those credentials and
CAIRN_SMOKE_CLIENT_ID=localmachineclient CAIRN_SMOKE_CLIENT_SECRET=cairn-local-machine-secret runs
the post-deploy smoke test against it (docs/SMOKE.md; needs --require-auth for its 401 steps).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gc
import hashlib
import importlib.util
import io
import json
import logging
import math
import os
import re
import secrets
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

try:
    import aws_lambda_powertools  # noqa: F401  (the function's Lambda glue, imported by its handler)
    import boto3
    import mangum  # noqa: F401
    import uvicorn
    from cfnlint.decode import decode_str
    from moto.bedrockruntime.models import BedrockRuntimeBackend
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route
    from werkzeug.serving import BaseWSGIServer, make_server
    from werkzeug.wsgi import get_input_stream

    import cairn  # noqa: F401
except ModuleNotFoundError as missing:  # what a plain `pip install -e .` leaves out
    if __name__ != "__main__":
        raise
    sys.exit(
        f"scripts/aws_local.py needs the Python package {missing.name!r}, which Cairn's base install "
        "leaves out. Install the emulation's dependencies into the virtualenv, then run it again:\n\n"
        "    .venv/bin/pip install -e '.[aws-local]'\n"
    )

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # its sibling modules, however this file is loaded
from aws_local_cognito import PREFIX as COGNITO_PREFIX  # noqa: E402
from aws_local_cognito import CognitoStandIn, app_clients  # noqa: E402
from aws_local_iam import LocalIam, Refused, sigv4_identity  # noqa: E402
from aws_local_template import LocalStack, Template  # noqa: E402


def create_resources(endpoint: str | None, env: dict[str, str]) -> None:
    """The bucket, table and store secret of template.yaml, on the moto server (None: boto3's own
    endpoints)."""
    kw: dict[str, Any] = {"endpoint_url": endpoint, "region_name": env["CAIRN_AWS_REGION"]}
    boto3.client("s3", **kw).create_bucket(Bucket=env["CAIRN_BUCKET"])
    table = decode_str((ROOT / "template.yaml").read_text())[0]["Resources"]["RecordTable"]["Properties"]
    dynamodb = boto3.client("dynamodb", **kw)
    dynamodb.create_table(
        TableName=env["CAIRN_TABLE"],
        BillingMode=str(table["BillingMode"]),
        AttributeDefinitions=[dict(a) for a in table["AttributeDefinitions"]],
        KeySchema=[dict(k) for k in table["KeySchema"]],
    )
    secret = secrets.token_urlsafe(48)  # as the template's generated StoreSecret: made here, never shown
    boto3.client("secretsmanager", **kw).create_secret(Name=env["CAIRN_STORE_SECRET_ID"], SecretString=secret)
    ttl = table["TimeToLiveSpecification"]
    dynamodb.update_time_to_live(
        TableName=env["CAIRN_TABLE"],
        TimeToLiveSpecification={"AttributeName": str(ttl["AttributeName"]), "Enabled": True},
    )


class OneAtATime:
    """WSGI middleware: moto's backends see one request at a time. A request's body is read before
    it waits for its turn, so a slow upload holds up nobody; the answer is built whole inside."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        environ["wsgi.input"] = io.BytesIO(get_input_stream(environ).read())
        with self.lock:
            answer = self.app(environ, start_response)
            try:
                return list(answer)
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()


class MotoServer:
    """moto's server (ThreadedMotoServer's app and request handler) behind OneAtATime, on
    127.0.0.1; port 0 takes a free one. `stop` shuts it down and releases the port."""

    def __init__(self, port: int = 0) -> None:
        app = OneAtATime(DomainDispatcherApplication(create_backend_app))
        self.server: BaseWSGIServer = make_server(
            "127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler
        )
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="moto", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)


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


def load_handler(*, job_worker: bool = True) -> Any:
    """functions/api/app.py's handler. With `job_worker`, the container it builds on its first call
    also works its own job queue: no Step Functions runs here, so the embedded job engine that
    stands in for them (CAIRN_AWS_LOCAL_FALLBACKS) runs queued ingests, extractions and
    consolidations on a thread beside the handler, as `cairn serve`'s does."""
    from cairn.bootstrap import functions

    if job_worker:
        build = functions.build_container

        def build_and_work(settings: Any = None) -> Any:
            container = build(settings)
            container.jobs.start_worker()
            return container

        functions.build_container = build_and_work  # type: ignore[assignment]
    spec = importlib.util.spec_from_file_location("cairn_api_function", ROOT / "functions/api/app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def event_of(request: Request, body: bytes, iam: dict[str, Any] | None = None) -> dict[str, Any]:
    text = _utf8(body) if body and _is_text(request.headers.get("content-type", "")) else None
    binary = bool(body) and text is None  # base64 in the event, as API Gateway sends what is not text
    client = request.client.host if request.client else "127.0.0.1"
    headers = {k: v for k, v in request.headers.items()}
    # API Gateway tells the function how the client reached it; here that is plain http on this
    # port, so the URLs the function builds (a 401's resource_metadata) are ones a client can use.
    forwarded_for = headers.get("x-forwarded-for")
    headers["x-forwarded-for"] = f"{forwarded_for}, {client}" if forwarded_for else client
    headers["x-forwarded-proto"] = request.url.scheme
    headers["x-forwarded-port"] = str(request.url.port or (443 if request.url.scheme == "https" else 80))
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": request.url.path,
        "rawQueryString": request.url.query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": request.headers.get("host", "localhost"),
            "http": {
                "method": request.method,
                "path": request.url.path,
                "protocol": "HTTP/1.1",
                "sourceIp": client,
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


def _utf8(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_text(content_type: str) -> bool:
    return content_type.startswith(("text/", "application/json", "application/x-www-form-urlencoded"))


def front(
    handler: Any,
    invoker: ThreadPoolExecutor,
    iam: LocalIam | None = None,
    cognito: CognitoStandIn | None = None,
) -> Starlette:
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
    routes = cognito.routes() if cognito is not None else []
    return Starlette(routes=[*routes, Route("/{path:path}", call, methods=methods)])


class Server(uvicorn.Server):
    """uvicorn's server, except that SIGTERM and SIGINT only ask it to stop: uvicorn re-raises a
    caught signal after its graceful shutdown, which kills the process (exit 143) before moto is
    stopped and before main returns 0."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def parameter_overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--parameter-overrides takes Key=Value pairs, not {pair!r}")
        overrides[key] = value
    return overrides


def function_environment(template: Template, local: dict[str, str]) -> dict[str, str]:
    """template.yaml's environment of the API function, with env.json's values for what stands in
    for an AWS resource (LOCAL_STAND_INS) and for the variables the template does not set."""
    env = template.environment("ApiFunction")
    for key, value in local.items():
        if key in LOCAL_STAND_INS or key not in env:
            env[key] = value
    return env


LOCAL_STAND_INS = frozenset(
    {
        "CAIRN_AWS_REGION",
        "CAIRN_BUCKET",
        "CAIRN_TABLE",
        "CAIRN_STORE_SECRET_ID",
        "CAIRN_OPENSEARCH_URL",
        "CAIRN_EMBEDDER",
        "CAIRN_GENERATOR",
        "CAIRN_STATE_MACHINE_ARNS",
        "CAIRN_DATA_DIR",
    }
)
"""What infra/local/env.json decides even where the template says otherwise: moto's bucket, table
and store secret, no OpenSearch or Step Functions (the embedded fallbacks), the extractive generator
(moto answers no Converse), the data directory. Every other variable the template sets is the
template's."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8787, help="0: any free port (named in the banner)")
    parser.add_argument("--moto-port", type=int, default=0)
    parser.add_argument("--env", type=Path, default=ROOT / "infra/local/env.json")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument(
        "--require-auth",
        action="store_true",
        help="refuse callers without credentials, as the deployed stack does (drops env.json's "
        "CAIRN_ALLOW_OPEN)",
    )
    parser.add_argument(
        "--parameter-overrides",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="template parameters, as `sam deploy --parameter-overrides` takes them",
    )
    parser.add_argument("--machine-client-secret", default="cairn-local-machine-secret")
    parser.add_argument(
        "--no-job-worker",
        action="store_true",
        help="leave queued jobs queued: a stack whose state machines do not run (for testing what notices)",
    )
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

    listener = socket.create_server(("127.0.0.1", args.port))
    port = listener.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    local = {k: str(v) for k, v in json.loads(args.env.read_text())["ApiFunction"].items()}
    stack = LocalStack(local["CAIRN_AWS_REGION"], iam.account, f"{base}{COGNITO_PREFIX}")
    given = parameter_overrides(args.parameter_overrides)
    overrides = {"IamAdminRoleArns": f"arn:aws:iam::{iam.account}:role/{iam.role}"} | given
    template = Template(ROOT / "template.yaml", stack, overrides)
    unknown = sorted(set(given) - set(template.overrides))
    if unknown:
        raise SystemExit(f"template.yaml has no parameter {', '.join(unknown)} (--parameter-overrides)")
    env = function_environment(template, local)
    if args.require_auth:
        env.pop("CAIRN_ALLOW_OPEN", None)
        os.environ.pop("CAIRN_ALLOW_OPEN", None)
    cognito = CognitoStandIn(stack, app_clients(template, args.machine_client_secret))

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request access log
    BedrockRuntimeBackend.invoke_model = titan_stand_in  # type: ignore[method-assign]
    moto = MotoServer(args.moto_port)
    moto.start()
    env["CAIRN_AWS_ENDPOINT_URL"] = moto.endpoint  # the file names Docker's host; here moto is local
    env["CAIRN_DATA_DIR"] = str(args.data_dir or tempfile.mkdtemp(prefix="cairn-aws-local-"))
    # Only S3 and DynamoDB run on moto: the other ports take their embedded adapters, by request
    # (a deployed function without its OpenSearch URL or state machines refuses to start).
    env["CAIRN_AWS_LOCAL_FALLBACKS"] = "true"
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(key, "testing")
    os.environ.update(env)
    invoker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lambda-invoke")
    try:
        create_resources(moto.endpoint, env)
        machine = cognito.machine_client()
        print(f"moto on {moto.endpoint}; API function on {base}", flush=True)
        print(
            f"Cognito stand-in: issuer {stack.issuer}, token endpoint {cognito.token_url}"
            + (f", machine client {machine.id}" if machine else "")
            + ("; callers without credentials are refused" if args.require_auth else ""),
            flush=True,
        )
        app = front(load_handler(job_worker=not args.no_job_worker), invoker, iam, cognito)
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=10)
        Server(config).run(sockets=[listener])
    finally:
        invoker.shutdown(wait=True, cancel_futures=True)
        moto.stop()
        listener.close()
    return 0


if __name__ == "__main__":
    code = main()
    # Everything is stopped and the ports released: the interpreter's exit need not walk the
    # 300,000 objects moto and the function made (it took 4-5 s of each stop here, 0.4 s frozen).
    gc.freeze()
    sys.exit(code)
