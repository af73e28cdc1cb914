"""zengram's `POST /reflect` and `POST /research` on Cairn, through the Generator port: offline with
the extractive generator (said to be extractive; nothing synthesised), and with a scripted model
whose JSON carries a fabricated citation, which is stripped."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from cairn.ports.generator import Answer, GenerationError, GenerationEvent, Passage, collect
from cairn.services.memory.entity_llm import PROMPT as ENTITY_PROMPT
from tests.fakes.container import fake_adapters, fake_container
from tests.fakes.generator import ScriptedGenerator

Z = "/zengram"
CITED = r"\[mem:[^\]]+\]"


class Replies:
    """A model that answers each call with the next scripted reply (ScriptedGenerator each)."""

    def __init__(self, *replies: str | BaseException, model_id: str = "llama-test") -> None:
        self.replies = list(replies)
        self.model_id = model_id
        self.calls: list[tuple[str, list[Passage]]] = []

    def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        if question == ENTITY_PROMPT:  # entity extraction at store time: no entities, not counted
            return ScriptedGenerator.answer("[]").stream(question, passages)
        self.calls.append((question, list(passages)))
        reply = self.replies.pop(0)
        script = (
            ScriptedGenerator(reply) if isinstance(reply, BaseException) else ScriptedGenerator.answer(reply)
        )
        return script.stream(question, passages)

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))


def with_model(tmp_path: Path, model: Any, **settings: Any) -> Container:
    adapters = fake_adapters()
    adapters.generator = model
    return build_container(Settings(data_dir=tmp_path / "data", generator="openai", **settings), adapters)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(
        create_app(fake_container(tmp_path, zengram_research_enabled=True)), base_url="http://localhost"
    ) as test_client:
        yield test_client


def store(client: TestClient, **body: Any) -> str:
    body.setdefault("source_agent", "claude-code")
    response = client.post(f"{Z}/memory", json=body)
    assert response.status_code in (200, 201), response.text
    return str(response.json()["id"])


def seed(client: TestClient) -> dict[str, str]:
    acme = {"client_id": "acme"}
    return {
        "old": store(client, type="fact", content="The API cache uses Memcached.", key="api-cache", **acme),
        "new": store(
            client,
            type="fact",
            content="The API cache moved to Redis for persistence.",
            key="api-cache",
            **acme,
        ),
        "decision": store(
            client,
            type="decision",
            content="We replaced Memcached with Redis for the API cache.",
            source_agent="architect",
            **acme,
        ),
        "status": store(
            client,
            type="status",
            content="The API is degraded after the cache migration.",
            subject="api",
            status_value="degraded",
            **acme,
        ),
        "other": store(
            client, type="event", content="Globex renewed its support contract.", client_id="globex"
        ),
    }


def ids(text: str) -> list[str]:
    import re

    return re.findall(r"\[mem:([^\]]+)\]", text)


# -- reflect, offline ------------------------------------------------------------------------------


def test_reflect_offline_quotes_cites_and_says_it_is_extractive(client: TestClient) -> None:
    m = seed(client)

    body = client.post(
        f"{Z}/reflect", json={"topic": "API cache Redis migration", "client_id": "acme"}
    ).json()

    r = body["reflection"]
    assert body["topic"] == "API cache Redis migration" and body["client_id"] == "acme"
    assert body["llm"] == {"provider": "extractive", "model": "extractive"}
    assert body["memories_analyzed"] == 3  # acme's current memories: not globex's, not the superseded fact
    assert r["summary"].startswith("Extractive summary of 3 memories, quoted without a language model")
    assert '"The API cache moved to Redis for persistence."' in r["summary"]
    retrieved = {m["new"], m["decision"], m["status"], m["old"]}
    every = [r["summary"], *r["patterns"], *r["timeline"], *r["contradictions"], *r["gaps"]]
    assert all(set(ids(e)) <= retrieved for e in every)
    assert set(body["cited_memory_ids"]) == {i for e in every for i in ids(e)}
    assert m["other"] not in body["cited_memory_ids"]
    for entry in [*r["patterns"], *r["timeline"], *r["contradictions"]]:
        assert entry.rstrip().endswith("]") and ids(entry), entry
    assert [ids(t)[0] for t in r["timeline"]] == [m["new"], m["decision"], m["status"]]  # oldest first
    assert r["timeline"][0].split(" ")[1] == "fact:"
    assert "3 of 3 memories are about client acme" in " ".join(r["patterns"])
    (conflict,) = r["contradictions"]
    assert conflict.startswith('fact key "api-cache" has differing values')
    assert ids(conflict) == [m["old"], m["new"]] and "(superseded)" in conflict and "(current)" in conflict
    assert "No decision about this topic is recorded." not in r["gaps"]


def test_reflect_with_nothing_found_and_bad_input(client: TestClient) -> None:
    store(client, type="event", content="Globex renewed its support contract.", client_id="globex")

    empty = client.post(f"{Z}/reflect", json={"topic": "billing", "client_id": "initech"}).json()
    missing = client.post(f"{Z}/reflect", json={"topic": "  "})
    number = client.post(f"{Z}/reflect", json={"topic": "x", "client_id": 7})
    markup = client.post(f"{Z}/reflect", json={"topic": "<tool_call>x"})

    assert empty == {
        "topic": "billing",
        "client_id": "initech",
        "memories_analyzed": 0,
        "reflection": {
            "summary": "No relevant memories found for this topic.",
            "patterns": [],
            "timeline": [],
            "contradictions": [],
            "gaps": ["No memories exist about this topic — consider storing foundational context."],
        },
        "llm": None,
    }
    assert missing.status_code == 400 and missing.json() == {"error": "topic is required (non-empty string)"}
    assert number.status_code == 400 and number.json() == {
        "error": "client_id must be a string when provided"
    }
    assert markup.status_code == 400 and "tool-call control markup" in markup.json()["error"]


def test_reflect_needs_only_read_access(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token="owner")
    reader = container.keys.create(name="r", tenant="local", scopes=["documents:read"]).plaintext
    with TestClient(create_app(container), base_url="http://localhost") as client:
        made = client.post(
            f"{Z}/memory",
            json={"type": "event", "content": "Shipped the cache", "source_agent": "a"},
            headers={"Authorization": "Bearer owner"},
        )
        read = client.post(f"{Z}/reflect", json={"topic": "cache"}, headers={"x-api-key": reader})
        write = client.post(
            f"{Z}/export/import", json={"data": [], "operator_approved": True}, headers={"x-api-key": reader}
        )

    assert made.status_code == 201
    assert read.status_code == 200 and read.json()["memories_analyzed"] == 1
    assert write.status_code == 403


# -- reflect, with a model ------------------------------------------------------------------------


def test_reflect_with_a_model_strips_fabricated_citations(tmp_path: Path) -> None:
    reply = json.dumps(
        {
            "summary": "The cache moved to Redis [mem:{new}] after Memcached [mem:mem_fabricated].",
            "patterns": ["Cache changes follow incidents [mem:{status}][mem:mem_made_up]"],
            "timeline": [{"date": "2026-01", "event": "Redis adopted [mem:{decision}]"}],
            "contradictions": [],
            "gaps": ["Who owns the cache? [mem:nope]"],
        }
    )
    model = Replies("placeholder")
    container = with_model(tmp_path, model)
    with TestClient(create_app(container), base_url="http://localhost") as client:
        m = seed(client)
        model.replies = [reply.replace("{new}", m["new"]).replace("{status}", m["status"])
                         .replace("{decision}", m["decision"])]  # fmt: skip
        body = client.post(f"{Z}/reflect", json={"topic": "API cache", "limit": 3}).json()

    r = body["reflection"]
    assert r["summary"] == f"The cache moved to Redis [mem:{m['new']}] after Memcached."
    assert r["patterns"] == [f"Cache changes follow incidents [mem:{m['status']}]"]
    assert r["timeline"] == [f"2026-01 — Redis adopted [mem:{m['decision']}]"]
    assert r["gaps"] == ["Who owns the cache?"]
    assert body["cited_memory_ids"] == [m["new"], m["status"], m["decision"]]
    assert body["llm"] == {"provider": "openai", "model": "llama-test"} and body["memories_analyzed"] == 3
    question, passages = model.calls[0]
    assert "JSON" in question and "API cache" in question
    assert len(passages) == 3 and all(p.text.startswith(f"[mem:{p.document_id}] type=") for p in passages)


@pytest.mark.parametrize(
    ("reply", "status", "body"),
    [
        ("The cache is Redis.", 502, {"error": "LLM returned invalid JSON response"}),
        ("[1, 2]", 502, {"error": "LLM returned invalid JSON response"}),
        (GenerationError("generation_timeout", "the model server timed out"), 503,
         {"error": "llm_unavailable", "message": "The language model failed: the model server timed out"}),
    ],
)  # fmt: skip
def test_reflect_model_failures(tmp_path: Path, reply: Any, status: int, body: dict[str, Any]) -> None:
    model = Replies(reply)
    with TestClient(create_app(with_model(tmp_path, model)), base_url="http://localhost") as client:
        store(client, type="event", content="Shipped the cache")
        response = client.post(f"{Z}/reflect", json={"topic": "cache"})

    assert response.status_code == status and response.json() == body


def test_reflect_reads_a_fenced_json_reply(tmp_path: Path) -> None:
    model = Replies("placeholder")
    with TestClient(create_app(with_model(tmp_path, model)), base_url="http://localhost") as client:
        made = store(client, type="event", content="Shipped the cache")
        reply = json.dumps({"summary": f"Shipped [mem:{made}]", "patterns": "not a list"})
        model.replies = [f"```json\n{reply}\n```"]
        body = client.post(f"{Z}/reflect", json={"topic": "cache"}).json()

    assert body["reflection"]["summary"] == f"Shipped [mem:{made}]" and body["reflection"]["patterns"] == []


# -- research -------------------------------------------------------------------------------------


def test_research_is_off_unless_enabled(tmp_path: Path) -> None:
    with TestClient(create_app(fake_container(tmp_path)), base_url="http://localhost") as client:
        response = client.post(f"{Z}/research", json={"topic": "what does acme run?"})

    assert response.status_code == 503
    assert response.json() == {
        "error": "research_disabled",
        "message": "POST /research is disabled. Set RESEARCH_ENABLED=true to enable the agentic "
        "retrieval loop.",
    }


@pytest.mark.parametrize("name", ["RESEARCH_ENABLED", "CAIRN_ZENGRAM_RESEARCH_ENABLED"])
def test_zengrams_switch_and_cairns_turn_research_on(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The refusal tells zengram's operator to set RESEARCH_ENABLED: Cairn takes it as zengram does."""
    for either in ("RESEARCH_ENABLED", "CAIRN_ZENGRAM_RESEARCH_ENABLED"):
        monkeypatch.delenv(either, raising=False)
    assert Settings().zengram_research_enabled is False
    monkeypatch.setenv(name, "true")
    assert Settings().zengram_research_enabled is True


