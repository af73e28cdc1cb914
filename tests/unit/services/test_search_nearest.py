"""memory_search's candidates include the vector leg's nearest hits (ChunkQuery.nearest), on the
embedded store and on the AWS adapters: where a word of the question is in every note (a name),
the keyword leg fills the fused head, and a note that answers in other words used never to reach
the blend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

import numpy as np
import pytest

from tests.support.shapes import SHAPES, adapters_for, process


class SynonymEmbedder:
    """ "swimming" and "pool" share one direction (the only meaning this model knows); every other
    text gets a direction of its own, so the notes about Caroline are unrelated to the question."""

    SAME: Final = ("swimming", "pool")
    model_id = "synonyms-64"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            lowered = text.lower()
            if any(word in lowered for word in self.SAME):
                out[row, 0] = 1.0
            else:
                out[row, 1 + sum(map(ord, lowered)) % 63] = 1.0
        return out


@pytest.mark.parametrize("shape", SHAPES)
def test_a_note_found_only_by_meaning_reaches_the_results_when_a_name_fills_the_keyword_leg(
    shape: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with adapters_for(shape, request, tmp_path) as adapters:
        c = process(replace(adapters, embedder=SynonymEmbedder()), tmp_path)
        brain = c.brains.create("chats")
        for i in range(60):
            c.documents.write(brain, f"chat/{i:02d}.md", f"Caroline said hello, message {i}.".encode())
        # Another folder: no sibling context lends it the word "Caroline" (documents/siblings.py).
        c.documents.write(brain, "notes/lessons.md", b"Her swimming lessons are on Tuesdays.")

        hits = c.search.search(brain, "When is Caroline at the pool?", top_k=10, count_access=False).hits
        assert hits[0].path == "notes/lessons.md"
        assert len(hits) == 10
