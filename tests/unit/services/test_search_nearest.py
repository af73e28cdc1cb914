"""memory_search's candidates include the vector leg's nearest hits (ChunkQuery.nearest), on the
embedded store and on the AWS adapters: where a word of the question is in every note (a name),
the keyword leg fills the fused head, and a note that answers in other words used never to reach
the blend."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.shapes import SHAPES, adapters_for, process
from tests.support.word_embedder import WordEmbedder

SYNONYMS = WordEmbedder({"swimming": (0, 1.0), "pool": (0, 1.0)}, model_id="synonyms-64")
"""The only meaning this model knows: "swimming" and "pool" share a direction; the notes about
Caroline are unrelated to the question."""


@pytest.mark.parametrize("shape", SHAPES)
def test_a_note_found_only_by_meaning_reaches_the_results_when_a_name_fills_the_keyword_leg(
    shape: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with adapters_for(shape, request, tmp_path) as adapters:
        c = process(replace(adapters, embedder=SYNONYMS), tmp_path)
        brain = c.brains.create("chats")
        for i in range(60):
            c.documents.write(brain, f"chat/{i:02d}.md", f"Caroline said hello, message {i}.".encode())
        # Another folder: no sibling context lends it the word "Caroline" (documents/siblings.py).
        c.documents.write(brain, "notes/lessons.md", b"Her swimming lessons are on Tuesdays.")

        hits = c.search.search(brain, "When is Caroline at the pool?", top_k=10, count_access=False).hits
        assert hits[0].path == "notes/lessons.md"
        assert len(hits) == 10