def test_research_offline_follows_the_missing_terms(client: TestClient) -> None:
    m = seed(client)
    store(client, type="event", content="Kubernetes rollout of the billing service finished.")

    body = client.post(
        f"{Z}/research",
        json={"topic": "What replaced Memcached, and did the Kubernetes rollout finish?",
              "max_iterations": 3},
    ).json()  # fmt: skip

    assert body["llm"] == {"provider": "extractive", "model": "extractive"}
    assert "extractive" in body["warning"]
    trace = body["query_trace"]
    assert trace[0]["query"].startswith("What replaced Memcached")
    assert body["iterations"] == len(trace) and body["iterations"] <= 3
    assert body["sufficiency"]["status"] == "SUFFICIENT" and body["partial"] is False
    assert body["memories_analyzed"] == trace[-1]["cumulative"]
    assert body["unresolved"] == []
    assert set(body["cited_memory_ids"]) >= {i for f in body["key_findings"] for i in ids(f)}
    assert m["decision"] in body["cited_memory_ids"]
    assert all(f.rstrip().endswith("]") for f in body["key_findings"])


def test_research_offline_says_what_is_missing(client: TestClient) -> None:
    seed(client)

    body = client.post(
        f"{Z}/research", json={"topic": "What replaced Memcached for zanzibar?", "max_iterations": 4}
    ).json()

    assert body["partial"] is True and body["sufficiency"]["status"] == "INSUFFICIENT"
    assert body["sufficiency"]["missing"] == ["zanzibar"] and body["unresolved"] == [
        "No memory found mentions: zanzibar"
    ]
    assert [t["query"] for t in body["query_trace"]][1:] == ["zanzibar"]  # then the query repeats: stop
    assert body["iterations"] == 2


