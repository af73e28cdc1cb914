"""The API function's cold start as Lambda pays it: a fresh interpreter importing the handler module.

    .venv/bin/python bench/lambda_cold_import.py [--runs 5]
    .venv/bin/python bench/lambda_cold_import.py --artifact .aws-sam/build [--python python3.12]

Each run is a new `python -c "import functions.api.app"` (or `import app` from a `sam build`
artifact) with the environment the template gives the function (backend aws, bucket, table,
OpenSearch URL, Bedrock, state machine ARNs, fake credentials) and sockets refused, so an import
that reaches for the network fails instead of hiding a round trip. Prints the wall time of the
whole interpreter (best / median of the runs), the import's own total from `-X importtime`, the
15 top-level packages with the most import time (self time of all their modules), then the first
invocation (GET /healthz): `build_container` and the app, which the handler builds on first use,
and the first MCP call after it (`tools/list` on /mcp from a SigV4 caller): the MCP SDK is imported
and the surface built then (entrypoints/mcp/mount.py), so it is printed beside the import.

The first invocation reads the record table (the container checks its data migrations), so those
runs send every AWS client to a moto server this script starts on 127.0.0.1 (the table and bucket
made as the template makes them), and their socket guard lets loopback through; nothing else.

`--artifact` runs the built layer and function with Python 3.12 and `-B`: `sam build` ships no
`.pyc` files and Lambda's /opt and /var/task are read-only, so every cold start compiles every
module of the layer from source. The default mode (this checkout, `.pyc` cached) is the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 1000.0
ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:cairn-jobs-dev"
LAMBDA_ENV = {
    "CAIRN_BACKEND": "aws",
    "CAIRN_DATA_DIR": "/tmp/cairn-cold-import",
    "CAIRN_BUCKET": "cairn-dev-documentbucket-0123456789ab",
    "CAIRN_TABLE": "cairn-dev-RecordTable-0123456789AB",
    "CAIRN_OPENSEARCH_URL": "https://search-cairn-dev-abcdefghijklmnop.us-east-1.es.amazonaws.com",
    "CAIRN_OPENSEARCH_INDEX_PREFIX": "cairn-dev",
    "CAIRN_EMBEDDER": "bedrock",
    "CAIRN_GENERATOR": "bedrock",
    "CAIRN_BEDROCK_EMBEDDING_MODEL": "amazon.titan-embed-text-v2:0",
    "CAIRN_BEDROCK_EMBEDDING_DIM": "1024",
    "CAIRN_BEDROCK_GENERATION_MODEL": "amazon.nova-lite-v1:0",
    "CAIRN_STATE_MACHINE_ARNS": json.dumps({kind: ARN for kind in ("job", "ingest", "consolidate")}),
    "CAIRN_IAM_TENANTS": json.dumps({"123456789012": "dev"}),  # the first MCP call's SigV4 caller
    "CAIRN_IAM_SCOPES": json.dumps({"123456789012": ["documents:read"]}),
    "POWERTOOLS_SERVICE_NAME": "cairn",
    "POWERTOOLS_METRICS_NAMESPACE": "Cairn",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_LAMBDA_FUNCTION_NAME": "cairn-api-dev",
}

# Refuse sockets before anything else is imported: an import that connects fails loudly.
GUARD = """
import socket
def _refuse(*args, **kwargs):
    raise OSError("the cold start tried to open a network connection")
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
"""

LOOPBACK_GUARD = """
import socket
_connect = socket.socket.connect
def _loopback_only(sock, address, *args):
    if address[0] not in ("127.0.0.1", "::1", "localhost"):
        raise OSError("the cold start tried to reach the network")
    return _connect(sock, address, *args)
socket.socket.connect = _loopback_only
"""


@contextmanager
def moto_stack(env: dict[str, str]) -> Iterator[str]:
    """A moto server on 127.0.0.1 holding the table and bucket LAMBDA_ENV names; yields its URL."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    try:
        keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        keys["region_name"] = "us-east-1"
        dynamodb = boto3.client("dynamodb", endpoint_url=url, **keys)
        dynamodb.create_table(
            TableName=env["CAIRN_TABLE"],
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
        )
        boto3.client("s3", endpoint_url=url, **keys).create_bucket(Bucket=env["CAIRN_BUCKET"])
        yield url
    finally:
        server.stop()


