"""Offline memory_ask quotes only the sentences that answer (issue 31, "a first hour without surprises").

Each note holds one sentence that answers its question among sentences about other things; the
questions use other words than the notes. The extractive answer must quote the answering sentence
and none of the others, cite the note it came from, and say plainly when nothing stored answers.
The server is the embedded backend as `cairn serve` builds it (the ONNX MiniLM embedder, which the
extractive generator scores sentences with), asked through the official MCP client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from cairn.adapters.local.extractive import NO_MEMORY
from cairn.bootstrap import build_container
from cairn.config import Settings
from tests.integration.mcp.conftest import LiveServer, ok, serving
from tests.support.cpu import exact_int8_sums

pytestmark = pytest.mark.anyio

AT_THE_EDGE = {"What day is the plumbing repair booked?"}
"""Questions whose answer sits at a threshold's edge on CPUs without VNNI (tests/support/cpu.py)."""

# path -> (the note's sentences, the index of the one that answers, questions in other words)
NOTES: dict[str, tuple[list[str], int, list[str]]] = {
    "memory/global/kitchen.md": (
        [
            "The plumber is coming on Tuesday to fix the leaking kitchen sink.",
            "We bought new oak cabinets last spring.",
            "The dog chewed the garden hose again.",
            "Remember to renew the car insurance before June.",
        ],
        0,
        ["When will someone repair the sink that drips?", "What day is the plumbing repair booked?"],
    ),
    "memory/global/offsite.md": (
        [
            "Marco prefers window seats on long flights.",
            "The team offsite will be held in Lisbon from 12 to 14 March.",
            "The quarterly budget spreadsheet lives on the finance drive.",
            "Our cat Miso hates the vacuum cleaner.",
        ],
        1,
        ["Where is the team going for the offsite?"],
    ),
    "memory/global/health.md": (
        [
            "The library closes early on Fridays.",
            "Dr. Patel prescribed amoxicillin for my ear infection, twice daily for ten days.",
            "I need to return the borrowed ladder to Sam.",
            "Tomatoes grow best in full sun.",
        ],
        1,
        ["What antibiotic did the doctor give me?", "Which medicine am I taking for my ear?"],
    ),
    "memory/global/falcon.md": (
        [
            "The office plants need watering every Thursday.",
            "Lena's birthday cake should be chocolate.",
            "The Falcon launch was postponed because the payment provider failed its security audit.",
            "Parking passes expire at the end of the year.",
        ],
        2,
        ["What pushed back the Falcon go-live?"],
    ),
    "memory/global/anna.md": (
        [
            "The wifi password was changed last week.",
            "Our favourite hiking trail is closed for repairs.",
            "Anna is allergic to peanuts and always carries an EpiPen.",
            "The printer on floor two jams constantly.",
        ],
        2,
        ["Does Anna have any food intolerances?", "What can't Anna eat?"],
    ),
    "memory/global/staging.md": (
        [
            "Grandma's recipe uses brown butter instead of oil.",
            "The staging database is rebuilt from production backups every Sunday night.",
            "Jonas is learning to play the cello.",
            "Our lease on the flat ends in August.",
        ],
        1,
        [
            "How often is the test environment's data refreshed?",
            "When does staging get a fresh copy of prod?",
        ],
    ),
}
NEVER_STORED = ["How much did the wedding venue cost?", "Who won the chess tournament last year?"]
ALL_SENTENCES = {s for sentences, _, _ in NOTES.values() for s in sentences}
CASES = [(path, question) for path, (_, _, questions) in NOTES.items() for question in questions]


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    container = build_container(Settings(data_dir=tmp_path / "data", ingest_root=tmp_path / "in"))
    yield from serving(container, tmp_path / "in", tmp_path / "data")


@pytest.fixture
def ids(live: LiveServer) -> dict[str, str]:
    """The notes written, one document each: path -> document id."""
    c = live.container
    brain = c.brains.create("Notes", slug="notes")
    return {
        path: c.documents.write(brain, path, " ".join(sentences).encode()).document.id
        for path, (sentences, _, _) in NOTES.items()
    }


async def test_the_answer_quotes_the_answering_sentence_and_nothing_unrelated(
    live: LiveServer, ids: dict[str, str]
) -> None:
    async with Client(live.url) as client:
        for path, question in CASES:
            sentences, answering, _ = NOTES[path]
            payload = ok(await client.call_tool("memory_ask", {"query": question, "brain": "notes"}))
            answer = payload["answer"]
            assert sentences[answering] in answer, (question, answer)
            quoted = {s for s in ALL_SENTENCES if s in answer}
            cites = payload["citations"]
            assert cites, question
            if question in AT_THE_EDGE and not exact_int8_sums():
                # without VNNI the other note's strength is 0.70 of the answer's, at PASSAGE_RELATIVE:
                # it may add its best sentence, after the answer, never before it or instead of it
                assert answer.startswith(sentences[answering]) and len(quoted) <= 2, (question, answer)
                cites = cites[:1]
            else:
                assert quoted == {sentences[answering]}, (question, answer)
            for cite in cites:
                assert cite["quote"] == sentences[answering], (question, cite)
                assert cite["document_id"] == ids[path], (question, cite)
                assert answer[cite["answer_start"] : cite["answer_end"]] == cite["quote"]


async def test_a_question_nothing_answers_is_told_so_without_quotes(
    live: LiveServer, ids: dict[str, str]
) -> None:
    async with Client(live.url) as client:
        for question in NEVER_STORED:
            payload = ok(await client.call_tool("memory_ask", {"query": question, "brain": "notes"}))
            assert payload["answer"] == NO_MEMORY, (question, payload["answer"])
            assert payload["citations"] == []