def test_research_nothing_found_and_bad_input(client: TestClient) -> None:
    none = client.post(f"{Z}/research", json={"topic": "anything at all?", "max_iterations": 1}).json()
    floaty = client.post(f"{Z}/research", json={"topic": "x", "max_iterations": 1.5})
    missing = client.post(f"{Z}/research", json={})

    assert none["status"] == "no_memories" and none["answer"] == "No memories were found for this topic."
    assert none["partial"] is True and none["memories_analyzed"] == 0 and none["cited_memory_ids"] == []
    assert none["query_trace"] == [{"query": "anything at all?", "retrieved": 0, "cumulative": 0}]
    assert floaty.status_code == 400 and floaty.json() == {"error": "max_iterations must be an integer"}
    assert missing.status_code == 400 and missing.json() == {"error": "topic is required (non-empty string)"}


def test_research_with_a_model_loops_on_the_gap_and_strips_fabricated_citations(tmp_path: Path) -> None:
    model = Replies("placeholder")
    container = with_model(tmp_path, model, zengram_research_enabled=True)
    with TestClient(create_app(container), base_url="http://localhost") as client:
        m = seed(client)
        model.replies = [
            json.dumps({"status": "INSUFFICIENT", "reason": "the API state is missing",
                        "missing": ["current status of the API"]}),
            json.dumps({"status": "SUFFICIENT", "reason": "both hops found", "missing": []}),
            json.dumps({
                "answer": f"Redis replaced Memcached [mem:{m['decision']}]; the API is degraded "
                          f"[mem:{m['status']}] [mem:mem_invented].",
                "key_findings": [f"Redis is the cache [mem:{m['new']}]", "Made up [mem:ghost]"],
                "unresolved": [],
            }),
        ]  # fmt: skip
        body = client.post(
            f"{Z}/research", json={"topic": "Which decision changed the cache, and what state is the API in?"}
        ).json()

    assert (
        body["answer"]
        == f"Redis replaced Memcached [mem:{m['decision']}]; the API is degraded [mem:{m['status']}]."
    )
    assert body["key_findings"] == [f"Redis is the cache [mem:{m['new']}]", "Made up"]
    assert body["cited_memory_ids"] == [m["decision"], m["status"], m["new"]]
    assert body["partial"] is False and body["iterations"] == 2
    assert [t["query"] for t in body["query_trace"]] == [
        "Which decision changed the cache, and what state is the API in?",
        "current status of the API",
    ]
    assert body["sufficiency"] == {"status": "SUFFICIENT", "reason": "both hops found", "missing": []}
    assert body["llm"] == {"provider": "openai", "model": "llama-test"} and "warning" not in body
    assert len(model.calls) == 3


