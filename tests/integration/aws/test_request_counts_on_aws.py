"""DynamoDB requests per call on the AWS stack (the API function over moto), counted with a botocore
event hook on the table's client: an MCP tool call reads its API key once and each of its brain
pointer partitions at most once, and the next call reads both again (a revoked key, a brain made
or unshared between two calls, is answered as it is now); a superseding memory store reads its
folder's recent siblings and the fact it supersedes once, and finishes its index intents in one
transaction after its chunks."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.auth.principal import READ
from cairn.domain.models import MemoryType, Visibility
from cairn.ports.chunks import ChunkFilter
from cairn.services.memory.memory_model import MemoryInput
from tests.events.apigw import body_of, http_event
from tests.support.aws_stack import CTX, MCP_HEADERS, Stack, aws_stack

pytestmark = pytest.mark.integration


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with aws_stack(tmp_path, monkeypatch, key_name="counted") as built:
        yield built


class Requests:
    """DynamoDB requests sent since `clear`, by what they read: `key` (an API key's record),
    `pointers <pk>` (a brain pointer partition's Query), else the operation's name."""

    def __init__(self, stack: Stack) -> None:
        self.seen: collections.Counter[str] = collections.Counter()
        client = stack.jobs.records.client  # type: ignore[attr-defined]
        client.meta.events.register("provide-client-params.dynamodb", self._count)

    def _count(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        if name == "GetItem" and params["Key"]["pk"]["S"] == "apikeys":
            name = "key"
        elif name == "GetItem" and params["Key"]["sk"]["S"].startswith("siblings#"):
            name = "siblings"
        elif name == "Query":
            pk = str(params["ExpressionAttributeValues"][":pk"]["S"])
            if pk.startswith("brains-of#") or pk == "brains-public":
                name = f"pointers {pk}"
        self.seen[name] += 1

    def clear(self) -> None:
        self.seen.clear()

    def listings(self) -> dict[str, int]:
        return {k: n for k, n in self.seen.items() if k.startswith("pointers ")}


def post(stack: Stack, key: str, path: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call through the API function (a stateless endpoint answers it without a session)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {**MCP_HEADERS, "authorization": f"Bearer {key}", "mcp-protocol-version": "2025-06-18"}
    return stack.api(http_event("POST", path, body=json.dumps(message), headers=headers, anonymous=True), CTX)


def result_of(answer: dict[str, Any]) -> Any:
    assert answer["statusCode"] == 200, body_of(answer)
    result = json.loads(body_of(answer))["result"]
    assert not result.get("isError"), result
    return result


def brains_listed(answer: dict[str, Any]) -> set[str]:
    return {b["slug"] for b in result_of(answer)["structuredContent"]["items"]}


@pytest.mark.parametrize(
    ("path", "tool", "brains"),
    [
        ("/mcp/gbrain", "brain_stats", 1),  # listed the caller's brains, then chose a default among them
        ("/mcp/zengram", "brain_stats", 0),  # no brain yet: each of its two resolutions listed them
        ("/mcp", "memory_list_brains", 1),
    ],
)
def test_an_mcp_call_reads_its_key_once_and_each_pointer_partition_at_most_once(
    stack: Stack, path: str, tool: str, brains: int
) -> None:
    if brains:
        result_of(post(stack, stack.key, "/mcp", "memory_create_brain", {"name": "Counted"}))
    requests = Requests(stack)
    for _ in range(2):  # the second call reads them again: nothing is kept from one call to the next
        requests.clear()
        assert post(stack, stack.key, path, tool, {})["statusCode"] == 200
        assert requests.seen["key"] == 1, requests.seen
        listings = requests.listings()
        assert listings and all(n == 1 for n in listings.values()), requests.seen


def test_the_next_call_sees_a_brain_made_unshared_or_a_key_revoked_since(stack: Stack) -> None:
    """What a call kept of its brains and its key lasts that call only."""
    core, admin = stack.core, stack.key
    reader = core.keys.create(name="reader", tenant="acme", scopes=[READ]).plaintext
    result_of(post(stack, admin, "/mcp", "memory_create_brain", {"name": "First", "visibility": "tenant"}))
    assert brains_listed(post(stack, reader, "/mcp", "memory_list_brains", {})) == {"first"}

    result_of(post(stack, admin, "/mcp", "memory_create_brain", {"name": "Second", "visibility": "tenant"}))
    assert brains_listed(post(stack, reader, "/mcp", "memory_list_brains", {})) == {"first", "second"}

    (second,) = [b for b in core.brains.list() if b.slug == "second"]
    core.brains.update(second.id, visibility=Visibility.private.value)
    assert brains_listed(post(stack, reader, "/mcp", "memory_list_brains", {})) == {"first"}

    (key,) = [k for k in core.keys.list() if k.name == "reader"]
    core.keys.revoke(key.id)
    assert post(stack, reader, "/mcp", "memory_list_brains", {})["statusCode"] == 401


def test_a_superseding_store_reads_its_siblings_once_and_finishes_its_intents_at_once(stack: Stack) -> None:
    core = stack.core
    brain = core.brains.create("Team memory")
    for n in range(2):
        core.memories.store(brain, MemoryInput(type=MemoryType.fact, key="acme-db", content=f"in rack {n}"))
    requests = Requests(stack)
    stored = core.memories.store(brain, MemoryInput(type=MemoryType.fact, key="acme-db", content="in rack 2"))
    assert stored.supersedes is not None  # it replaced rack 1: two documents' records and chunks changed
    assert requests.seen["siblings"] == 1, requests.seen  # linked, then the superseded one indexed
    assert requests.seen["TransactWriteItems"] == 2, requests.seen  # the commit, then both intents
    assert sum(requests.seen.values()) <= 10, requests.seen
    assert list(core.documents.repo.intents.pending()) == []  # both finished, once both were indexed
    current = core.search.passages("rack", ChunkFilter(brain_ids=(brain.id,), current_only=True), 10)
    assert {hit.chunk.document_id for hit, _ in current} == {stored.memory.id}  # searchable as written


def test_a_superseding_store_reads_the_fact_it_supersedes_once(stack: Stack) -> None:
    """Read to find it current, then taken as read by the commit's counts (memory_counts.Replacing)."""
    core = stack.core
    brain = core.brains.create("Team memory")
    first = core.memories.store(brain, MemoryInput(type=MemoryType.fact, key="acme-db", content="in rack 0"))
    reads: collections.Counter[tuple[str, str]] = collections.Counter()

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "GetItem":
            reads[(params["Key"]["pk"]["S"], params["Key"]["sk"]["S"])] += 1
        elif model.name == "BatchGetItem":
            for wanted in params["RequestItems"].values():
                reads.update((k["pk"]["S"], k["sk"]["S"]) for k in wanted["Keys"])

    client = stack.jobs.records.client  # type: ignore[attr-defined]
    client.meta.events.register("provide-client-params.dynamodb", count)
    stored = core.memories.store(brain, MemoryInput(type=MemoryType.fact, key="acme-db", content="in rack 1"))
    assert stored.supersedes == first.memory.id
    assert reads[(f"brain#{brain.id}", f"doc#{first.memory.path}")] == 1, reads
