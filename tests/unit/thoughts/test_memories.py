"""Sector memories (services/thoughtmcp/memories.py) on the fake stores: waypoint links made, weighed and kept
in step, decay and reinforcement, filters, and a hard forget that leaves nothing behind."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.thoughtmcp.models import Filters, Metadata, NewMemory, ThoughtError, user_folder
from tests.fakes.container import fake_container

TEXT = "The billing service deploys every Tuesday after the payments regression suite passes"


def setup(tmp_path: Path) -> tuple[Container, Brain]:
    c = fake_container(tmp_path)
    return c, c.brains.create("thoughts")


def remember(c: Container, brain: Brain, content: str, *, user: str = "alice", session: str = "s1",
             sector: str = "semantic", **meta: object) -> dict[str, object]:  # fmt: skip
    return c.thoughts.remember(brain, NewMemory(content, user, session, sector, Metadata(**meta)))  # type: ignore[arg-type]


def test_a_similar_memory_of_the_same_session_is_linked_both_ways_and_counted(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    a = remember(c, brain, TEXT, keywords=("billing", "deploy"), tags=("ops",))
    b = remember(c, brain, TEXT + " on staging", keywords=("billing", "deploy"), tags=("ops",))
    other_user = remember(c, brain, TEXT, user="bob")
    assert a["linksCreated"] == 0 and b["linksCreated"] == 2 and other_user["linksCreated"] == 0

    out = c.thoughts.links.outgoing(brain.id, str(b["memoryId"]))
    back = c.thoughts.links.outgoing(brain.id, str(a["memoryId"]))
    assert [(link.target_id, link.kind) for link in out] == [
        (a["memoryId"], "temporal")
    ]  # same session, minutes apart
    assert [link.target_id for link in back] == [b["memoryId"]] and out[0].weight >= 0.7

    found, _ = c.thoughts.recall(brain, "alice", text=None, filters=Filters())
    assert {f.row.id: f.score.link_weight for f in found} == {
        a["memoryId"]: pytest.approx(out[0].weight),
        b["memoryId"]: pytest.approx(out[0].weight),
    }


def test_new_content_relinks_and_a_hard_forget_leaves_nothing(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    a = remember(c, brain, TEXT, keywords=("billing",))
    b = remember(c, brain, TEXT + " again", keywords=("billing",))
    assert b["linksCreated"] == 2
    changed = c.thoughts.update(
        brain, str(b["memoryId"]), "alice", content="Bought oat milk and coffee beans today"
    )
    assert changed["embeddingsRegenerated"] is True and changed["connectionsUpdated"] >= 1
    assert c.thoughts.links.outgoing(brain.id, str(a["memoryId"])) == []  # no longer similar: unlinked
    row_a = c.thoughts.get_many(brain, "alice", [str(a["memoryId"])])[str(a["memoryId"])].row
    assert row_a.link_count == 0 and row_a.link_sum == 0

    c.thoughts.update(brain, str(b["memoryId"]), "alice", content=TEXT + " once more")
    assert c.thoughts.links.outgoing(brain.id, str(a["memoryId"]))  # similar again: relinked
    doc = c.documents.repo.get_by_id(str(b["memoryId"]))
    assert doc is not None
    blob, chunks_before = doc.blob_key, c.adapters.chunks.get_chunks(brain.id, doc.id)
    assert chunks_before

    c.thoughts.forget(brain, str(b["memoryId"]), "alice")
    records = c.adapters.records.rows  # type: ignore[attr-defined]
    assert not [k for k, v in records.items() if str(b["memoryId"]) in k[0] + k[1] + v[0]]
    assert not c.adapters.blobs.exists(blob)
    assert c.adapters.chunks.get_chunks(brain.id, doc.id) == []
    assert c.thoughts.links.outgoing(brain.id, str(a["memoryId"])) == []
    blobs = c.adapters.blobs.items  # type: ignore[attr-defined]
    assert not [k for k, v in blobs.items() if b"once more" in v or b"oat milk" in v]  # no version is left


def test_decay_over_time_and_reinforcement_on_recall(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    m = remember(c, brain, "The quarterly report is due on Friday afternoon", sector="episodic")
    clock = c.adapters.clock
    clock.advance(timedelta(days=10).total_seconds())  # type: ignore[attr-defined]
    found, _ = c.thoughts.recall(brain, "alice", text=None, filters=Filters(), reinforce=False)
    assert found[0].strength == pytest.approx(0.7408, abs=1e-3)  # exp(-0.03 * 10)
    c.thoughts.recall(brain, "alice", text=None, filters=Filters())  # read: reinforced to 1.0
    again, _ = c.thoughts.recall(brain, "alice", text=None, filters=Filters(), reinforce=False)
    assert again[0].strength == pytest.approx(1.0) and again[0].row.access_count == 1
    assert again[0].row.id == m["memoryId"]


def test_filters_run_inside_the_index_and_validation_messages(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    remember(c, brain, "Kubernetes upgrade runbook for the staging cluster", sector="procedural",
             tags=("ops",), category="runbooks")  # fmt: skip
    remember(c, brain, "Felt relieved when the staging cluster upgrade finished", sector="emotional")
    proc, _ = c.thoughts.recall(
        brain,
        "alice",
        text="staging cluster upgrade",
        filters=Filters(primary_sector="procedural"),
        min_similarity=0.0,
    )
    tagged, _ = c.thoughts.recall(
        brain, "alice", text="staging cluster", filters=Filters(tags=("ops", "none")), min_similarity=0.0
    )
    runbooks, _ = c.thoughts.recall(brain, "alice", text=None, filters=Filters(category="runbooks"))
    assert [f.row.sector for f in proc] == ["procedural"]
    assert [f.row.tags for f in tagged] == [["ops"]] and [f.row.category for f in runbooks] == ["runbooks"]
    emotional, _ = c.thoughts.recall(  # the sector embeddings searched, not a filter on the results
        brain, "alice", text="Kubernetes runbook", filters=Filters(sectors=("emotional",)), min_similarity=0.0
    )
    assert {f.row.sector for f in emotional} == {"procedural", "emotional"}
    with pytest.raises(ThoughtError, match="Invalid memory sector"):
        c.thoughts.recall(brain, "alice", text=None, filters=Filters(sectors=("bogus",)))
    with pytest.raises(ThoughtError, match="minStrength must be between 0 and 1"):
        c.thoughts.recall(brain, "alice", text=None, filters=Filters(min_strength=2))
    assert user_folder("alice") != user_folder("alice ")


def test_an_archive_carries_a_users_memories_with_their_rows_and_links(tmp_path: Path) -> None:
    c, brain = setup(tmp_path / "one")
    a = remember(c, brain, TEXT, keywords=("billing",), tags=("ops",))
    b = remember(c, brain, TEXT + " again", keywords=("billing",), tags=("ops",))
    records = list(c.archive.export(brain))

    other, _ = setup(tmp_path / "two")
    other.archive.import_("restored", records)
    restored = other.brains.get("restored")
    found, total = other.thoughts.recall(restored, "alice", text=None, filters=Filters(tags=("ops",)))
    assert total == 2 and {f.row.id for f in found} == {a["memoryId"], b["memoryId"]}
    assert {f.content for f in found} == {TEXT, TEXT + " again"}
    assert all(f.row.keywords == ["billing"] and f.score.link_weight > 0 for f in found)  # relinked
