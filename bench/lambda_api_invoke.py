"""Warm invocations of the API function's handler, in-process, with API Gateway v2 events.

Times healthz, REST search, and MCP tools/call for memory_search and memory_list_brains (one fresh
per-request MCP app each call) over N warm invocations, so the number is the handler's own cost
(Mangum, FastAPI, the MCP sub-app) plus the stores it touches, without network:

    python bench/lambda_api_invoke.py [--n 200] [--stores embedded|moto]

`--stores embedded` (default): every adapter embedded (SQLite records, files, SQLite chunk index,
ONNX embedder). `--stores moto`: records in DynamoDB and bytes in S3 under moto's in-process
`mock_aws`, the bucket and table created as template.yaml declares them (scripts/aws_local.py);
chunks stay in the embedded SQLite index with the ONNX embedder, since neither OpenSearch nor
Bedrock runs offline. Prints p50 and p95 per case; the target is MCP tools/call p95 <= 20 ms
with moto-backed stores.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, redirect_stdout
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.events.apigw import LambdaContext, http_event

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.aws_lambda import api_handler

ROOT = Path(__file__).resolve().parents[1]
MCP = {"accept": "application/json, text/event-stream", "content-type": "application/json",
       "mcp-protocol-version": "2025-11-25"}  # fmt: skip
TARGET_P95_MS = 20.0


def tools_call(name: str, arguments: dict[str, Any]) -> str:
    params = {"name": name, "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


def embedded_settings(data: Path) -> Settings:
    return Settings(data_dir=data, backend="aws", aws_local_fallbacks=True)


@contextmanager
def moto_stores(data: Path) -> Iterator[Settings]:
    """Settings for S3 + DynamoDB under moto's in-process mock, with the bucket and table made."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ[key] = "testing"
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    from moto import mock_aws

    spec = importlib.util.spec_from_file_location("aws_local", ROOT / "scripts/aws_local.py")
    assert spec and spec.loader
    aws_local = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(aws_local)
    env = {"CAIRN_AWS_REGION": "us-east-1", "CAIRN_BUCKET": "cairn-bench", "CAIRN_TABLE": "cairn-bench"}
    with mock_aws():
        aws_local.create_resources(None, env)  # None: boto3's default endpoints, which mock_aws serves
        yield Settings(
            data_dir=data,
            backend="aws",
            aws_local_fallbacks=True,  # chunks and jobs stay embedded
            bucket=env["CAIRN_BUCKET"],
            table=env["CAIRN_TABLE"],
        )


def percentiles(times: list[float]) -> tuple[float, float]:
    return statistics.median(times), statistics.quantiles(times, n=20, method="inclusive")[18]


def timed(handler: Callable[..., dict[str, Any]], event: dict[str, Any], n: int) -> list[float]:
    ctx, times = LambdaContext(), []
    for _ in range(n):
        t0 = time.perf_counter()
        response = handler(event, ctx)
        times.append((time.perf_counter() - t0) * 1000)
        assert response["statusCode"] == 200, response
        assert '"isError":true' not in (response.get("body") or "").replace(" ", ""), response
    return times


def quiet(handler: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The handler with stdout (Powertools' EMF metric lines, one per call) sent to /dev/null;
    writing them stays in the timing, as Lambda pays for it too."""
    sink = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the bench

    def call(event: dict[str, Any], context: Any) -> dict[str, Any]:
        with redirect_stdout(sink):
            return handler(event, context)

    return call


def bench(settings: Settings, n: int) -> None:
    built: list[Any] = []

    def make() -> Any:
        built.append(build_container(settings))
        return built[-1]

    handler = quiet(api_handler(make))
    ctx = LambdaContext()
    started = time.perf_counter()
    handler(http_event("POST", "/v1/brains", body={"name": "Bench"}), ctx)
    print(f"cold start (container + app + first call): {(time.perf_counter() - started) * 1000:.0f} ms")
    for i in range(200):
        note = f"Runbook {i}: restart worker {i % 17} when the queue backs up past {i * 10} jobs."
        handler(http_event("POST", "/v1/brains/bench/documents", body={"content": note}), ctx)
    query = "restart worker queue"
    cases = {
        "healthz": http_event("GET", "/healthz"),
        "REST search": http_event("POST", "/v1/brains/bench/search", body={"query": query}),
        "MCP memory_search": http_event(
            "POST", "/mcp", body=tools_call("memory_search", {"query": query, "brain": "bench"}), headers=MCP
        ),
        "MCP memory_list_brains": http_event(
            "POST", "/mcp", body=tools_call("memory_list_brains", {}), headers=MCP
        ),
    }
    for name, event in cases.items():
        # Searches count accesses and write them in a background thread once 256 are pending;
        # under moto that writing runs in this process and would be timed with the next case.
        access = built[0].search.access
        if access is not None:
            access.flush()
        p50, p95 = percentiles(timed(handler, event, n))
        mark = "  (target p95 <= 20 ms: " + ("met)" if p95 <= TARGET_P95_MS else "MISSED)")
        print(f"{name:24s} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  ({n} warm calls)" + (
            mark if name.startswith("MCP") else ""))  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--stores", choices=["embedded", "moto"], default="embedded")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="cairn-lambda-bench-"))
    if args.stores == "moto":
        print("stores: S3 + DynamoDB under moto's in-process mock_aws; chunks in the embedded SQLite")
        print("index with the ONNX embedder (no OpenSearch or Bedrock offline); jobs embedded")
        stores: Any = moto_stores(data)
    else:
        print("stores: all embedded (SQLite records, files, SQLite chunk index, ONNX embedder)")
        stores = nullcontext(embedded_settings(data))
    with stores as settings:
        bench(settings, args.n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