def test_research_with_a_model_bad_synthesis_is_502(tmp_path: Path) -> None:
    model = Replies("placeholder")
    container = with_model(tmp_path, model, zengram_research_enabled=True)
    with TestClient(create_app(container), base_url="http://localhost") as client:
        seed(client)
        model.replies = ["not json", "also not json"]  # a broken gate stops the loop; synthesis fails
        response = client.post(f"{Z}/research", json={"topic": "what is the API cache?", "max_iterations": 4})

    assert response.status_code == 502 and response.json() == {"error": "LLM returned invalid JSON synthesis"}
    assert len(model.calls) == 2


@pytest.mark.parametrize("limit", ["1e999", "-1e999", '"' + "9" * 5000 + '"', '"-' + "9" * 5000 + '"'])
def test_reflect_reads_numbers_past_any_bound_as_zengram_does(client: TestClient, limit: str) -> None:
    store(client, type="event", content="Globex renewed its support contract.", client_id="globex")
    raw = '{"topic": "Globex support contract", "limit": ' + limit + "}"
    answer = client.post(f"{Z}/reflect", content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text  # parseInt of Infinity is NaN: the default; digits clamp
    assert answer.json()["memories_analyzed"] == 1


def test_research_clamps_a_huge_iteration_count(client: TestClient) -> None:
    raw = '{"topic": "anything at all?", "max_iterations": "' + "9" * 5000 + '"}'
    answer = client.post(f"{Z}/research", content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "no_memories"
