"""A correction written later comes before the note it corrects (services/search/restatements.py),
on the embedded backend as `cairn serve` builds it (ONNX MiniLM, SQLite), through the search
memory_search calls and the passages a grounded answer (memory_ask) reads. Each case first checks
that relevance alone puts the older note first."""

from __future__ import annotations

import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from cairn.ports.chunks import ChunkFilter

OTHERS = (
    "The design team meets every Thursday to review new mockups.",
    "Invoices are sent to customers on the first working day of each month.",
    "The office coffee machine is descaled every Friday afternoon.",
    "Our staging database is refreshed from production every Sunday night.",
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Container, Brain]:
    c = build_container(Settings(data_dir=tmp_path_factory.mktemp("restated")))
    brain = c.brains.create("family")
    notes = {
        "swimming.md": "Ellie's swimming lessons are on Tuesdays at 17:00 at Westgate Pool.",
        "outbound.md": "Outbound flight TP1337 from Gatwick to Porto on 24 July, departing 07:05.",
        "production-db.md": "The production database runs on db-prod-1 in us-east-1.",
        **{f"other-{n}.md": text for n, text in enumerate(OTHERS)},
        "swimming-moved.md": "Ellie's swimming lessons moved to Wednesdays at 17:15 at Westgate Pool; "
        "the Tuesday slot is no longer hers.",
        "return.md": "Return flight TP1338 from Porto to Gatwick on 7 August, departing 19:40.",
        "staging-db.md": "The staging database moved to db-stage-2 in eu-west-2 last week.",
    }
    for path, text in notes.items():  # in this order: each later note written after the ones above
        c.documents.write(brain, f"notes/{path}", text.encode())
    return c, brain


def paths_and_scores(c: Container, brain: Brain, query: str) -> tuple[list[str], list[float], list[float]]:
    hits = c.search.search(brain, query, top_k=5, count_access=False).hits
    blends = [float(h.component_scores["blend"] or 0.0) for h in hits]
    return [h.path.removeprefix("notes/") for h in hits], [h.score for h in hits], blends


def test_the_correction_comes_first_and_the_scores_still_fall(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    paths, scores, blends = paths_and_scores(c, brain, "When are Ellie's swimming lessons on Tuesday?")
    assert paths[:2] == ["swimming-moved.md", "swimming.md"]
    assert blends[1] > blends[0]  # by relevance alone the old note led
    assert scores == sorted(scores, reverse=True)  # the scores stay with the places


def test_a_later_note_that_changes_nothing_keeps_its_place(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    paths, _, blends = paths_and_scores(c, brain, "When do I fly out to Porto?")
    assert paths[0] == "outbound.md" and "return.md" in paths
    assert blends == sorted(blends, reverse=True)  # relevance's order, untouched


def test_other_sorts_are_left_alone(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    hits = c.search.search(
        brain, "When are Ellie's swimming lessons on Tuesday?", top_k=5, sort="relevance_then_recency"
    ).hits
    assert hits[0].path == "notes/swimming.md"


def test_a_grounded_answer_reads_the_correction_first(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    found = c.search.passages(
        "When are Ellie's swimming lessons on Tuesday?", ChunkFilter(brain_ids=(brain.id,)), 4
    )
    assert [hit.chunk.path for hit, _ in found][:2] == ["notes/swimming-moved.md", "notes/swimming.md"]
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)


def test_a_later_near_miss_that_says_it_moved_keeps_its_place(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    paths, _, blends = paths_and_scores(c, brain, "Where does the production database run?")
    assert paths[0] == "production-db.md" and "staging-db.md" in paths
    assert blends == sorted(blends, reverse=True)
