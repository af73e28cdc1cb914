"""DynamoDB requests per MCP tool call on the AWS stack (the API function over moto, as
tests/support/aws_stack.py builds it), a caller with a Cairn API key: every request, the key's
lookups and the reads of the brain pointer partitions (the caller's brain listings), each call
one tools/call POST.

    .venv/bin/python bench/aws_call_requests.py [calls]
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.integration.aws.test_request_counts_on_aws import Requests, post
from tests.support.aws_stack import aws_stack

CALLS = (
    ("/mcp", "memory_list_brains", {}),
    ("/mcp", "memory_search", {"query": "the boiler"}),
    ("/mcp/zengram", "brain_stats", {}),
    ("/mcp/gbrain", "brain_stats", {}),
    ("/mcp/mnemosyne/", "list_libraries", {}),
    ("/mcp/thoughtmcp", "recall", {"query": "the boiler", "userId": "u1"}),
)


def main(calls: int) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        pytest.MonkeyPatch.context() as monkeypatch,
        aws_stack(Path(tmp), monkeypatch, key_name="bench") as stack,
    ):
        made = post(
            stack, stack.key, "/mcp", "memory_create_brain", {"name": "Bench", "visibility": "tenant"}
        )
        assert made["statusCode"] == 200, made
        requests = Requests(stack)
        for path, tool, arguments in CALLS:
            seen: collections.Counter[str] = collections.Counter()
            for _ in range(calls):
                requests.clear()
                answer: dict[str, Any] = post(stack, stack.key, path, tool, arguments)
                assert answer["statusCode"] == 200, answer
                seen.update(requests.seen)
            total = sum(seen.values()) / calls
            listings = sum(n for k, n in seen.items() if k.startswith("pointers ")) / calls
            keys, batches = seen["key"] / calls, seen["BatchGetItem"] / calls
            print(
                f"{path} {tool}: {total:g} DynamoDB requests a call; key lookups {keys:g}, "
                f"pointer partition queries {listings:g}, BatchGetItem {batches:g}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
