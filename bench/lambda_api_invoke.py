"""Warm invocations of the API function's handler, in-process, with API Gateway v2 events.

Times healthz, REST search and MCP memory_search (one fresh per-request MCP app each call) over
N warm invocations on the embedded adapters, so the number is the handler's own cost (Mangum,
FastAPI, the MCP sub-app) plus a search, without network or AWS services:

    python bench/lambda_api_invoke.py [--n 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.events.apigw import LambdaContext, http_event

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.aws_lambda import api_handler

MCP = {"accept": "application/json, text/event-stream", "content-type": "application/json",
       "mcp-protocol-version": "2025-11-25"}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="cairn-lambda-bench-"))
    handler = api_handler(lambda: build_container(Settings(data_dir=data, backend="aws")))
    ctx = LambdaContext()
    started = time.perf_counter()
    handler(http_event("POST", "/v1/brains", body={"name": "Bench"}), ctx)
    print(f"cold start (container + app + first call): {(time.perf_counter() - started) * 1000:.0f} ms")
    for i in range(200):
        note = f"Runbook {i}: restart worker {i % 17} when the queue backs up past {i * 10} jobs."
        handler(http_event("POST", "/v1/brains/bench/documents", body={"content": note}), ctx)
    arguments = {"query": "restart worker queue"}
    search = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": arguments},
    }
    cases = {
        "healthz": http_event("GET", "/healthz"),
        "REST search": http_event("POST", "/v1/brains/bench/search", body={"query": "restart worker queue"}),
        "MCP memory_search": http_event("POST", "/mcp", body=json.dumps(search), headers=MCP),
    }
    for name, event in cases.items():
        times = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            response = handler(event, ctx)
            times.append((time.perf_counter() - t0) * 1000)
            assert response["statusCode"] == 200, response
        times.sort()
        p95 = times[int(0.95 * len(times)) - 1]
        print(f"{name:18s} p50 {statistics.median(times):6.1f} ms  p95 {p95:6.1f} ms  ({args.n} warm calls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
