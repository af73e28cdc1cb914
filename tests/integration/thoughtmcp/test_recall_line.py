"""ThoughtMCP's minSimilarity on the embedded model means what it means on ThoughtMCP's own
embedder: the default 0.5 keeps every memory that answers a multi-answer question, leaves out the
ones about other things, and a question nothing stored touches gets the real server's fallback
(every memory passes), each at a similarity under the line.

The container is the embedded backend as `cairn serve` builds it (ONNX MiniLM, SQLite)."""

from __future__ import annotations

from pathlib import Path

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.thoughtmcp.models import DEFAULT_MIN_SIMILARITY, Filters, Metadata, NewMemory

SRES = (
    "Marta Lindqvist is one of the two site reliability engineers on the platform team.",
    "Leo Fischer joined the platform team as an SRE and carries the pager every other week.",
)
OTHERS = (
    "The design team meets every Thursday to review new mockups.",
    "Invoices are sent to customers on the first working day of each month.",
    "Priya prefers written summaries of calls rather than recordings.",
    "The office coffee machine is descaled every Friday afternoon.",
    "Our staging database is refreshed from production every Sunday night.",
    "The mobile app is released every second Tuesday after QA signs off.",
)


def test_the_default_line_keeps_every_answer_and_leaves_out_the_rest(tmp_path: Path) -> None:
    c = build_container(Settings(data_dir=tmp_path))
    brain = c.brains.create("thoughts")
    ids = {
        text: str(
            c.thoughts.remember(brain, NewMemory(text, "alice", "s1", "semantic", Metadata()))["memoryId"]
        )
        for text in (*SRES, *OTHERS)
    }

    found, total = c.thoughts.recall(
        brain, "alice", text="Who are the SREs on the platform team?", filters=Filters()
    )
    assert {f.row.id for f in found} == {ids[text] for text in SRES}
    assert total == 2
    assert all(f.score.similarity >= DEFAULT_MIN_SIMILARITY for f in found)

    found, total = c.thoughts.recall(brain, "alice", text="What is the capital of Peru?", filters=Filters())
    assert total == len(ids)  # nothing reaches the line: every memory passes, as in ThoughtMCP
    assert all(f.score.similarity < DEFAULT_MIN_SIMILARITY for f in found)
