"""zengram's HTTP API (/zengram) and MCP surface (/mcp/zengram) on the AWS stack: API Gateway HTTP
API v2 events into the API function, records on DynamoDB and blobs on S3 (moto), chunks on
OpenSearchChunkIndex over the fake cluster, and jobs on Step Functions (moto) with each task routed
to the real job task handler. Callers authenticate as zengram's wrapper does, with a Cairn API key
in `x-api-key` (or as a bearer token over MCP); the events carry no authorizer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.domain.models import MemoryType
from cairn.services.memory.memory_model import MemoryInput
from tests.contract.aws_storage import BUCKET, serialized_moto
from tests.events.apigw import http_event, json_of
from tests.support.aws_stack import CTX, Stack, aws_stack, mcp_session, text_of

INVALID_TYPE = "Invalid type: note. Must be one of: event, fact, decision, status"


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with aws_stack(tmp_path, monkeypatch, key_name="zengram") as built:
        yield built


def z(stack: Stack, method: str, path: str, body: Any = None, **query: str) -> tuple[int, Any]:
    """One zengram API request through the API function; its status and JSON body."""
    event = http_event(
        method,
        f"/zengram{path}",
        body=body,
        query=query or None,
        headers={"x-api-key": stack.key},
        anonymous=True,
    )
    response = stack.api(event, CTX)
    return response["statusCode"], json_of(response)


def store(stack: Stack, **body: Any) -> tuple[int, Any]:
    body.setdefault("source_agent", "claude-code")
    return z(stack, "POST", "/memory", body)


def stored(stack: Stack, **body: Any) -> str:
    status, answer = store(stack, **body)
    assert status == 201 and answer["deduplicated"] is False, answer
    memory_id: str = answer["id"]
    return memory_id


def ids(answer: dict[str, Any]) -> list[str]:
    return [r["id"] for r in answer["results"]]


def current_chunks(stack: Stack, memory_id: str) -> list[bool]:
    return [c.current for c in stack.core.adapters.chunks.get_chunks(stack.brain().id, memory_id)]


def dynamodb_requests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every DynamoDB request sent from now on, as (operation, "pk sk" of its key, blank for none)."""
    import botocore.client

    sent: list[tuple[str, str]] = []
    real = botocore.client.BaseClient._make_api_call

    def spy(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if client.meta.service_model.service_name == "dynamodb":
            key = params.get("Key") or {}
            sent.append((operation, f"{key.get('pk', {}).get('S', '')} {key.get('sk', {}).get('S', '')}"))
        return real(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", spy)
    return sent


def test_store_supersedes_deduplicates_and_refuses_bad_input_without_writing(stack: Stack) -> None:
    status, first = store(
        stack, type="fact", content="Acme runs WordPress", key="acme-stack", client_id="acme"
    )
    assert status == 201 and first["supersedes"] is None and len(first["content_hash"]) == 16
    status, second = store(
        stack, type="fact", content="Acme moved to Next.js 14", key="acme-stack", client_id="acme"
    )
    green = stored(
        stack, type="status", content="deploy pipeline is green", subject="deploy", status_value="green"
    )
    status_red, red = store(
        stack, type="status", content="deploy pipeline is red", subject="deploy", status_value="red"
    )
    again_status, again = store(
        stack, type="fact", content="Acme moved to Next.js 14", key="acme-stack", client_id="acme"
    )

    assert status == 201 and second["supersedes"] == first["id"]
    assert status_red == 201 and red["supersedes"] == green
    assert again_status == 200 and again["deduplicated"] is True and again["id"] == second["id"]
    # The records on DynamoDB and the chunks on OpenSearch agree on what is current.
    brain = stack.brain()
    old = stack.core.memories.record(brain, first["id"]).memory
    assert old is not None and old.superseded_by == second["id"] and old.valid_to is not None
    old_status = stack.core.memories.record(brain, green).memory
    assert old_status is not None and old_status.superseded_by == red["id"]
    assert current_chunks(stack, first["id"]) and not any(current_chunks(stack, first["id"]))
    assert current_chunks(stack, green) and not any(current_chunks(stack, green))
    assert all(current_chunks(stack, second["id"])) and all(current_chunks(stack, red["id"]))
    # The memory's text lives in the S3 bucket.
    blob_key = stack.core.memories.record(brain, second["id"]).blob_key
    assert stack.blobs.client.get_object(Bucket=BUCKET, Key=f"blobs/{blob_key}")["Body"].read() == (
        b"Acme moved to Next.js 14"
    )

    before = (
        z(stack, "GET", "/stats")[1],
        stack.items(),
        stack.objects(),
        stack.core.adapters.chunks.count(brain.id),
    )
    status, refused = store(stack, type="note", content="Acme likes blue")
    after = (
        z(stack, "GET", "/stats")[1],
        stack.items(),
        stack.objects(),
        stack.core.adapters.chunks.count(brain.id),
    )

    assert status == 400 and refused == {"error": INVALID_TYPE}
    assert before == after
    assert before[0]["total_memories"] == 4 and before[0]["active"] == 2 and before[0]["superseded"] == 2


def test_search_query_briefing_stats_and_entities(stack: Stack) -> None:
    ci = stored(
        stack,
        type="fact",
        content="Acme deploys with GitHub Actions every Friday",
        client_id="acme",
        key="ci",
    )
    globex = stored(stack, type="event", content="Globex deployed the billing service", client_id="globex")
    green = stored(
        stack, type="status", content="deploy pipeline is green", subject="deploy", client_id="acme"
    )
    red = stored(stack, type="status", content="deploy pipeline is red", subject="deploy", client_id="acme")
    chose = stored(
        stack,
        type="decision",
        content="We chose PostgreSQL on Kubernetes for billing",
        source_agent="agent-b",
        client_id="globex",
    )

    _, acme = z(stack, "GET", "/memory/search", q="deploys with github", client_id="acme")
    _, statuses = z(stack, "GET", "/memory/search", q="deploy pipeline", type="status")
    _, history = z(
        stack, "GET", "/memory/search", q="deploy pipeline", type="status", include_superseded="true"
    )
    _, nobody = z(stack, "GET", "/memory/search", q="deploys", client_id="initech")
    _, facts = z(stack, "GET", "/memory/query", type="facts", key="ci")
    _, briefing = z(stack, "GET", "/briefing", since="2025-12-31T00:00:00Z", agent="agent-b")
    _, later = z(stack, "GET", "/briefing", since="2030-01-01T00:00:00Z")
    _, stats = z(stack, "GET", "/stats")
    _, technologies = z(stack, "GET", "/entities", type="technology")
    _, linked = z(stack, "GET", "/entities/postgres/memories")  # an alias, ignoring case

    assert acme["query"] == "deploys with github" and ids(acme)[0] == ci
    assert {r["client_id"] for r in acme["results"]} == {"acme"}
    assert set(acme["results"][0]) == {"id", "score", "effective_score", "type", "content", "source_agent",
                                       "client_id", "importance", "created_at", "brain"}  # fmt: skip
    assert {r["brain"] for r in acme["results"]} == {"shared-brain"}  # the brain it came from, by slug
    assert ids(statuses) == [red]  # the superseded status only when asked
    assert set(ids(history)) == {green, red}
    assert nobody == {"query": "deploys", "count": 0, "results": []}
    assert (
        facts["count"] == 1
        and facts["results"][0]["value"] == "Acme deploys with GitHub Actions every Friday"
    )
    # agent-b's briefing: what the others wrote since, its own decision left out
    assert [e["id"] for e in briefing["events"]] == [globex]
    assert [f["id"] for f in briefing["facts_updated"]] == [ci]
    assert {s["id"] for s in briefing["status_changes"]} == {green, red}
    assert briefing["decisions"] == []
    assert briefing["summary"]["total_in_period"] == 5 and briefing["summary"]["total_entries"] == 4
    assert later["summary"]["total_in_period"] == 0 and later["events"] == later["decisions"] == []
    assert stats["total_memories"] == 5 and stats["active"] == 4 and stats["superseded"] == 1
    assert stats["by_type"] == {"event": 1, "fact": 1, "decision": 1, "status": 2}
    assert stats["vectors_count"] == stack.core.adapters.chunks.count(stack.brain().id) >= 5
    names = {e["canonical_name"] for e in technologies["entities"]}
    assert {"PostgreSQL", "Kubernetes"} <= names
    assert all(e["entity_type"] == "technology" for e in technologies["entities"])
    assert linked["entity"] == "PostgreSQL" and [m["memory_id"] for m in linked["memory_links"]] == [chose]


def test_eight_concurrent_writers_of_one_key_leave_one_current_memory_and_chunks(stack: Stack) -> None:
    brain = stack.core.brains.create("Team memory")
    writers = 8
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def write(n: int) -> None:
        try:
            start.wait()
            fact = MemoryInput(
                type=MemoryType.fact, content=f"the stack is version {n}", key="acme-stack", client_id="acme"
            )
            stack.core.memories.store(brain, fact)
        except BaseException as exc:
            errors.append(exc)

    with serialized_moto():  # each DynamoDB request atomic, as the service guarantees
        threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    assert errors == []
    facts = [d for d in stack.core.memories.of_type(brain, [MemoryType.fact]) if d.deleted_at is None]
    assert len(facts) == writers  # nothing lost
    live = [d for d in facts if d.memory is not None and d.memory.current]
    assert len(live) == 1
    successors = [d.memory.superseded_by for d in facts if d.memory is not None and d.memory.superseded_by]
    assert len(successors) == len(set(successors)) == writers - 1  # one chain, no fork
    # OpenSearch agrees: only the current fact's chunks are current.
    chunks = {d.id: stack.core.adapters.chunks.get_chunks(brain.id, d.id) for d in facts}
    assert all(chunks.values())
    current = {doc_id for doc_id, cs in chunks.items() for c in cs if c.current}
    assert current == {live[0].id}


def test_consolidation_runs_on_step_functions_and_expires_stale_events(stack: Stack) -> None:
    stale = stored(stack, type="event", content="nobody read this event", importance="medium")
    kept = stored(stack, type="event", content="a critical event is kept", importance="critical")
    stack.core.adapters.clock.advance(31 * 86_400)  # type: ignore[attr-defined]

    status, summary = z(stack, "POST", "/consolidate", sync="true")
    _, after = z(stack, "GET", "/consolidate/status")

    assert status == 200 and summary["status"] == "complete", summary
    assert summary["events_expired"] == 1
    assert stack.steps() == ["begin", "merge", "promote", "prune", "summaries"]
    machine = stack.jobs.runner._machines["consolidate"]
    executions = stack.jobs.sfn.list_executions(stateMachineArn=machine)["executions"]
    assert [e["status"] for e in executions] == ["SUCCEEDED"]
    assert after["is_running"] is False and after["last_run_at"] and after["enabled"] is True
    brain = stack.brain()
    expired = stack.core.memories.record(brain, stale).memory
    assert expired is not None and expired.expired_at is not None
    alive = stack.core.memories.record(brain, kept).memory
    assert alive is not None and alive.expired_at is None


def test_mcp_brain_store_and_search_and_memory_search_see_one_brain(stack: Stack) -> None:
    made, found = mcp_session(
        stack,
        "/mcp/zengram",
        [
            (
                "brain_store",
                {"type": "decision", "content": "We chose PostgreSQL for billing", "source_agent": "a1"},
            ),
            ("brain_search", {"query": "postgresql billing"}),
        ],
    )
    memory = text_of(made)
    assert memory["deduplicated"] is False
    assert text_of(found)["results"][0]["id"] == memory["id"]
    assert text_of(found)["results"][0]["content"] == "We chose PostgreSQL for billing"

    brain = stack.brain()
    (hits,) = mcp_session(
        stack, "/mcp", [("memory_search", {"brain": brain.slug, "query": "postgresql billing"})]
    )
    paths = [h["path"] for h in hits["structuredContent"]["hits"] if "PostgreSQL for billing" in h["content"]]
    assert paths == [f"memories/decision/{memory['id']}.md"]
    # and the zengram HTTP API serves the same memory
    _, over_http = z(stack, "GET", "/memory/search", q="postgresql billing", type="decision")
    assert ids(over_http) == [memory["id"]]


def test_a_store_and_a_search_read_what_they_already_read_no_more(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB requests of one superseding store and one search, each a request through the API
    function: the text's claim is read once (the duplicate check's read is the version the commit
    takes), the new memory's path twice (the write's own read is the one its retry compares; after
    its entity links, whether its text is still the one linked: services/memory/mention_links.py), the
    superseded memory once, where a fact is stored (no read of its id's pointer; the commit hands
    the index what it wrote of it: no second read of its record, none of its index intent), and
    the brain a search chose from its tenant's listing is not read again to check its hits. The
    totals are a budget: a change that adds reads to these paths shows here."""
    old_id = stored(stack, type="fact", content="Deploys run on Fridays.", key="deploy-day")
    sent = dynamodb_requests(monkeypatch)
    new_id = stored(stack, type="fact", content="Deploys run on Thursdays.", key="deploy-day")
    gets = [key for op, key in sent if op == "GetItem"]
    assert len([k for k in gets if " hash#" in k]) == 1
    assert len([k for k in gets if k.endswith(f"/{new_id}.md")]) == 2
    assert len([k for k in gets if k.endswith(f"/{old_id}.md")]) == 1
    assert not [k for k in gets if k.startswith("reindex#") or k.startswith(f"docid#{old_id}")], gets
    # the links check and the mark's own delete: 2 more; the memory counts' read and, after it, the
    # records the commit replaces (services/documents/memory_counts.py): 2 more
    assert len(sent) <= 21 and len(gets) <= 9, sent
    sent.clear()
    status, answer = z(stack, "GET", "/memory/search", q="which day do deploys run")
    assert status == 200 and answer["results"][0]["id"] == new_id
    assert not [k for op, k in sent if op == "GetItem" and k.startswith("brains ")], sent
    assert len(sent) <= 6, sent


def test_a_stats_call_reads_the_memory_counts_once(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """zengram's stats on DynamoDB: the counts' record says whether the counts and the creation-time
    entries are built, so one GetItem of it serves both (services/zengram/kept_stats.py)."""
    for n in range(3):
        stored(stack, type="fact", content=f"Pump {n} runs at {n + 2} bar.", key=f"pump-{n}")
    z(stack, "GET", "/stats")  # the first builds what a new brain's stats read
    sent = dynamodb_requests(monkeypatch)
    status, answer = z(stack, "GET", "/stats")
    assert status == 200 and answer["total_memories"] == 3
    counts = [key for op, key in sent if op == "GetItem" and key.endswith(" memory-counts")]
    print(f"stats: {len(sent)} DynamoDB requests, {len([1 for op, _ in sent if op == 'GetItem'])} GetItem")
    assert len(counts) == 1, sent
