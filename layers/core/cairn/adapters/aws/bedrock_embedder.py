"""Embedder over Amazon Titan Text Embeddings V2 on Bedrock (InvokeModel, one text per call).

Titan V2 embeds one text per request, so a batch runs as concurrent calls on a thread pool (boto3
clients are thread-safe; the client's connection pool should hold `concurrency` connections,
botocore's default is 10). Throttling, an unavailable service or a model still loading are retried
with exponential backoff and jitter (retrying.RetryPolicy); the first text that still fails
cancels the rest of the batch and raises EmbeddingError.

Rows come back float32 and L2-normalised again here (Titan normalises in float64). A blank text
gets a fixed unit vector without a call (Titan rejects empty input), and text past `max_chars` is
cut (Titan V2 takes at most 50,000 characters and 8,192 tokens per text).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from cairn.adapters.aws.bedrock_errors import BedrockRuntime, Failure, call_with_retries
from cairn.adapters.retrying import RetryPolicy
from cairn.domain.errors import CairnError
from cairn.ports.embedder import Vectors
from cairn.ports.generator import GenerationCode

DIMENSIONS = (1024, 512, 256)
DEFAULT_MODEL = "amazon.titan-embed-text-v2:0"
MAX_CHARS = 25_000  # half Titan's character limit, to stay under its token limit on dense text


# What a caller is told, by why the model failed: throttled is 429 (ask again later), a model
# that timed out 504, any other failure of the service 502; never a bare 500, as nothing was
# wrong with Cairn or with what the caller sent.
_CODE_BY_REASON = {"rate_limited": "rate_limited", "generation_timeout": "timeout"}


class EmbeddingError(CairnError):
    """Texts could not be embedded. `reason` is a GenerationCode; `retryable` as in GenerationError."""

    code = "bad_gateway"

    def __init__(self, reason: GenerationCode, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.retryable = retryable
        self.code = _CODE_BY_REASON.get(reason, "bad_gateway")

    @classmethod
    def of(cls, failure: Failure) -> EmbeddingError:
        return cls(failure.code, failure.message, retryable=failure.retryable)


class BedrockEmbedder:
    def __init__(
        self,
        client: BedrockRuntime,
        model_id: str = DEFAULT_MODEL,
        dimension: int = 1024,
        *,
        concurrency: int = 8,
        max_chars: int = MAX_CHARS,
        retry: RetryPolicy | None = None,
    ) -> None:
        if dimension not in DIMENSIONS:
            raise ValueError(f"Titan Text Embeddings V2 has dimension 1024, 512 or 256, not {dimension}")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._client = client
        self._model = model_id
        self._dimension = dimension
        self._concurrency = concurrency
        self._max_chars = max_chars
        self._retry = retry or RetryPolicy()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"bedrock:{self._model}:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        if len(texts) <= 1 or self._concurrency == 1:
            for row, text in enumerate(texts):
                out[row] = self._embed_one(text)
            return out
        futures = [self._executor().submit(self._embed_one, text) for text in texts]
        try:
            for row, future in enumerate(futures):
                out[row] = future.result()
        except BaseException:
            _cancel(futures)
            raise
        return out

    def close(self) -> None:
        """Stop the worker threads (they also stop with the process)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._concurrency, thread_name_prefix="bedrock-embed")
            return self._pool

    def _embed_one(self, text: str) -> Vectors:
        if not text.strip():
            return np.full(self._dimension, 1 / np.sqrt(self._dimension), dtype=np.float32)
        body = json.dumps(
            {"inputText": text[: self._max_chars], "dimensions": self._dimension, "normalize": True}
        )
        reply = call_with_retries(lambda: self._invoke(body), self._model, self._retry, EmbeddingError.of)
        return self._vector(reply)

    def _invoke(self, body: str) -> Any:
        response = self._client.invoke_model(
            modelId=self._model, body=body, contentType="application/json", accept="application/json"
        )
        return response["body"].read()

    def _vector(self, reply: bytes) -> Vectors:
        try:
            embedding = json.loads(reply)["embedding"]
            vector = np.asarray(embedding, dtype=np.float32)
        except (ValueError, KeyError, TypeError):
            raise self._bad("a reply without an embedding") from None
        if vector.shape != (self._dimension,):
            raise self._bad(f"an embedding of shape {vector.shape}, expected ({self._dimension},)")
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise self._bad("an embedding of zero or non-finite length")
        normalised: Vectors = vector / np.float32(norm)
        return normalised

    def _bad(self, what: str) -> EmbeddingError:
        return EmbeddingError("bad_response", f"Bedrock model {self._model} sent {what}", retryable=False)


def _cancel(futures: list[Future[Vectors]]) -> None:
    for future in futures:
        future.cancel()
