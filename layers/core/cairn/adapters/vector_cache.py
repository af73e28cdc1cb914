"""An Embedder that remembers the vectors of the texts it embedded last: what the searches use.

A search embeds its question on every call, and agents ask the same questions again (the recall
at the start of each turn, a retry, one question put to several surfaces); a session recall
embeds its question twice and the conversation's last messages on every call. Embedding is a
third of a search's time on the local model and a Bedrock request on AWS, while the vector of a
text never changes for one model. So the services that embed questions (search, recall, library
search, session recall) get this wrapper at the composition root; the indexer and the health
check get the model itself (a document's chunks are embedded once, and would only push the
questions out).

Each text of a call is looked up on its own and the missing ones are embedded in one call of the
model, in their order. That gives the vectors a call without the cache would: the local int8
model runs one text at a time unless it is batch-invariant (onnx_embedder.py), and Titan embeds
one text a request. At most `capacity` texts are kept, the least recently used leaving first;
a text longer than `LONGEST` characters is embedded and not kept (a search question is at most
4,096). Returned arrays are the caller's own: the kept rows are read-only copies.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

import numpy as np

from cairn.ports.embedder import Embedder, Vectors

__all__ = ["LONGEST", "VectorCache"]

LONGEST: Final = 4096


class VectorCache:
    def __init__(self, embedder: Embedder, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._embedder = embedder
        self._capacity = capacity
        self._kept: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    @property
    def dimension(self) -> int:
        return self._embedder.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                kept = self._kept.get(text)
                if kept is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._kept.move_to_end(text)
                    out[i] = kept
        if not missing:
            return out
        # Embedded outside the lock: two threads may embed one text at once, and both get its vector.
        vectors = self._embedder.embed(list(missing))
        with self._lock:
            for (text, places), vector in zip(missing.items(), vectors, strict=True):
                out[places] = vector
                if len(text) <= LONGEST:
                    self._keep(text, vector)
        return out

    def _keep(self, text: str, vector: Vectors) -> None:
        row = np.array(vector, dtype=np.float32)
        row.setflags(write=False)
        self._kept[text] = row
        self._kept.move_to_end(text)
        while len(self._kept) > self._capacity:
            self._kept.popitem(last=False)
