"""zengram's HTTP API under /zengram on Cairn: routes, statuses, bodies and messages as zengram's
wrapper expects them, `x-api-key` authentication, and bad input that changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container

Z = "/zengram"


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


@pytest.fixture
def client(container: Container) -> Iterator[TestClient]:
    with TestClient(create_app(container), base_url="http://localhost") as test_client:
        yield test_client


def store(client: TestClient, **body: Any) -> Any:
    body.setdefault("source_agent", "claude-code")
    return client.post(f"{Z}/memory", json=body)


def total(client: TestClient) -> int:
    response = client.get(f"{Z}/stats")
    return int(response.json()["total_memories"]) if response.status_code == 200 else 0


def test_health_is_open_and_names_the_service(client: TestClient) -> None:
    body = client.get(f"{Z}/health").json()
    assert body["status"] == "ok" and body["service"] == "zengram" and body["timestamp"].endswith("Z")


def test_store_dedupe_and_supersede(client: TestClient) -> None:
    first = store(client, type="fact", content="Acme runs WordPress", key="acme-stack", client_id="acme")
    again = store(client, type="fact", content="Acme runs WordPress", key="acme-stack", client_id="acme")
    second = store(
        client, type="fact", content="Acme moved to Next.js 14", key="acme-stack", client_id="acme"
    )
    unkeyed = store(client, type="fact", content="Acme likes blue")

    assert first.status_code == 201 and first.json()["deduplicated"] is False
    assert first.json()["stored_in"] == {"vector": True, "structured_db": True}
    assert len(first.json()["content_hash"]) == 16 and first.json()["supersedes"] is None
    assert again.status_code == 200 and again.json()["deduplicated"] is True
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["message"] == "Exact duplicate — returning existing memory"
    assert second.status_code == 201 and second.json()["supersedes"] == first.json()["id"]
    assert unkeyed.json()["warning"].startswith("Fact stored without key")
    facts = client.get(f"{Z}/memory/query", params={"type": "facts", "key": "ACME"}).json()
    assert facts["count"] == 1 and facts["results"][0]["value"] == "Acme moved to Next.js 14"
    assert facts["results"][0]["key"] == "acme-stack"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"content": "x"}, "type is required"),
        (
            {"type": "note", "content": "x"},
            "Invalid type: note. Must be one of: event, fact, decision, status",
        ),
        ({"type": "event"}, "content is required"),
        ({"type": "event", "content": "\u200b\ufeff\u200d" * 4}, "content is required"),  # nothing visible
        (
            {"type": "event", "content": "x" * 10_001},
            "content exceeds maximum length of 10000 characters (got 10001)",
        ),
        ({"type": "event", "content": "x", "source_agent": "has space"}, "Invalid source_agent"),
        ({"type": "event", "content": "x", "importance": "urgent"}, "Invalid importance: urgent"),
        ({"type": "event", "content": "x", "key": "k" * 129}, "key exceeds maximum length of 128"),
        ({"type": "event", "content": "x", "metadata": {"a": {"b": {"c": 1}}}}, "maximum nesting depth of 3"),
        ({"type": "event", "content": "x", "metadata": [1]}, "metadata must be a plain object"),
        (
            {"type": "event", "content": "see <tool_call>rm</tool_call>"},
            "content contains tool-call control markup",
        ),
        (
            {"type": "fact", "content": "x", "valid_from": "2026-02-01", "valid_to": "2026-01-01"},
            "valid_from must be before valid_to",
        ),
        ({"type": "fact", "content": "x", "valid_from": "yesterday"}, "Invalid valid_from"),
    ],
)
def test_bad_memories_are_refused_with_zengrams_message_and_change_nothing(
    client: TestClient, body: dict[str, Any], error: str
) -> None:
    store(client, type="event", content="the first memory makes the brain")
    before = total(client)

    response = client.post(f"{Z}/memory", json={"source_agent": "claude-code", **body})

    assert response.status_code == 400 and error in response.json()["error"], response.text
    assert total(client) == before
    assert "x-request-id" in response.headers


def test_nested_metadata_up_to_depth_three_is_kept(client: TestClient) -> None:
    made = store(client, type="event", content="with metadata", metadata={"a": {"b": 1}})
    assert made.status_code == 201
    full = client.get(f"{Z}/memory/search", params={"q": "with metadata", "format": "full"}).json()
    assert full["results"][0]["metadata"] == {"a": {"b": 1}}


def test_search_shapes_filters_and_plus_encoded_queries(client: TestClient) -> None:
    store(
        client,
        type="fact",
        content="Acme deploys with GitHub Actions every Friday",
        client_id="acme",
        key="ci",
    )
    store(client, type="event", content="Globex deployed the billing service", client_id="globex")

    compact = client.get(f"{Z}/memory/search?q=deploys+with+github&client_id=acme").json()
    index = client.get(f"{Z}/memory/search", params={"q": "deployed", "format": "index"}).json()
    full = client.get(f"{Z}/memory/search", params={"q": "deploys", "format": "full", "type": "fact"}).json()
    nothing = client.get(f"{Z}/memory/search", params={"q": "deploys", "client_id": "initech"}).json()
    missing = client.get(f"{Z}/memory/search")

    assert compact["query"] == "deploys with github" and compact["count"] >= 1
    row = compact["results"][0]
    assert set(row) == {"id", "score", "effective_score", "type", "content", "source_agent", "client_id",
                        "importance", "created_at", "brain"}  # fmt: skip
    assert row["client_id"] == "acme" and all(r["client_id"] == "acme" for r in compact["results"])
    assert set(index["results"][0]) == {"id", "effective_score", "type", "summary", "importance", "client_id",
                                        "created_at", "brain"}  # fmt: skip
    assert full["retrieval"]["multi_path"] is True and all(r["type"] == "fact" for r in full["results"])
    assert "text" in full["results"][0] and "confidence" in full["results"][0]
    assert nothing == {"query": "deploys", "count": 0, "results": []}
    assert missing.status_code == 400 and missing.json() == {"error": "Missing required query parameter: q"}


def test_superseded_memories_show_only_when_asked(client: TestClient) -> None:
    old = store(client, type="status", content="deploy pipeline is green", subject="deploy").json()["id"]
    store(client, type="status", content="deploy pipeline is red", subject="deploy")

    current = client.get(f"{Z}/memory/search", params={"q": "deploy pipeline"}).json()
    history = client.get(
        f"{Z}/memory/search", params={"q": "deploy pipeline", "include_superseded": "true"}
    ).json()

    assert old not in {r["id"] for r in current["results"]}
    assert old in {r["id"] for r in history["results"]}


def test_known_at_searches_what_was_held_then(client: TestClient, container: Container) -> None:
    green = store(client, type="status", content="deploy pipeline is green", subject="deploy").json()["id"]
    between = container.memories.record(container.brains.resolve(None), green).created_at.isoformat()
    red = store(client, type="status", content="deploy pipeline is red", subject="deploy").json()["id"]

    def found(**params: str) -> list[str]:
        body = client.get(f"{Z}/memory/search", params={"q": "deploy pipeline", **params}).json()
        return [r["id"] for r in body["results"]]

    assert found(known_at=between) == [green]  # red was not recorded yet
    assert found() == [red]
    bad = client.get(f"{Z}/memory/search", params={"q": "deploy", "known_at": "yesterday-ish"})
    assert bad.status_code == 400 and "known_at" in bad.text


def test_update_and_delete(client: TestClient) -> None:
    made = store(client, type="fact", content="Acme runs Ghost", key="cms").json()["id"]

    updated = client.patch(f"{Z}/memory/{made}", json={"importance": "critical", "content": "Acme runs Hugo"})
    empty = client.patch(f"{Z}/memory/{made}", json={"importance": ""})
    missing = client.patch(f"{Z}/memory/mem_nope", json={"importance": "low"})
    deleted = client.request("DELETE", f"{Z}/memory/{made}", json={"reason": "wrong"})
    again = client.request("DELETE", f"{Z}/memory/{made}", json={})

    assert updated.status_code == 200 and updated.json()["updated"] is True
    assert updated.json()["updated_fields"] == ["text", "content_hash", "entities", "importance"]
    assert empty.status_code == 400 and empty.json()["error"].startswith("Must provide at least one field")
    assert missing.status_code == 404 and missing.json() == {"error": "Memory not found"}
    assert deleted.json()["deleted"] is True and deleted.json()["deleted_at"].endswith("Z")
    assert again.json() == {"id": made, "already_inactive": True, "message": "Memory was already inactive"}


def test_a_note_another_surface_wrote_is_updated_and_deleted_by_the_id_search_shows(
    client: TestClient, container: Container
) -> None:
    from cairn.services.documents.inputs import DocumentInput

    store(client, type="event", content="the zengram brain exists")
    brain = container.brains.resolve(None)
    info = DocumentInput(title="Kettle", tags=["kitchen"], metadata={"source": "canonical"})
    container.documents.write(brain, "memory/global/kettle.md", b"The kettle descales on Fridays.", info)
    found = client.get(f"{Z}/memory/search", params={"q": "kettle descales"}).json()["results"][0]
    assert found["type"] == "note"

    weighed = client.patch(f"{Z}/memory/{found['id']}", json={"importance": "critical"})
    updated = client.patch(f"{Z}/memory/{found['id']}", json={"content": "The kettle descales on Mondays."})
    doc = container.documents.repo.get_by_id(found["id"])
    assert weighed.status_code == 400 and "no importance" in weighed.json()["error"]
    assert updated.status_code == 200 and updated.json()["updated_fields"] == ["text"]
    assert doc is not None and doc.memory is None and doc.title == "Kettle" and doc.tags == ["kitchen"]
    assert doc.metadata["source"] == "canonical"
    assert container.documents.read(brain, "memory/global/kettle.md") == b"The kettle descales on Mondays."
    again = client.get(f"{Z}/memory/search", params={"q": "kettle descales mondays"}).json()["results"]
    assert again[0]["id"] == found["id"] and again[0]["content"] == "The kettle descales on Mondays."

    headed = b"# Boiler\n\nThe boiler is serviced in October."
    container.documents.write(brain, "memory/global/boiler.md", headed)  # a title from its heading
    boiler = container.documents.repo.get(brain.id, "memory/global/boiler.md")
    assert boiler is not None and boiler.title == "Boiler"
    client.patch(f"{Z}/memory/{boiler.id}", json={"content": "# Heat pump\n\nServiced in May."})
    assert container.documents.repo.get_by_id(boiler.id).title == "Heat pump"  # type: ignore[union-attr]

    deleted = client.request("DELETE", f"{Z}/memory/{found['id']}", json={"reason": "wrong"})
    twice = client.request("DELETE", f"{Z}/memory/{found['id']}", json={})
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    assert twice.json()["already_inactive"] is True
    after = client.get(f"{Z}/memory/search", params={"q": "kettle descales"}).json()["results"]
    assert found["id"] not in [r["id"] for r in after]
    gone = client.patch(f"{Z}/memory/{found['id']}", json={"content": "back"})
    assert gone.status_code == 404 and gone.json() == {"error": "Memory not found"}


def test_a_page_updated_through_zengram_keeps_the_front_matter_it_was_not_shown(
    client: TestClient, container: Container
) -> None:
    store(client, type="event", content="the zengram brain exists")
    brain = container.brains.resolve(None)
    front = b"---\ntitle: Minerva Project\ntype: project\nowner_team: platform\n---\n"
    page = front + b"# Minerva\n\nThe zircon rewrite."
    container.documents.write(brain, "projects/minerva.md", page)  # as gbrain's brain_put stores a page
    found = client.get(f"{Z}/memory/search", params={"q": "zircon rewrite"}).json()["results"][0]
    assert found["content"] == "# Minerva\n\nThe zircon rewrite."  # shown without its front matter

    updated = client.patch(f"{Z}/memory/{found['id']}", json={"content": "# Minerva\n\nShipped in May."})
    kept = container.documents.read(brain, "projects/minerva.md")
    replaced = client.patch(f"{Z}/memory/{found['id']}", json={"content": "---\ntitle: Minerva\n---\nDone."})

    assert updated.status_code == 200 and replaced.status_code == 200
    assert kept == front + b"# Minerva\n\nShipped in May."
    assert container.documents.repo.get_by_id(found["id"]).title == "Minerva"  # type: ignore[union-attr]
    assert container.documents.read(brain, "projects/minerva.md") == b"---\ntitle: Minerva\n---\nDone."


def test_briefing_excludes_the_requesting_agent_unless_asked(client: TestClient) -> None:
    store(client, type="event", content="agent a shipped", source_agent="agent-a", importance="high")
    store(client, type="decision", content="agent b chose Postgres", source_agent="agent-b")

    since = "2000-01-01T00:00:00Z"
    for_a = client.get(f"{Z}/briefing", params={"since": since, "agent": "agent-a"}).json()
    everything = client.get(
        f"{Z}/briefing", params={"since": since, "agent": "agent-a", "include": "all"}
    ).json()
    summary = client.get(f"{Z}/briefing", params={"since": since, "format": "summary"}).json()
    missing = client.get(f"{Z}/briefing")

    assert [e["content"] for e in for_a["decisions"]] == ["agent b chose Postgres"] and for_a["events"] == []
    assert for_a["requesting_agent"] == "agent-a" and for_a["summary"]["total_in_period"] == 2
    assert [e["content"] for e in everything["events"]] == ["agent a shipped"]
    assert summary["top_decisions"][0]["headline"] == "agent b chose Postgres"
    assert missing.status_code == 400 and "example" in missing.json()


def test_stats_count_by_type_and_superseded(client: TestClient) -> None:
    store(client, type="fact", content="v1", key="k")
    store(client, type="fact", content="v2", key="k")
    store(client, type="event", content="e")

    stats = client.get(f"{Z}/stats").json()

    assert stats["total_memories"] == 3 and stats["active"] == 2 and stats["superseded"] == 1
    assert stats["by_type"] == {"event": 1, "fact": 2, "decision": 0, "status": 0}
    assert stats["decay_config"] == {"factor": 0.98, "affected_types": ["fact", "status"]}


def test_x_api_key_maps_onto_cairn_api_keys(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token="owner-token")
    key = container.keys.create(
        name="zengram", tenant="local", scopes=["documents:read", "documents:write", "brains:admin"]
    ).plaintext
    with TestClient(create_app(container), base_url="http://localhost") as client:
        missing = client.get(f"{Z}/stats")
        wrong = client.get(f"{Z}/stats", headers={"x-api-key": "nope", "x-request-id": "req-7"})
        made = store_with(client, key)
        health = client.get(f"{Z}/health")

    assert missing.status_code == 401 and missing.json() == {"error": "Missing API key"}
    assert wrong.status_code == 401 and wrong.json() == {"error": "Invalid API key"}
    assert len(missing.headers["x-request-id"]) == 36 and wrong.headers["x-request-id"] == "req-7"
    assert made.status_code == 201
    assert health.status_code == 200


def store_with(client: TestClient, key: str) -> Any:
    body = {"type": "event", "content": "stored with a key", "source_agent": "claude-code"}
    return client.post(f"{Z}/memory", json=body, headers={"x-api-key": key})


@pytest.mark.parametrize(
    "moment", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59.999999"]
)
def test_instants_at_the_ends_of_time_never_fail_a_later_read(client: TestClient, moment: str) -> None:
    # Given a fact valid from an instant an offset carries past the years datetime holds
    stored = store(client, type="fact", content="Acme runs MySQL", key="acme-db", valid_from=moment)
    assert stored.status_code == 201, stored.text
    # Then every read that shows it, and every query bounded by such an instant, answers
    params: dict[str, str] = {"q": "Acme", "format": "full", "include_superseded": "true"}
    assert client.get(f"{Z}/memory/search", params=params).status_code == 200
    assert client.get(f"{Z}/export", params={"active_only": "false"}).status_code == 200
    for name in ("at_time", "known_at"):
        assert client.get(f"{Z}/memory/search", params={"q": "Acme", name: moment}).status_code == 200
    assert client.get(f"{Z}/briefing", params={"since": moment}).status_code == 200
    assert client.get(f"{Z}/memory/query", params={"type": "fact", "since": moment}).status_code == 200


def test_a_thoughtmcp_users_memory_is_not_changed_through_zengram(
    client: TestClient, container: Container
) -> None:
    from cairn.services.thoughtmcp.models import NewMemory
    from cairn.services.thoughtmcp.recall import Filters

    brain = container.brains.create("ThoughtMCP", slug="t")
    made = container.thoughts.remember(
        brain, NewMemory("The shed key is under the blue pot", "u1", "s", "semantic")
    )
    memory_id = str(made["memoryId"])
    before = container.documents.content(container.documents.repo.get_by_id(memory_id))  # type: ignore[arg-type]

    changed = client.patch(f"{Z}/memory/{memory_id}", json={"content": "The shed key is in the drawer"})
    weighed = client.patch(f"{Z}/memory/{memory_id}", json={"importance": "critical"})

    assert changed.status_code == 400 and "update_memory" in changed.json()["error"]
    assert weighed.status_code == 400
    doc = container.documents.repo.get_by_id(memory_id)
    assert doc is not None and container.documents.content(doc) == before
    assert doc.memory is not None and doc.memory.content_hash is None
    hits, _ = container.thoughts.recall(
        brain, "u1", text="shed key", filters=Filters(min_strength=0.0), limit=5
    )
    assert [h.content for h in hits] == ["The shed key is under the blue pot"]


@pytest.mark.parametrize(
    ("limit", "search_count", "briefing_count"),
    [("0", 10, 12), ("", 10, 12), ("abc", 10, 12), ("3.9", 3, 3), ("4abc", 4, 4), (" 5", 5, 5), ("-3", 1, 1)],
)
def test_a_limit_is_read_as_zengrams_parse_int_or_default(
    client: TestClient, limit: str, search_count: int, briefing_count: int
) -> None:
    for n in range(12):
        assert (
            store(client, type="event", content=f"Deploy number {n} of the billing service").status_code
            == 201
        )
    found = client.get(f"{Z}/memory/search", params={"q": "billing deploy", "limit": limit})
    briefed = client.get(
        f"{Z}/briefing", params={"since": "2000-01-01T00:00:00Z", "agent": "nobody", "limit": limit}
    )

    assert found.status_code == briefed.status_code == 200, (found.text, briefed.text)
    assert found.json()["count"] == search_count  # 0 or unparsable: zengram's default 10
    assert len(briefed.json()["events"]) == briefing_count  # 0 or unparsable: the default 100 (all 12)
