"""Coalesce concurrent embed() calls from many threads into one call of the wrapped Embedder.

Leader/follower: the first caller of a group becomes its leader; it waits up to `max_wait_s`
(less once `max_texts` are queued) and for the previous group's call to finish, then embeds
every queued text in one call and hands each follower its rows. Callers that arrive while a
group runs queue up for the next one, so under load groups grow on their own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cairn.ports.embedder import Embedder, Vectors


@dataclass
class _Call:
    texts: list[str]
    done: threading.Event = field(default_factory=threading.Event)
    vectors: Vectors | None = None
    error: BaseException | None = None


class MicroBatchingEmbedder:
    def __init__(self, inner: Embedder, max_wait_s: float = 0.002, max_texts: int = 64) -> None:
        self._inner = inner
        self._max_wait_s = max_wait_s
        self._max_texts = max_texts
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._queued_texts = 0
        self._has_leader = False
        self._running = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        if len(texts) >= self._max_texts:
            return self._inner.embed(texts)
        call = _Call(list(texts))
        with self._cond:
            self._queue.append(call)
            self._queued_texts += len(call.texts)
            lead = not self._has_leader
            self._has_leader = True
            self._cond.notify_all()
        if lead:
            self._lead(deadline=time.monotonic() + self._max_wait_s)
        call.done.wait()
        if call.error is not None:
            raise call.error
        assert call.vectors is not None
        return call.vectors

    def _lead(self, deadline: float) -> None:
        with self._running:
            with self._cond:
                while self._queued_texts < self._max_texts:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                group, self._queue, self._queued_texts = self._queue, [], 0
                self._has_leader = False
            self._embed_group(group)

    def _embed_group(self, group: list[_Call]) -> None:
        try:
            vectors = self._inner.embed([text for call in group for text in call.texts])
        except BaseException as error:
            for call in group:
                call.error = error
                call.done.set()
            raise
        start = 0
        for call in group:
            call.vectors = vectors[start : start + len(call.texts)].copy()
            start += len(call.texts)
            call.done.set()
