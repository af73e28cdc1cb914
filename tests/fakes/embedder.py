"""A deterministic feature-hashing embedder. Unit tests only: it has no semantic signal."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from cairn.ports.embedder import Vectors

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    def __init__(self, dimension: int = 384) -> None:
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"hash-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            # A text without words still gets a unit vector (the port promises one per text).
            for token in self._tokens(text) or [""]:
                digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self._dimension
                out[row, index] += 1.0 if digest[4] & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out

    def _tokens(self, text: str) -> list[str]:
        return _WORD.findall(text.lower())


class SymbolHashingEmbedder(HashingEmbedder):
    """HashingEmbedder as a later release of the same model: symbols (emoji, Unicode category So),
    which HashingEmbedder passes over as the embedded model once read them all as [UNK], are
    tokens of their own, and a text holding one has a vector version (ports/embedder.py
    VersionedVectors); every other text keeps its vector."""

    def _tokens(self, text: str) -> list[str]:
        return [*super()._tokens(text), *_symbols(text)]

    def vector_version(self, text: str) -> str:
        return "symbols-1" if _symbols(text) else ""


def _symbols(text: str) -> list[str]:
    return [ch for ch in text if unicodedata.category(ch) == "So"]
