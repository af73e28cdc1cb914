"""An embedder whose cosines a test can work out by hand: each topic word sets one of the first 8
directions to its weight (two words may share a direction: synonyms); a text with none of them gets
a direction of its own among the other 56, so unrelated texts are orthogonal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


class WordEmbedder:
    dimension = 64

    def __init__(self, words: Mapping[str, tuple[int, float]], model_id: str = "words-64") -> None:
        assert all(0 <= index < 8 for index, _ in words.values())
        self.words = dict(words)
        self.model_id = model_id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            lowered = text.lower()
            for word, (index, weight) in self.words.items():
                if word in lowered:
                    out[row, index] = weight
            if not out[row].any():
                out[row, 8 + sum(map(ord, lowered)) % 56] = 1.0
            out[row] /= np.linalg.norm(out[row])
        return out
