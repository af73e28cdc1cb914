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
a text longer than `LONGEST` characters is embedded and not kept, so a full cache holds a few MB.
Returned arrays are the caller's own: the kept rows are read-only copies.

A kept vector answers faster than the model, so a cache shared by all callers would tell one
caller, by the time its search takes, whether another asked the same words lately (a question
about a takeover, probed by a user of another tenant). Each text is therefore kept for the caller
that asked it: `partition()` names the caller (the composition root passes the current
principal's tenant and subject), and one caller's questions never answer another's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Final

import numpy as np

from cairn.ports.embedder import Embedder, Vectors

__all__ = ["LONGEST", "VectorCache"]

LONGEST: Final = 1024


class VectorCache:
    def __init__(
        self, embedder: Embedder, capacity: int, partition: Callable[[], Hashable] = lambda: None
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._embedder = embedder
        self._capacity = capacity
        self._partition = partition
        self._kept: OrderedDict[tuple[Hashable, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    @property
    def dimension(self) -> int:
        return self._embedder.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        caller = self._partition()
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                kept = self._kept.get((caller, text))
                if kept is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._kept.move_to_end((caller, text))
                    out[i] = kept
        if not missing:
            return out
        # Embedded outside the lock: two threads may embed one text at once, and both get its vector.
        vectors = self._embedder.embed(list(missing))
        with self._lock:
            for (text, places), vector in zip(missing.items(), vectors, strict=True):
                out[places] = vector
                if len(text) <= LONGEST:
                    self._keep((caller, text), vector)
        return out

    def _keep(self, key: tuple[Hashable, str], vector: Vectors) -> None:
        row = np.array(vector, dtype=np.float32)
        row.setflags(write=False)
        self._kept[key] = row
        self._kept.move_to_end(key)
        while len(self._kept) > self._capacity:
            self._kept.popitem(last=False)
