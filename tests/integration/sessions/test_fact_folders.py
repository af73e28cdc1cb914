"""Each actor's facts have a folder of their own: names the folder's slug loses letters of
(`田中`, `佐藤`, `José`) get a digest after it, so erasing the agent scope of an agent named
`agent` or `jos` takes that agent's facts and nobody else's, even from a folder an earlier
release filed several actors' facts in."""

from __future__ import annotations

from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.ports.facts import FactDraft
from cairn.services.documents.inputs import DocumentInput
from cairn.services.memory.fact_memory import Provenance, fact_path, namespace

SAID = {
    "田中": "I moved to Lisbon.",
    "佐藤": "I moved to Osaka.",
    "agent": "I moved to Nairobi.",
    "jos": "I like jazz.",
}


def extract(client: TestClient, container: Container, actor: str, text: str) -> None:
    body = {"messages": [{"role": "user", "content": text}], "actor_id": actor}
    assert client.post("/v1/brains/notes/extract", json=body).status_code == 202
    container.jobs.run_pending()


def facts(container: Container, brain: Brain) -> dict[str, str]:
    return {
        d.path: str(d.metadata.get("actor_id"))
        for d in container.documents.documents(brain, "memory/agent/")
        if d.metadata.get("kind") == "fact"
    }


def test_actors_without_ascii_letters_never_share_an_agents_folder(
    client: TestClient, container: Container, brain: Brain
) -> None:
    for actor, text in {**SAID, "José": "I like tango."}.items():
        extract(client, container, actor, text)
    stored = facts(container, brain)
    folders = {a: {p.rsplit("/", 1)[0] for p, b in stored.items() if a == b} for a in stored.values()}
    assert len(folders) == 5 and all(len(f) == 1 for f in folders.values()), folders
    assert len({next(iter(f)) for f in folders.values()}) == 5, folders  # five folders
    assert folders["agent"] == {"memory/agent/agent"} and folders["jos"] == {"memory/agent/jos"}

    response = client.post("/v1/erasures", json={"kind": "any", "subject": "agent"})

    assert response.status_code == 200, response.text
    assert sorted(facts(container, brain).values()) == sorted(["田中", "佐藤", "jos", "José"])


def test_an_agent_scopes_erasure_leaves_other_actors_facts_of_its_old_folder(
    client: TestClient, container: Container, brain: Brain
) -> None:
    """Facts an earlier release filed in `memory/agent/agent/` for 田中: the agent `agent`'s scope
    erasure leaves them, 田中's erasure takes them, and 田中's new facts confirm them in place."""
    old = "memory/agent/agent/"
    for actor in ("田中", "agent"):
        meta = {"kind": "fact", "actor_id": actor, "origins": "ses_old", "source_ids": "m1"}
        container.documents.write(
            brain, fact_path(old, SAID[actor], actor), SAID[actor].encode(), DocumentInput(metadata=meta)
        )
    assert namespace("田中") != old and namespace("agent") == old

    draft = FactDraft(text=SAID["田中"], source_ids=("m2",), category="personal")
    stored = container.extraction.facts.store(brain, draft, Provenance("ses_new", ("m2",), "fake", "田中"))
    assert stored.outcome == "confirmed" and stored.document.path == fact_path(old, SAID["田中"], "田中")

    assert client.post("/v1/erasures", json={"kind": "agent_scope", "subject": "agent"}).status_code == 200
    assert list(facts(container, brain).values()) == ["田中"]
    assert client.post("/v1/erasures", json={"kind": "session_actor", "subject": "田中"}).status_code == 200
    assert facts(container, brain) == {}