FIRST_CALL = """
import json, time
t0 = time.perf_counter()
import {module} as fn
t1 = time.perf_counter()
spent = {{}}
import cairn.bootstrap.functions as wiring  # the handler builds its container through this name
real_build = wiring.build_container
def timed_build(settings):
    t = time.perf_counter()
    container = real_build(settings)
    spent["build_container"] = (time.perf_counter() - t) * 1000
    return container
wiring.build_container = timed_build
class Context:
    function_name = "cairn-api-dev"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-api-dev"
    aws_request_id = "cold-import"
    def get_remaining_time_in_millis(self):
        return 29000
http = {{"method": "GET", "path": "/healthz", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7",
         "userAgent": "bench"}}
event = {{"version": "2.0", "routeKey": "$default", "rawPath": "/healthz", "rawQueryString": "",
          "headers": {{"host": "abc123.execute-api.us-east-1.amazonaws.com"}},
          "requestContext": {{"accountId": "123456789012", "apiId": "abc123", "http": http,
                             "requestId": "cold", "routeKey": "$default", "stage": "$default",
                             "domainName": "abc123.execute-api.us-east-1.amazonaws.com"}},
          "isBase64Encoded": False}}
t2 = time.perf_counter()
response = fn.handler(event, Context())
t3 = time.perf_counter()
t4 = time.perf_counter()
fn.handler(event, Context())
t5 = time.perf_counter()
iam = {{"accountId": "123456789012", "callerId": "AROAEXAMPLE:bench",
        "userArn": "arn:aws:sts::123456789012:assumed-role/bench/bench", "userId": "AROAEXAMPLE:bench"}}
rpc = json.dumps({{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {{}}}})
mcp = {{**event, "rawPath": "/mcp", "body": rpc,
        "headers": {{**event["headers"], "content-type": "application/json",
                    "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}},
        "requestContext": {{**event["requestContext"], "authorizer": {{"iam": iam}},
                           "http": {{**http, "method": "POST", "path": "/mcp"}}}}}}
t6 = time.perf_counter()
listed = fn.handler(mcp, Context())
t7 = time.perf_counter()
fn.handler(mcp, Context())
t8 = time.perf_counter()
print("@@" + json.dumps({{"import": (t1 - t0) * 1000, "first_call": (t3 - t2) * 1000,
                         "second_call": (t5 - t4) * 1000, "status": response["statusCode"],
                         "first_mcp": (t7 - t6) * 1000, "second_mcp": (t8 - t7) * 1000,
                         "mcp_status": listed["statusCode"], **spent}}))
"""

LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def parse_importtime(stderr: str) -> list[tuple[int, int, int, str]]:
    """(self µs, cumulative µs, depth, module) per line of `-X importtime` output."""
    rows = []
    for line in stderr.splitlines():
        m = LINE.match(line)
        if m:
            rows.append((int(m[1]), int(m[2]), len(m[3]) // 2, m[4]))
    return rows


def by_package(rows: list[tuple[int, int, int, str]]) -> list[tuple[str, float, int, str]]:
    """Top-level package -> (self ms summed over its modules, module count, who first imported
    it), slowest first. `via` is the nearest cairn (or handler) module above the package's
    first import, found from importtime's indentation (children are printed before parents)."""
    parents: list[int | None] = [None] * len(rows)
    last_at_depth: dict[int, int] = {}
    for i in range(len(rows) - 1, -1, -1):
        depth = rows[i][2]
        last_at_depth[depth] = i
        parents[i] = last_at_depth.get(depth - 1) if depth > 0 else None
    total: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    via: dict[str, str] = {}
    for i, (self_us, _, _, module) in enumerate(rows):
        top = module.split(".")[0]
        total[top] += self_us
        count[top] += 1
        if top not in via:
            via[top] = _importer(rows, parents, i)
    ranked = sorted(total.items(), key=lambda item: -item[1])
    return [(p, us / 1000, count[p], via[p]) for p, us in ranked]


def _importer(rows: list[tuple[int, int, int, str]], parents: list[int | None], i: int) -> str:
    at = parents[i]
    while at is not None:
        name = rows[at][3]
        if name.startswith(("cairn", "functions", "app")) or parents[at] is None:
            return name
        at = parents[at]
    return "(top level)"


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    return (time.perf_counter() - t0) * 1000, done


def must(ran: tuple[float, subprocess.CompletedProcess[str]]) -> tuple[float, str, str]:
    wall, done = ran
    if done.returncode != 0:
        sys.exit(f"the child interpreter failed:\n{done.stderr[-3000:]}")
    return wall, done.stdout, done.stderr


def setup(args: argparse.Namespace) -> tuple[list[str], dict[str, str], Path, str]:
    """Interpreter argv prefix, environment, working directory and handler module."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "AWS_", "PYTHON"))}
    env.update(LAMBDA_ENV)
    for name in args.unset:
        env.pop(name, None)
    if args.artifact is None:
        return [sys.executable], env, ROOT, "functions.api.app"
    build = args.artifact.resolve()
    python = args.python or shutil.which("python3.12") or "python3.12"
    # pyenv's shim needs to be told which installed version answers to python3.12.
    env.setdefault("PYENV_VERSION", "3.12.1")
    env["PYTHONPATH"] = f"{build / 'CoreLayer' / 'python'}:{build / 'ApiFunction'}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return [python, "-B"], env, build, "app"


def spread(ms: list[float]) -> str:
    return f"best {min(ms):6.0f} ms  median {statistics.median(ms):6.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--artifact", type=Path, default=None, help="a `sam build` directory (.aws-sam/build)"
    )
    parser.add_argument("--python", default=None, help="the interpreter for --artifact (default python3.12)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--unset", action="append", default=[], help="leave this variable out (repeatable)")
    args = parser.parse_args()
    python, env, cwd, module = setup(args)
    import_code = GUARD + f"import {module}\n"
    if args.artifact is None:
        where = "this checkout, .pyc cached"
    else:
        pyc = sum(1 for _ in args.artifact.rglob("*.pyc"))
        where = f"sam build artifact {args.artifact}, {pyc} .pyc files, -B"
    print(f"cold import of the API function ({where}); module {module}; {args.runs} fresh interpreters")

    walls = [must(run([*python, "-c", import_code], env, cwd))[0] for _ in range(args.runs)]
    empty = [must(run([*python, "-c", "pass"], env, cwd))[0] for _ in range(args.runs)]
    print(f"  interpreter + import, wall: {spread(walls)}")
    print(f"  bare interpreter, wall:     {spread(empty)}")

    traced = []
    for _ in range(args.runs):
        rows = parse_importtime(must(run([*python, "-X", "importtime", "-c", import_code], env, cwd))[2])
        top_line = next(r for r in rows if r[3] == module and r[2] == 0)
        traced.append((top_line[1] / 1000, rows))
    traced.sort(key=lambda t: t[0])
    median_ms, rows = traced[len(traced) // 2]
    verdict = "within" if median_ms <= TARGET_MS else "OVER"
    print(
        f"  -X importtime total of {module}: best {traced[0][0]:6.0f} ms  median {median_ms:6.0f} ms"
        f"  ({verdict} the {TARGET_MS:.0f} ms target; importtime adds its own overhead)"
    )
    print(f"  {args.top} top-level packages by import time (self time of their modules, median run):")
    for package, ms, modules, via in by_package(rows)[: args.top]:
        print(f"    {package:24s} {ms:7.1f} ms  {modules:4d} modules  first imported under {via}")

    print("  first invocation, GET /healthz (median run; the handler builds the container on first use):")
    calls = []
    with moto_stack(env) as endpoint:
        first = [run([*python, "-c", LOOPBACK_GUARD + FIRST_CALL.format(module=module)],
                     {**env, "CAIRN_AWS_ENDPOINT_URL": endpoint}, cwd) for _ in range(args.runs)]  # fmt: skip
    for _, done in first:
        if done.returncode != 0:
            error = done.stderr.strip().splitlines()[-3:]
            print("    FAILED with this environment:\n      " + "\n      ".join(error))
            return 1
        marker = next(ln for ln in done.stdout.splitlines() if ln.startswith("@@"))
        calls.append(json.loads(marker[2:]))
    calls.sort(key=lambda c: c["first_call"])
    mid = calls[len(calls) // 2]
    print(f"    import (in-process clock): {spread([c['import'] for c in calls])}")
    print(f"    first call {mid['first_call']:.0f} ms "
          f"(of which build_container {mid.get('build_container', 0.0):.0f} ms), "
          f"second call {mid['second_call']:.1f} ms, status {mid['status']}")  # fmt: skip
    print(f"    then the first MCP call (tools/list on /mcp) {mid['first_mcp']:.0f} ms, "
          f"second {mid['second_mcp']:.1f} ms, status {mid['mcp_status']}")  # fmt: skip
    cold = [c["import"] + c["first_call"] for c in calls]
    cold_mcp = [c["import"] + c["first_call"] + c["first_mcp"] for c in calls]
    print(f"    import + first call: {spread(cold)}")
    print(f"    import + first call + first MCP call: {spread(cold_mcp)}")
    print("  no network was touched (sockets refused in every run; the first calls reached moto on loopback)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
