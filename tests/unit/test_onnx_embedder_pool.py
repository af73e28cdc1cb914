"""OnnxEmbedder with several workers (`_pooled`): results in the order of the texts, whatever
the number of workers, and a run that fails stops the runs queued behind it."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from tokenizers import Encoding

from cairn.adapters.local.onnx_embedder import OnnxEmbedder
from cairn.ports.embedder import Vectors

WAIT_S = 30.0
TEXTS = [" ".join(f"berth {i} crane {j} rota ☃ naïve" for j in range(1 + (i * 37) % 90)) for i in range(48)]


@pytest.mark.parametrize("workers", [2, 4])
def test_many_batches_on_several_workers_match_one_worker_exactly(workers: int) -> None:
    """Far more batches than the window of two runs a worker, of mixed lengths (batch_size 2)."""
    alone = OnnxEmbedder(threads=1, batch_size=2, workers=1).embed(TEXTS)
    pooled = OnnxEmbedder(threads=1, batch_size=2, workers=workers)
    batches = pooled._batches(
        list(range(len(TEXTS))), [len(e.ids) for e in pooled._tokenizer.encode_batch(TEXTS)]
    )
    assert len(batches) > 4 * workers
    np.testing.assert_array_equal(pooled.embed(TEXTS), alone)


def test_a_failed_run_cancels_the_runs_queued_behind_it() -> None:
    """The first run fails while the second holds the other worker: the runs queued after them
    are not made for a call that has already failed (Executor.map cancelled them too)."""
    made: list[int] = []
    second_started, release = threading.Event(), threading.Event()
    lock = threading.Lock()

    class Failing(OnnxEmbedder):
        def _run(self, encodings: list[Encoding]) -> Vectors:
            with lock:
                made.append(len(made))
                number = made[-1]
            if number == 0:
                assert second_started.wait(WAIT_S)
                raise RuntimeError("the model failed")
            second_started.set()
            assert release.wait(WAIT_S)
            return np.zeros((len(encodings), self.dimension), dtype=np.float32)

    embedder = Failing(threads=1, batch_size=1, workers=2)
    try:
        with pytest.raises(RuntimeError, match="the model failed"):
            embedder.embed([f"text {i}" for i in range(12)])
    finally:
        release.set()
        embedder._runs().shutdown(wait=True)
    assert len(made) <= 3, made  # the first two and at most the one a freed worker took at once
