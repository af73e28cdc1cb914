"""The ThoughtMCP memory tools (/mcp/thoughtmcp) on the AWS stack (tests/support/aws_stack.py): rows,
documents and waypoint links on DynamoDB, memory text on S3 (moto), chunks on OpenSearchChunkIndex
over the fake cluster; a hard forget leaves nothing of the memory in any of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from cairn.auth.principal import READ, WRITE
from tests.contract.aws_storage import BUCKET, REGION, S3_CONFIG
from tests.support.aws_stack import TABLE, Stack, aws_stack, mcp_client

PATH = "/mcp/thoughtmcp"
TEXT = "The billing service deploys every Tuesday after the payments regression suite passes"


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with aws_stack(tmp_path, monkeypatch, key_name="thoughtmcp") as built:
        yield built


def answer(response: dict[str, Any]) -> Any:
    assert "result" in response, response
    result = response["result"]
    assert not result.get("isError"), result
    body = json.loads(result["content"][0]["text"])
    assert body["success"] is True, body
    return body["data"]


def everything(stack: Stack, *, audit: bool = False) -> str:
    """Every DynamoDB item and S3 object of the stack, as one text to look for a memory in; the
    audit log (which records that a memory was written and forgotten: its id, never its text)
    only when asked for."""
    table = boto3.client("dynamodb", region_name=REGION)
    items = [item for page in table.get_paginator("scan").paginate(TableName=TABLE) for item in page["Items"]]
    items = [item for item in items if audit or not item["pk"]["S"].startswith("audit")]
    s3 = boto3.client("s3", region_name=REGION, config=S3_CONFIG)
    listed = s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    blobs = [
        s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read().decode("utf-8", "replace") for o in listed
    ]
    return json.dumps(items) + "\n".join(blobs)


def remember(t: Any, user: str, content: str) -> Any:
    meta = {"keywords": ["billing"], "tags": ["ops"]}
    args = {
        "content": content,
        "userId": user,
        "sessionId": "s1",
        "primarySector": "procedural",
        "metadata": meta,
    }
    return answer(t("remember", args))


def test_memory_flows_and_a_hard_forget_on_dynamodb_s3_and_opensearch(stack: Stack) -> None:
    t = mcp_client(stack, PATH)  # the stack's key holds brains:admin: it may act as any user
    user = "alice"
    a = remember(t, user, TEXT)
    b = remember(t, user, TEXT + " on staging")
    recalled = answer(t("recall", {"userId": user, "text": "billing deploys Tuesday", "minSimilarity": 0}))
    found = answer(t("search", {"userId": user, "text": '"regression suite" AND staging'}))
    assert b["linksCreated"] == 2 and {m["id"] for m in recalled["memories"]} == {
        a["memoryId"],
        b["memoryId"],
    }
    assert [m["id"] for m in found["memories"]] == [b["memoryId"]]
    assert a["embeddingsGenerated"] == 5  # the four besides the text's: one DynamoDB item a memory
    table = boto3.client("dynamodb", region_name=REGION)
    sectors = [i for i in table.scan(TableName=TABLE)["Items"] if i["pk"]["S"].endswith("#sectors")]
    assert sorted(i["sk"]["S"] for i in sectors) == sorted([a["memoryId"], b["memoryId"]])
    similarity = {
        sector: {
            m["id"]: m["scoreComponents"]["similarity"]
            for m in answer(t("recall", {"userId": user, "text": "how to deploy billing", "sectors": [sector],
                                         "minSimilarity": 0}))["memories"]
        }
        for sector in ("semantic", "procedural")
    }  # fmt: skip
    assert similarity["procedural"][a["memoryId"]] > similarity["semantic"][a["memoryId"]]  # a how-to

    agent = stack.core.keys.create(name="agent", tenant="acme", scopes=[READ, WRITE])
    admin, stack.key = stack.key, agent.plaintext  # without brains:admin: itself (`key:<id>`), its sub-users
    own = f"key:{agent.key.id}:bob"
    t2 = mcp_client(stack, PATH)
    refused = t2("recall", {"userId": user, "text": "billing"})["result"]
    mine = remember(t2, own, "Bob's own note about the Tuesday deploy window")
    assert refused["isError"] is True and json.loads(refused["content"][0]["text"])["code"] == "forbidden"
    assert mine["memoryId"].startswith("mem_")
    stack.key = admin

    brain_id = stack.core.brains.list()[0].id
    assert "on staging" in stack.core.adapters.chunks.get_chunks(brain_id, b["memoryId"])[0].text
    assert b["memoryId"] in everything(stack)
    gone = answer(t("forget", {"memoryId": b["memoryId"], "userId": user}))
    assert gone["deletionType"] == "hard"
    stored = everything(stack)
    assert b["memoryId"] not in stored and "on staging" not in stored  # records, links, rows, blobs
    assert "on staging" not in everything(stack, audit=True)
    assert stack.core.adapters.chunks.get_chunks(brain_id, b["memoryId"]) == []
    left = answer(t("recall", {"userId": user}))
    assert [m["id"] for m in left["memories"]] == [a["memoryId"]]
    assert left["memories"][0]["scoreComponents"]["linkWeight"] == 0.0  # its link to the forgotten one: gone
