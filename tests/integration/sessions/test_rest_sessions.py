"""/v1/brains/{brainId}/sessions in-process: the wire shapes, metadata never echoed, the refusals."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from tests.integration.rest.helpers import assert_problem, put

BASE = "/v1/brains/notes/sessions"
SESSION_KEYS = {"id", "brain_id", "title", "actor_id", "status", "created_at", "ended_at"}
MESSAGE_KEYS = {"id", "session_id", "role", "content", "created_at"}
CHUNK_KEYS = {
    "chunk_id", "document_id", "brain_id", "brain", "path", "title", "score", "content", "metadata",
    "component_scores", "highlights", "created_at", "updated_at",
}  # fmt: skip
OFFSET = re.compile(r"[+-]\d\d:\d\d$")


def _create(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(BASE, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _append(client: TestClient, sid: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"{BASE}/{sid}/messages", json=body)
    assert response.status_code == 201, response.text
    appended: dict[str, Any] = response.json()
    return appended


def test_create_returns_the_session_record(client: TestClient, brain: Brain) -> None:
    body = _create(client, title="Planning", actor_id="agent-1", metadata={"channel": "slack"})
    assert set(body) == SESSION_KEYS
    assert body["id"].startswith("ses_") and body["brain_id"] == brain.id
    assert (body["title"], body["actor_id"], body["status"], body["ended_at"]) == (
        "Planning",
        "agent-1",
        "open",
        None,
    )
    assert OFFSET.search(body["created_at"])
    assert _create(client)["title"] is None  # every field is optional
    by_id = client.post(f"/v1/brains/{brain.id}/sessions", json={})
    assert by_id.status_code == 201


def test_messages_are_returned_without_their_metadata(client: TestClient, brain: Brain) -> None:
    sid = _create(client)["id"]
    user = _append(
        client,
        sid,
        role="user",
        content="what did I watch?",
        metadata={"actor_id": "u1", "skip_extract": True},
    )
    tool = _append(
        client, sid, role="tool", content="[]", name="tv_history", metadata={"skip_extract": False}
    )
    assert set(user) == MESSAGE_KEYS and user["id"].startswith("msg_") and user["session_id"] == sid
    assert (user["role"], user["content"]) == ("user", "what did I watch?")
    assert set(tool) == MESSAGE_KEYS | {"name"} and tool["name"] == "tv_history"
    assert OFFSET.search(user["created_at"])

    got = client.get(f"{BASE}/{sid}")
    assert got.status_code == 200
    view = got.json()
    assert set(view) == {"session", "messages"} and set(view["session"]) == SESSION_KEYS
    assert view["messages"] == [user, tool]
    assert "skip_extract" not in got.text and "actor_id" not in str(view["messages"])


def test_close_sets_ended_at_once_and_refuses_later_messages(client: TestClient, brain: Brain) -> None:
    sid = _create(client)["id"]
    _append(client, sid, role="user", content="bye")
    closed = client.post(f"{BASE}/{sid}/close")
    assert closed.status_code == 200
    record = closed.json()
    assert set(record) == SESSION_KEYS and record["status"] == "closed" and OFFSET.search(record["ended_at"])
    assert client.post(f"{BASE}/{sid}/close").json() == record
    refused = assert_problem(
        client.post(f"{BASE}/{sid}/messages", json={"role": "user", "content": "x"}), 409, "conflict"
    )
    assert "closed" in refused["detail"]
    assert [m["content"] for m in client.get(f"{BASE}/{sid}").json()["messages"]] == ["bye"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"role": "user"},
        {"role": "robot", "content": "x"},
        {"role": "user", "content": ""},
        {"role": "user", "content": "x" * 1_000_001},
        {"role": "user", "content": "x", "name": "search"},
        {"role": "tool", "content": "x", "name": ""},
        {"role": "tool", "content": "x", "name": "n" * 129},
        {"role": "user", "content": "x", "metadata": {"deep": {"a": 1}}},
        {"role": "user", "content": "x", "metadata": "flat"},
        {"role": "user", "content": "x", "extra": 1},
    ],
)
def test_bad_messages_are_400_and_write_nothing(
    client: TestClient, brain: Brain, body: dict[str, Any]
) -> None:
    sid = _create(client)["id"]
    _append(client, sid, role="user", content="kept")
    assert_problem(client.post(f"{BASE}/{sid}/messages", json=body), 400, "validation_error")
    assert [m["content"] for m in client.get(f"{BASE}/{sid}").json()["messages"]] == ["kept"]


@pytest.mark.parametrize(
    "body",
    [
        {"title": ""},
        {"title": "t" * 513},
        {"actor_id": ""},
        {"actor_id": "ev\u0000il"},
        {"actor_id": "a\u202eb"},
        {"metadata": {"x": [1]}},
        {"status": "open"},
    ],
)
def test_bad_sessions_are_400(client: TestClient, brain: Brain, body: dict[str, Any]) -> None:
    assert_problem(client.post(BASE, json=body), 400, "validation_error")


@pytest.mark.parametrize("actor_id", ["ev\u0000il", "tab\tbed", "a\u202eb", "x" * 257])
def test_an_extraction_refuses_the_actor_ids_a_session_refuses(
    client: TestClient, brain: Brain, actor_id: str
) -> None:
    body = {"messages": [{"role": "user", "content": "I moved to Lisbon."}], "actor_id": actor_id}
    assert_problem(client.post("/v1/brains/notes/extract", json=body), 400, "validation_error")
    sid = _create(client)["id"]
    assert_problem(
        client.post("/v1/brains/notes/extract", json={**body, "session_id": sid}), 400, "validation_error"
    )
    assert client.get(f"{BASE}/{sid}").json()["messages"] == []  # nothing appended


def test_json_is_required(client: TestClient, brain: Brain) -> None:
    response = client.post(BASE, content=b"{}", headers={"Content-Type": "text/plain"})
    assert_problem(response, 415, "unsupported_media_type")


def test_unknown_sessions_and_other_brains_sessions_are_404(
    client: TestClient, container: Container, brain: Brain
) -> None:
    other = container.brains.create("Other", slug="other")
    foreign = container.sessions.create(other).id
    for sid in ("ses_nope", foreign):
        assert_problem(client.get(f"{BASE}/{sid}"), 404, "not_found")
        response = client.post(f"{BASE}/{sid}/messages", json={"role": "user", "content": "x"})
        assert_problem(response, 404, "not_found")
        assert_problem(client.post(f"{BASE}/{sid}/recall", json={"query": "x"}), 404, "not_found")
        assert_problem(client.post(f"{BASE}/{sid}/close"), 404, "not_found")
    assert container.sessions.get(other, foreign)[1] == []
    assert_problem(client.post("/v1/brains/nobrain/sessions", json={}), 404, "not_found")


def test_recall_returns_chunks(client: TestClient, brain: Brain) -> None:
    put(client, "notes", "memory/global/tennis.md", b"# Tennis\nThe tennis match is on Sunday.")
    put(client, "notes", "memory/global/garden.md", b"# Garden\nWater the tomatoes.")
    put(client, "notes", "memory/project/p/plan.md", b"# Plan\nShip the plan on Monday.")
    sid = _create(client)["id"]
    _append(client, sid, role="user", content="which match? the tennis one")
    response = client.post(f"{BASE}/{sid}/recall", json={"query": "when is the match", "top_k": 2})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"chunks"} and len(body["chunks"]) == 2
    top = body["chunks"][0]
    assert set(top) == CHUNK_KEYS
    assert (
        top["path"] == "memory/global/tennis.md"
        and "Sunday" in top["content"]
        and top["brain_id"] == brain.id
    )
    scoped = client.post(
        f"{BASE}/{sid}/recall", json={"query": "when is the plan", "scope": "project"}
    ).json()["chunks"]
    assert [c["path"] for c in scoped] == ["memory/project/p/plan.md"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "x" * 4097},
        {"query": "x", "top_k": 0},
        {"query": "x", "top_k": 51},
        {"query": "x", "scope": "team"},
    ],
)
def test_bad_recalls_are_400(client: TestClient, brain: Brain, body: dict[str, Any]) -> None:
    sid = _create(client)["id"]
    assert_problem(client.post(f"{BASE}/{sid}/recall", json=body), 400, "validation_error")


def test_a_lone_surrogate_in_metadata_is_refused_and_stores_nothing(
    client: TestClient, brain: Brain, container: Container
) -> None:
    sid = _create(client)["id"]
    raw = {"Content-Type": "application/json"}  # the escape as a client sends it: JSON text, not UTF-8

    created = client.post(BASE, content=b'{"metadata":{"k":"\\udfff"}}', headers=raw)
    in_a_key = client.post(BASE, content=b'{"metadata":{"\\ud800":"v"}}', headers=raw)
    message = b'{"role":"user","content":"hi","metadata":{"actor_id":"\\ud800"}}'
    appended = client.post(f"{BASE}/{sid}/messages", content=message, headers=raw)

    for refused in (created, in_a_key, appended):
        assert_problem(refused, 400, "validation_error")
        assert "surrogate" in refused.json()["detail"]
    assert client.get(f"{BASE}/{sid}").json()["messages"] == []
    heads = [item for item in container.erasure.keyspace.sessions() if item.sk == "session"]
    assert len(heads) == 1  # the refused creates made none
