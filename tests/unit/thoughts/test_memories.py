"""Sector memories (services/thoughtmcp/memories.py) on the fake stores: waypoint links made, weighed and kept
in step, decay and reinforcement, filters, five sector embeddings and which of them recall searches,
and a hard forget that leaves nothing behind."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from cairn import faults
from cairn.bootstrap import Container
from cairn.domain.boolean_query import Term
from cairn.domain.models import Brain
from cairn.services.documents.chunk_ids import chunk_id
from cairn.services.search.relevance import EMBEDDED
from cairn.services.thoughtmcp.models import (
    SIMILARITY_LINE_SHIFT,
    Filters,
    Metadata,
    NewMemory,
    ThoughtError,
    user_folder,
)
from cairn.services.thoughtmcp.sectors import VIEWS, sector_texts
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
    # the two links (A->B, B->A) removed, counted as linksCreated counts the links made
    assert changed["embeddingsRegenerated"] is True and changed["connectionsUpdated"] == 2
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


def test_a_hard_forget_stopped_once_the_record_went_leaves_no_text(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    made = remember(c, brain, "Alice's locker code is ochre-4417")
    c.thoughts.update(brain, str(made["memoryId"]), "alice", content="Alice's locker code was rotated")

    # When the process dies right after the memory's record went
    with faults.armed("documents.committed"), pytest.raises(faults.InjectedFault):
        c.thoughts.forget(brain, str(made["memoryId"]), "alice")

    # Then neither version's text is left in the blob store
    blobs = c.adapters.blobs.items  # type: ignore[attr-defined]
    assert not [k for k, v in blobs.items() if b"ochre-4417" in v or b"rotated" in v]


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
    with pytest.raises(ThoughtError, match="Invalid sector"):
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


HOW_TO = "Restart the payments worker: drain the queue, stop the pods, then start them again"


def _cosine(c: Container, text: str, vector: object) -> float:
    return float(c.adapters.embedder.embed([text])[0] @ np.asarray(vector).ravel())


def test_five_sector_embeddings_are_made_and_sectors_chooses_which_are_searched(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    made = remember(c, brain, HOW_TO, sector="procedural", keywords=("payments", "worker"), context="on call")
    memory_id = str(made["memoryId"])
    assert made["embeddingsGenerated"] == 5
    stored = c.thoughts.sectors.get(brain.id, "alice", [memory_id])[memory_id]
    row = c.thoughts.get_many(brain, "alice", [memory_id])[memory_id].row
    texts = sector_texts(HOW_TO, row)
    assert set(stored) == set(VIEWS)
    assert "payments, worker" in texts["reflective"] and "on call" in texts["episodic"]
    semantic = c.adapters.chunks.get_vectors(brain.id, [chunk_id(memory_id, 0)])[chunk_id(memory_id, 0)]

    query = "how to restart the worker step by step"
    scale = EMBEDDED.lowered(SIMILARITY_LINE_SHIFT)  # ThoughtMCP's similarity
    expected = {view: scale(_cosine(c, query, stored[view])) for view in VIEWS}
    expected["semantic"] = scale(_cosine(c, query, semantic))
    for sector, similarity in expected.items():
        chosen = Filters(sectors=(sector,))
        found, _ = c.thoughts.recall(brain, "alice", text=query, filters=chosen, min_similarity=0.0)
        assert found[0].score.similarity == pytest.approx(similarity, abs=2e-3), sector
    assert expected["procedural"] > expected["semantic"]  # a how-to question is nearest as a procedure
    every, _ = c.thoughts.recall(brain, "alice", text=query, filters=Filters(), min_similarity=0.0)
    assert every[0].score.similarity == pytest.approx(max(expected.values()), abs=2e-3)


def test_sector_embeddings_follow_the_memory_and_leave_with_it(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    memory_id = str(remember(c, brain, HOW_TO, sector="procedural")["memoryId"])
    before = c.thoughts.sectors.get(brain.id, "alice", [memory_id])[memory_id]
    c.thoughts.update(brain, memory_id, "alice", strength=0.5)  # nothing they are made of: kept
    assert all(np.array_equal(before[v], c.thoughts.sectors.get(brain.id, "alice", [memory_id])[memory_id][v])
               for v in VIEWS)  # fmt: skip
    new_text = "Rotate the payments API keys every ninety days"
    c.thoughts.update(brain, memory_id, "alice", content=new_text)
    after = c.thoughts.sectors.get(brain.id, "alice", [memory_id])[memory_id]
    row = c.thoughts.get_many(brain, "alice", [memory_id])[memory_id].row
    remade = sector_texts(new_text, row)["procedural"]
    assert _cosine(c, remade, after["procedural"]) == pytest.approx(1, abs=1e-3)
    c.thoughts.rows.commit([c.thoughts.sectors.delete_op(brain.id, "alice", memory_id)])  # stored before them
    emotional, _ = c.thoughts.recall(brain, "alice", text=new_text, filters=Filters(sectors=("emotional",)))
    assert [f.row.id for f in emotional] == [memory_id]  # searched by its text embedding alone
    assert emotional[0].score.similarity == pytest.approx(
        EMBEDDED.lowered(SIMILARITY_LINE_SHIFT)(1.0), abs=2e-3
    )
    other = str(remember(c, brain, TEXT, user="bob")["memoryId"])
    assert c.thoughts.forget_user(brain, "alice") == 1
    assert c.thoughts.sectors.get(brain.id, "alice", [memory_id]) == {}
    assert list(c.thoughts.sectors.get(brain.id, "bob", [other])) == [other]


def test_when_nothing_reaches_min_similarity_the_closest_still_comes_first(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    text = "The billing service deploys every Tuesday afternoon"
    match = remember(c, brain, text)
    loud = remember(c, brain, "Urgent critical important priority: order more printer paper", importance=1.0)
    found, total = c.thoughts.recall(brain, "alice", text=text, filters=Filters(), min_similarity=1.0)
    assert total == 2 and [f.row.id for f in found] == [match["memoryId"], loud["memoryId"]]
    assert 0.99 < found[0].score.similarity < 1.0  # its own similarity, under the threshold asked for
    assert found[1].score.similarity < 0.5 and found[1].score.salience > found[0].score.salience


def test_new_content_takes_new_keywords_unless_the_caller_gave_them(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    auto = remember(c, brain, "The zebrafish tank heater broke and flooded the aquarium rack")
    given = remember(c, brain, "The zebrafish room is kept at 28 degrees", keywords=("zebrafish", "lab"))
    new = "The marketing newsletter goes out every Monday morning"
    c.thoughts.update(brain, str(auto["memoryId"]), "alice", content=new)
    c.thoughts.update(brain, str(given["memoryId"]), "alice", content=new + " to subscribers")
    rows = c.thoughts.get_many(brain, "alice", [str(auto["memoryId"]), str(given["memoryId"])])
    assert "zebrafish" not in rows[str(auto["memoryId"])].row.keywords  # extracted from the old text: gone
    assert "newsletter" in rows[str(auto["memoryId"])].row.keywords
    assert rows[str(given["memoryId"])].row.keywords == ["zebrafish", "lab"]  # the caller's: kept
    found, _ = c.thoughts.search(brain, "alice", Term("heater"), filters=Filters())
    assert found == []  # the old text's words no longer find it


def test_a_soft_forgotten_memory_stays_hidden_whatever_else_changes(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    gone = remember(c, brain, "The zebrafish tank heater broke and flooded the aquarium rack")
    remember(c, brain, "Quarterly budget review is on Friday")
    c.thoughts.forget(brain, str(gone["memoryId"]), "alice", soft=True)
    c.thoughts.update(brain, str(gone["memoryId"]), "alice", metadata=Metadata(tags=("lab",)))
    c.thoughts.recall(brain, "alice", text="zebrafish heater", filters=Filters(min_strength=0.0))  # a read
    found, total = c.thoughts.recall(brain, "alice", text="zebrafish heater flood", filters=Filters())
    assert gone["memoryId"] not in [f.row.id for f in found] and total == 1
    c.thoughts.update(brain, str(gone["memoryId"]), "alice", strength=0.8)  # given strength again: found
    found, _ = c.thoughts.recall(brain, "alice", text="zebrafish heater flood", filters=Filters())
    assert found[0].row.id == gone["memoryId"]


@pytest.mark.parametrize("blank", ["\u200b" * 12, "\ufeff" * 12, "\x00" * 12, " \u200d\t\u2060 " * 3])
def test_content_that_shows_nothing_is_empty(tmp_path: Path, blank: str) -> None:
    c, brain = setup(tmp_path)
    with pytest.raises(ThoughtError, match="Content cannot be empty"):
        remember(c, brain, blank)
    found, total = c.thoughts.recall(brain, "alice", text=None, filters=Filters())
    assert found == [] and total == 0


def test_a_session_id_is_bounded_as_a_user_id_is(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    with pytest.raises(ThoughtError, match="sessionId must be at most 256 characters"):
        remember(c, brain, TEXT, session="s" * 257)
    assert remember(c, brain, TEXT, session="s" * 256)["memoryId"]
    _, total = c.thoughts.recall(brain, "alice", text=None, filters=Filters())
    assert total == 1


def test_a_tag_or_keyword_with_control_characters_is_refused(tmp_path: Path) -> None:
    c, brain = setup(tmp_path)
    with pytest.raises(ThoughtError, match=r"metadata\.tags must not contain control characters"):
        remember(c, brain, TEXT, tags=("\x00nul",))
    kept = remember(c, brain, TEXT, tags=("ops",))
    with pytest.raises(ThoughtError, match=r"metadata\.tags must not contain control characters"):
        c.thoughts.update(brain, str(kept["memoryId"]), "alice", metadata=Metadata(tags=("\x00nul",)))
    found, total = c.thoughts.recall(brain, "alice", text=None, filters=Filters())
    assert total == 1 and found[0].row.id == kept["memoryId"]


def test_a_tag_or_keyword_with_a_comma_is_kept_whole(tmp_path: Path) -> None:
    """As ThoughtMCP keeps them (text[] columns): given, shown and filtered on as one value."""
    c, brain = setup(tmp_path)
    made = remember(c, brain, TEXT, tags=("ops,billing",), keywords=("deploy, weekly",))
    other = remember(c, brain, TEXT + " on staging", tags=("ops",))
    found, _ = c.thoughts.recall(brain, "alice", text=None, filters=Filters(tags=("ops,billing",)))
    assert [f.row.id for f in found] == [made["memoryId"]]
    assert (found[0].row.tags, found[0].row.keywords) == (["ops,billing"], ["deploy, weekly"])
    by_part, _ = c.thoughts.recall(brain, "alice", text=None, filters=Filters(tags=("billing",)))
    by_keyword, _ = c.thoughts.recall(
        brain, "alice", text=None, filters=Filters(keywords=("deploy, weekly",))
    )
    assert by_part == [] and [f.row.id for f in by_keyword] == [made["memoryId"]]
    c.thoughts.update(brain, str(other["memoryId"]), "alice", metadata=Metadata(tags=("a,b", "c")))
    found, _ = c.thoughts.recall(brain, "alice", text=None, filters=Filters(tags=("a,b",)))
    assert [(f.row.id, f.row.tags) for f in found] == [(other["memoryId"], ["a,b", "c"])]
