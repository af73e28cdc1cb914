"""zengram's export and import on Cairn: `GET /export` rows, filters and pages; `POST /export/import`
refusals that change nothing, per-record errors, duplicates, and a restore that keeps ids; and
the core's upsert of a memory stored with an id that already exists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput
from cairn.domain.models import MemoryType
from cairn.entrypoints.http import create_app
from cairn.ports.records import MAX_GET_MANY
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery
from cairn.services.zengram.validate import Refused, metadata_value
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_container

Z = "/zengram"
APPROVED = {"operator_approved": True}


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


@pytest.fixture
def client(container: Container) -> Iterator[TestClient]:
    with TestClient(create_app(container), base_url="http://localhost") as test_client:
        yield test_client


def store(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("source_agent", "claude-code")
    response = client.post(f"{Z}/memory", json=body)
    assert response.status_code in (200, 201), response.text
    return dict(response.json())


def tick(container: Container) -> None:
    clock = container.adapters.clock
    assert isinstance(clock, FakeClock)
    clock.advance(60)


def everything(client: TestClient) -> list[dict[str, Any]]:
    body = client.get(f"{Z}/export", params={"active_only": "false"}).json()
    return list(body["memories"])


def test_export_rows_filters_and_pages(container: Container, client: TestClient) -> None:
    first = store(client, type="fact", content="Acme runs WordPress", key="acme-stack", client_id="acme")
    tick(container)
    second = store(
        client, type="fact", content="Acme moved to Next.js 14", key="acme-stack", client_id="acme"
    )
    tick(container)
    event = store(client, type="event", content="Deployed the Acme site", source_agent="deploy-bot",
                  metadata={"run": 7})  # fmt: skip
    tick(container)
    store(client, type="decision", content="Globex picked Postgres", client_id="globex")

    default = client.get(f"{Z}/export").json()
    history = client.get(f"{Z}/export", params={"active_only": "false"}).json()
    acme = client.get(f"{Z}/export", params={"client_id": "acme", "active_only": "false"}).json()
    facts = client.get(f"{Z}/export", params={"type": "fact"}).json()
    page = client.get(f"{Z}/export", params={"limit": "2", "offset": "1"}).json()
    clamped = client.get(f"{Z}/export", params={"limit": "0"}).json()
    huge = client.get(f"{Z}/export", params={"limit": "9" * 5000, "offset": "-" + "9" * 5000})
    bad_since = client.get(f"{Z}/export", params={"since": "last tuesday"})

    assert default["total"] == 3 and first["id"] not in {m["id"] for m in default["memories"]}
    assert [m["content"] for m in default["memories"]] == [
        "Globex picked Postgres", "Deployed the Acme site", "Acme moved to Next.js 14",
    ]  # fmt: skip
    assert default["filters"] == {"client_id": None, "type": None, "since": None, "active_only": True}
    assert default["limit"] == 1000 and default["offset"] == 0 and default["has_more"] is False
    assert default["exported_at"].endswith("Z")
    row = next(m for m in default["memories"] if m["id"] == event["id"])
    assert {
        "id", "content", "type", "key", "subject", "client_id", "knowledge_category", "category",
        "source_agent", "importance", "confidence", "access_count", "active", "supersedes",
        "superseded_by", "superseded_at", "deleted_at", "deletion_reason", "entities", "created_at",
        "last_accessed_at", "valid_from", "valid_to", "observed_by", "observation_count",
        "consolidated", "metadata", "content_hash",
    } <= set(row)  # fmt: skip
    assert row["metadata"] == {"run": 7} and row["observed_by"] == ["deploy-bot"]
    assert {"name": "deploy-bot", "type": "agent"} in row["entities"]
    assert history["total"] == 4
    old = next(m for m in history["memories"] if m["id"] == first["id"])
    assert old["active"] is False and old["superseded_by"] == second["id"]
    assert {m["id"] for m in acme["memories"]} == {first["id"], second["id"]}
    assert [m["id"] for m in facts["memories"]] == [second["id"]]
    assert page["limit"] == 2 and page["offset"] == 1 and len(page["memories"]) == 2
    assert page["has_more"] is False and page["memories"][0]["content"] == "Deployed the Acme site"
    assert clamped["limit"] == 1000  # parseInt("0") || 1000, as zengram reads it
    assert huge.status_code == 200 and huge.json()["limit"] == 5000 and huge.json()["offset"] == 0
    assert bad_since.status_code == 400
    assert bad_since.json()["error"] == "Invalid since parameter — must be an ISO 8601 timestamp"


@pytest.mark.parametrize(
    ("body", "query", "status", "error"),
    [
        ({"data": [{"type": "event", "content": "x"}]}, {}, 403,
         "operator_approved=true is required for import restores"),
        ({"data": [{"type": "event", "content": "x"}], "operator_approved": False}, {}, 403,
         "operator_approved=true is required for import restores"),
        (APPROVED, {}, 400, 'Request body must contain a "data" array of memory objects'),
        ({**APPROVED, "data": {"type": "event"}}, {}, 400,
         'Request body must contain a "data" array of memory objects'),
        ({**APPROVED, "data": [{"type": "event", "content": f"m{i}"} for i in range(501)]}, {}, 400,
         "Import limited to 500 records per request (received 501)"),
    ],
)  # fmt: skip
def test_refused_imports_change_nothing(
    client: TestClient, body: dict[str, Any], query: dict[str, str], status: int, error: str
) -> None:
    store(client, type="event", content="the brain exists")
    before = everything(client)

    response = client.post(f"{Z}/export/import", json=body, params=query)

    assert response.status_code == status and response.json() == {"error": error}
    assert everything(client) == before


def test_import_counts_errors_and_duplicates_and_keeps_ids(client: TestClient) -> None:
    existing = store(client, type="fact", content="Acme runs WordPress", key="acme-stack", client_id="acme")
    records = [
        {"id": "restored-1", "type": "decision", "content": "We chose Postgres for billing",
         "source_agent": "planner", "importance": "high", "metadata": {"ticket": "B-1"}},
        {"id": "restored-2", "text": "Deploys are green", "type": "status", "subject": "deploys",
         "status_value": "green"},
        {"type": "fact", "content": "Acme runs WordPress", "client_id": "acme", "key": "acme-stack"},
        {"content": "an event by default, from an unnamed agent"},
        {"type": "rumour", "content": "x"},
        {"type": "event"},
        {"type": "event", "content": "x", "importance": "urgent"},
        {"type": "event", "content": "bad confidence", "confidence": "high"},
        {"id": "../escape", "type": "event", "content": "a path in an id"},
        {"id": existing["id"], "type": "event", "content": "an id of a fact, as an event"},
        "not an object",
        {"type": "event", "content": "see <tool_call>x</tool_call> in an old note"},
    ]  # fmt: skip

    response = client.post(f"{Z}/export/import", json={"data": records}, params={"operator_approved": "true"})

    assert response.status_code == 200 and response.json() == {"imported": 4, "skipped": 1, "errors": 7}
    rows = {m["id"]: m for m in everything(client)}
    assert rows["restored-1"]["content"] == "We chose Postgres for billing"
    assert rows["restored-1"]["source_agent"] == "planner" and rows["restored-1"]["importance"] == "high"
    assert rows["restored-1"]["metadata"] == {"ticket": "B-1"}
    assert rows["restored-2"]["subject"] == "deploys" and rows["restored-2"]["status_value"] == "green"
    unnamed = next(m for m in rows.values() if m["content"].startswith("an event by default"))
    assert unnamed["type"] == "event" and unnamed["source_agent"] == "import"
    assert rows[existing["id"]]["type"] == "fact" and rows[existing["id"]]["content"] == "Acme runs WordPress"
    assert len(rows) == 5
    found = client.get(f"{Z}/memory/search", params={"q": "Postgres billing"}).json()
    assert found["results"][0]["id"] == "restored-1"


def test_round_trip_into_a_fresh_brain_keeps_ids_texts_and_search(tmp_path: Path) -> None:
    source, target = fake_container(tmp_path / "a"), fake_container(tmp_path / "b")
    with TestClient(create_app(source), base_url="http://localhost") as a:
        store(a, type="fact", content="Acme runs WordPress", key="acme-stack", client_id="acme")
        tick(source)
        store(a, type="fact", content="Acme moved to Next.js 14", key="acme-stack", client_id="acme")
        tick(source)
        store(a, type="decision", content="We chose Postgres for billing", source_agent="planner")
        tick(source)
        gone = store(a, type="event", content="A deploy that was rolled back")
        a.request("DELETE", f"{Z}/memory/{gone['id']}", json={"reason": "rolled back"})
        dump = a.get(f"{Z}/export", params={"active_only": "false"}).json()["memories"]
        current = a.get(f"{Z}/export").json()["memories"]
    with TestClient(create_app(target), base_url="http://localhost") as b:
        restored = b.post(f"{Z}/export/import", json={"data": dump, **APPROVED}).json()
        again = b.post(f"{Z}/export/import", json={"data": current, **APPROVED}).json()
        back = b.get(f"{Z}/export", params={"active_only": "false"}).json()["memories"]
        live = b.get(f"{Z}/export").json()["memories"]
        found = b.get(f"{Z}/memory/search", params={"q": "what does acme run", "client_id": "acme"}).json()
        facts = b.get(f"{Z}/memory/query", params={"type": "facts", "key": "acme"}).json()

    assert restored == {"imported": 4, "skipped": 0, "errors": 0}
    assert again == {"imported": 0, "skipped": 2, "errors": 0}  # each is a duplicate of itself now
    assert {m["id"]: m["content"] for m in back} == {m["id"]: m["content"] for m in dump}
    assert {m["id"] for m in live} == {m["id"] for m in current}
    deleted = next(m for m in back if m["id"] == gone["id"])
    assert deleted["active"] is False and deleted["deletion_reason"] == "rolled back"
    newest = next(m for m in current if m["content"] == "Acme moved to Next.js 14")
    assert found["results"][0]["id"] == newest["id"]
    assert [r["value"] for r in facts["results"]] == ["Acme moved to Next.js 14"]


def test_a_restore_after_deleting_brings_the_same_ids_back(client: TestClient) -> None:
    made = [store(client, type="decision", content=f"decision number {i} about caching") for i in range(3)]
    dump = client.get(f"{Z}/export").json()["memories"]
    for m in made:
        client.request("DELETE", f"{Z}/memory/{m['id']}", json={})
    emptied = client.get(f"{Z}/export").json()["total"]

    restored = client.post(f"{Z}/export/import", json={"data": dump, **APPROVED}).json()
    live = client.get(f"{Z}/export").json()["memories"]
    found = client.get(f"{Z}/memory/search", params={"q": "decision number 2 caching"}).json()

    assert emptied == 0 and restored == {"imported": 3, "skipped": 0, "errors": 0}
    assert {m["id"] for m in live} == {m["id"] for m in made}
    assert found["results"][0]["id"] == made[2]["id"]


# -- the core: a memory stored with an id that exists -------------------------------------------


def test_store_with_an_existing_id_upserts_that_memory(container: Container) -> None:
    brain = container.brains.create("Shared Brain", visibility="tenant")
    memories = container.memories
    first = memories.store(
        brain, MemoryInput(MemoryType.fact, "Acme runs Ghost", memory_id="fact-1", key="cms")
    )
    tick(container)
    again = memories.store(
        brain, MemoryInput(MemoryType.fact, "Acme runs Hugo now", memory_id="fact-1", key="cms")
    )

    docs = list(memories.of_type(brain, [MemoryType.fact]))
    hugo = memories.search(brain, "Hugo", MemoryQuery(count_access=False))
    ghost = memories.search(brain, "Ghost", MemoryQuery(count_access=False, include_superseded=True))
    recent = memories.since(brain, first.memory.created_at, limit=10)

    assert first.memory.id == again.memory.id == "fact-1" and again.supersedes is None
    assert [d.id for d in docs] == ["fact-1"] and memories.text(docs[0]) == "Acme runs Hugo now"
    assert docs[0].memory is not None and docs[0].memory.current
    assert [h.memory.id for h in hugo] == ["fact-1"]
    assert all("Ghost" not in h.text for h in ghost)
    assert [d.id for d in recent] == ["fact-1"]  # one entry, however often it was written


def test_a_kept_id_never_takes_over_another_document(container: Container, tmp_path: Path) -> None:
    brain = container.brains.create("Shared Brain", visibility="tenant")
    other = container.brains.create("Other", visibility="tenant")
    memories = container.memories
    fact = memories.store(brain, MemoryInput(MemoryType.fact, "Acme runs Ghost", key="cms")).memory
    before = sorted(d.id for d in memories.of_type(brain, list(MemoryType)))

    refusals = [
        MemoryInput(MemoryType.event, "same id, another type", memory_id=fact.id),
        MemoryInput(MemoryType.fact, "another brain's id", memory_id=fact.id, key="cms"),
        MemoryInput(MemoryType.event, "a path", memory_id="../../x"),
        MemoryInput(MemoryType.event, "empty", memory_id=""),
    ]
    for i, m in enumerate(refusals):
        with pytest.raises(InvalidInput):
            memories.store(other if i == 1 else brain, m)

    assert sorted(d.id for d in memories.of_type(brain, list(MemoryType))) == before
    assert list(memories.of_type(other, list(MemoryType))) == []
    assert memories.text(memories.get(brain, fact.id)) == "Acme runs Ghost"


def test_a_history_of_values_comes_back_whole_and_true_at_each_time(tmp_path: Path) -> None:
    # Given a key's values: two stated from the same instant (the first replaced, true for no
    # time), one stored after as history, and the current one
    source, target = fake_container(tmp_path / "a"), fake_container(tmp_path / "b")
    values = [("2024", "Frankfurt"), ("2024", "Dublin"), ("2022", "Lisbon"), ("2026", "Oslo")]
    with TestClient(create_app(source), base_url="http://localhost") as a:
        for year, city in values:
            store(a, type="fact", content=f"the Acme database lives in {city}", key="acme-db",
                  valid_from=f"{year}-01-01T00:00:00Z")  # fmt: skip
            tick(source)
        dump = a.get(f"{Z}/export", params={"active_only": "false"}).json()["memories"]
    # When it is restored into a fresh brain
    with TestClient(create_app(target), base_url="http://localhost") as b:
        restored = b.post(f"{Z}/export/import", json={"data": dump, **APPROVED}).json()
        back = b.get(f"{Z}/export", params={"active_only": "false"}).json()["memories"]

        def then(day: str) -> list[str]:
            found = b.get(
                f"{Z}/memory/search", params={"q": "Acme database", "at_time": day, "read_only": "true"}
            )
            return [r["content"] for r in found.json()["results"]]

        # Then nothing is lost, each keeps its interval, and each time has its one value
        assert restored == {"imported": 4, "skipped": 0, "errors": 0}
        assert {(m["content"], m["valid_from"], m["valid_to"]) for m in back} == {
            (m["content"], m["valid_from"], m["valid_to"]) for m in dump
        }
        assert then("2023-06-01") == ["the Acme database lives in Lisbon"]
        assert then("2025-06-01") == ["the Acme database lives in Dublin"]
        assert then("2026-06-01") == ["the Acme database lives in Oslo"]


@pytest.mark.parametrize("out_of_order", [False, True])
def test_a_value_whose_successor_was_deleted_comes_back_superseded(
    tmp_path: Path, out_of_order: bool
) -> None:
    # Given a key's two values, the later-starting one stored first when out of order, and the
    # current one then deleted: no value is current, the other stays superseded
    source, target = fake_container(tmp_path / "a"), fake_container(tmp_path / "b")
    values = [("2024", "Frankfurt"), ("2026", "Oslo")]
    with TestClient(create_app(source), base_url="http://localhost") as a:
        made = {}
        for year, city in reversed(values) if out_of_order else values:
            made[city] = store(a, type="fact", content=f"the Acme database lives in {city}", key="acme-db",
                               valid_from=f"{year}-01-01T00:00:00Z")  # fmt: skip
            tick(source)
        a.request("DELETE", f"{Z}/memory/{made['Oslo']['id']}", json={})
        dump = a.get(f"{Z}/export", params={"active_only": "false"}).json()["memories"]

    def told(c: TestClient) -> list[Any]:
        def found(**q: str) -> list[str]:
            got = c.get(f"{Z}/memory/search", params={"q": "Acme database", "read_only": "true", **q})
            return sorted(r["content"] for r in got.json()["results"])

        rows = c.get(f"{Z}/export", params={"active_only": "false"}).json()["memories"]
        values = sorted((m["content"], m["active"], m["valid_from"], m["valid_to"]) for m in rows)
        return [values, found(), found(at_time="2025-06-01"), found(at_time="2026-06-01")]

    with TestClient(create_app(source), base_url="http://localhost") as a:
        before = told(a)
    # When it is restored into a fresh brain
    with TestClient(create_app(target), base_url="http://localhost") as b:
        restored = b.post(f"{Z}/export/import", json={"data": dump, **APPROVED}).json()
        after = told(b)
    # Then the same value is current (none), and each time has the same answer
    assert restored == {"imported": 2, "skipped": 0, "errors": 0}
    assert before[1] == [] and before[2] == ["the Acme database lives in Frankfurt"]
    assert after == before


def test_a_record_the_store_refuses_is_one_error_and_the_rest_still_import(client: TestClient) -> None:
    records = [
        {"content": "first record imported", "type": "fact", "created_at": "2020-01-01T00:00:00Z"},
        {
            "content": "an id too long to look up",
            "type": "fact",
            "id": "mem_" + "x" * 3000,
            "created_at": "2021-01-01T00:00:00Z",
        },
        {"content": "third record imported", "type": "fact", "created_at": "2022-01-01T00:00:00Z"},
    ]
    answer = client.post(f"{Z}/export/import", json={"data": records, **APPROVED})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"imported": 2, "skipped": 0, "errors": 1}


def test_metadata_numbers_must_be_finite(client: TestClient) -> None:
    made = store(client, type="fact", content="Acme runs Postgres", key="acme-db")
    body = '{"metadata": {"a": NaN}}'  # Python's parser reads it; JSON has no NaN
    answer = client.request(
        "PATCH", f"{Z}/memory/{made['id']}", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400
    assert client.get(f"{Z}/memory/{made['id']}").json().get("metadata") in (None, {})
    with pytest.raises(Refused, match="metadata numbers must be finite"):  # over stdio, say
        metadata_value({"a": float("inf")})


def test_one_export_page_holds_more_memories_than_one_store_read_takes(client: TestClient) -> None:
    count = MAX_GET_MANY + 100
    records = [{"type": "event", "content": f"Standup note {n}: nothing blocked"} for n in range(count)]
    for start in range(0, count, 500):  # zengram's import takes 500 at a time
        part = {"data": records[start : start + 500]}
        imported = client.post(f"{Z}/export/import", json=part, params={"operator_approved": "true"})
        assert imported.status_code == 200, imported.text

    page = client.get(f"{Z}/export", params={"limit": "5000", "active_only": "false"})

    assert page.status_code == 200, page.text
    assert len(page.json()["memories"]) == count


def test_an_export_names_a_memory_whose_stored_text_is_damaged(
    container: Container, client: TestClient
) -> None:
    damaged = store(client, type="fact", content="Acme runs WordPress", key="acme-stack", client_id="acme")
    doc = container.documents.repo.get_by_id(damaged["id"])
    assert doc is not None
    sound = store(client, type="fact", content="Acme hosts on Fly", key="acme-host", client_id="acme")
    container.adapters.blobs.put(doc.blob_key, b"")

    exported = client.get(f"{Z}/export")

    assert exported.status_code == 200  # the others exported; the damaged one named, not dropped silently
    assert [m["id"] for m in exported.json()["memories"]] == [sound["id"]]
    assert exported.json()["unreadable"] == [{"id": doc.id, "path": doc.path, "code": "damaged_content"}]
