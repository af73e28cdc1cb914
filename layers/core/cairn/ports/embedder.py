"""Embedder: text to unit-length vectors. Adapters: local ONNX MiniLM, Bedrock Titan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text, shape (len(texts), dimension)."""


@runtime_checkable
class VersionedVectors(Protocol):
    """An embedder whose vectors of some texts changed within one model id, because a release
    reads them better (OnnxEmbedder: symbols its vocabulary lacks). The version is part of a
    chunk's fingerprint, so `cairn check --deep`, and a write that changes the document, embed
    such texts again instead of keeping or lending a vector the model id alone calls the same."""

    def vector_version(self, text: str) -> str:
        """The version of the text's vector: "" while it is the one the model id first gave."""
