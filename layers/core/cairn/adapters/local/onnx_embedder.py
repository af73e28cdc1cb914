"""Local Embedder: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime and tokenizers only.

The model folder (built by scripts/export_minilm.py) holds model.onnx, tokenizer.json and
config.json. Vectors are the mean of the last hidden states over the attention mask, L2-normalised.

Batching: the default model quantizes activations with one scale per run (onnxruntime dynamic
quantization), so a text's vector would depend on the other texts in its batch (cosine down to
~0.95 between the same text embedded alone and in a batch). Such a model (config
`quantization.batch_invariant: false`) is therefore run one text at a time, which costs little:
on CPU a 256-token text alone is as fast per text as in a batch. A batch-invariant model is run
in length-sorted batches of at most `batch_size` texts and `_TOKEN_BUDGET` padded tokens.

Parallel runs: with `workers` above 1, one `embed()` call of several texts runs up to `workers`
of its runs (texts, or batches) at once, each on its own thread (`session.run` releases the GIL),
with no more than two a thread queued behind them (`_pooled`).
Bulk work (`cairn ingest`) uses one intra-op thread and one worker per core; see `bulk_threads`.

Symbols the vocabulary lacks (emoji, runes: `[UNK]` tokens) get a vector of their own, mixed into
the model's by their share of the tokens; a text made only of them is not run through the model,
which gives every such text one vector (unknown_symbols.py).

Loading: onnxruntime and tokenizers are imported, and the tokenizer read (~70-150 ms together), on
the first text asked about; the model session on the first run. A command that opens the store and
never embeds (`cairn brains list`, `cairn keys`, an export) pays for neither.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cairn.adapters.local.unknown_symbols import symbol_vector, unknown_symbols, with_symbols
from cairn.ports.embedder import Vectors

if TYPE_CHECKING:
    import onnxruntime as ort
    from tokenizers import Encoding, Tokenizer

__all__ = ["MODEL_ID", "OnnxEmbedder", "bulk_threads", "default_model_dir"]

MODEL_ID = "all-minilm-l6-v2-int8"
SYMBOLS_VERSION = "symbols-1"  # a text's vector holds its unknown symbols' (unknown_symbols.py)
_TOKEN_BUDGET = 4096
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def bulk_threads() -> tuple[int, int]:
    """(intra-op threads, workers) for throughput over many texts: one run per core, one thread
    each. The shipped model runs one ~150-token text per `session.run`; splitting such a run over
    the cores synchronises every one of its few hundred small ops, and onnxruntime's spinning pool
    threads lose the core to any other busy process (measured on 2 cores under load: 2 threads in
    one run 25-33 chunks/s, one thread per run 49-58, the same on both cores at once 52-71).
    Independent texts on their own cores need no synchronisation at all."""
    return 1, max(1, os.cpu_count() or 1)


def default_model_dir() -> Path:
    """The model folder packaged with cairn (package data under cairn/models/)."""
    return Path(__file__).resolve().parents[2] / "models" / "all-minilm-l6-v2"


@dataclass(frozen=True)
class _Vocabulary:
    tokenizer: Tokenizer
    """Configured once when read and only read afterwards, so one Tokenizer is safe to share."""
    unknown: int
    special: frozenset[int]


def _read_vocabulary(path: Path, max_length: int) -> _Vocabulary:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    unknown = tokenizer.token_to_id("[UNK]")
    if unknown is None:
        raise ValueError(f"{path} has no [UNK] token")
    special = frozenset(i for t in ("[CLS]", "[SEP]", "[PAD]") if (i := tokenizer.token_to_id(t)) is not None)
    return _Vocabulary(tokenizer, unknown, special)


class OnnxEmbedder:
    def __init__(
        self, model_dir: Path | None = None, threads: int = 0, batch_size: int = 32, workers: int = 1
    ) -> None:
        """`threads`: onnxruntime intra-op threads, 0 lets it pick (one per physical core).
        `workers`: runs of one `embed()` call that may go at once (see the module's docstring)."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if workers < 1:
            raise ValueError("workers must be at least 1")
        folder = model_dir if model_dir is not None else default_model_dir()
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self._dimension = int(config["dimension"])
        batch_invariant = bool(config.get("quantization", {}).get("batch_invariant", False))
        self._batch_size = batch_size if batch_invariant else 1
        self._tokenizer_path = folder / "tokenizer.json"
        self._max_length = int(config["max_length"])
        self._vocabulary: _Vocabulary | None = None
        self._lacked: dict[str, bool] = {}
        self._model_path = folder / "model.onnx"
        self._threads = threads
        self._session_lock = threading.Lock()
        self._loaded: ort.InferenceSession | None = None
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None

    @property
    def _words(self) -> _Vocabulary:
        """Read on first use (the module's docstring)."""
        if self._vocabulary is None:
            with self._session_lock:
                if self._vocabulary is None:
                    self._vocabulary = _read_vocabulary(self._tokenizer_path, self._max_length)
        return self._vocabulary

    @property
    def _tokenizer(self) -> Tokenizer:
        return self._words.tokenizer

    @property
    def _unknown(self) -> int:
        return self._words.unknown

    @property
    def _session(self) -> ort.InferenceSession:
        """Loaded on first use (~0.2-0.4 s), so a server answers health checks before it is warm."""
        if self._loaded is None:
            with self._session_lock:
                if self._loaded is None:
                    import onnxruntime as ort

                    options = ort.SessionOptions()
                    options.intra_op_num_threads = self._threads
                    options.log_severity_level = 3
                    # InferenceSession.run is thread-safe: one session serves every caller.
                    self._loaded = ort.InferenceSession(
                        str(self._model_path), options, providers=["CPUExecutionProvider"]
                    )
        return self._loaded

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return out
        words = self._words
        encodings = words.tokenizer.encode_batch(list(texts))
        symbols = [self._symbols(text, encoding) for text, encoding in zip(texts, encodings, strict=True)]
        alone = [bool(symbols[i]) and self._unread(e) for i, e in enumerate(encodings)]  # no model run
        read = [i for i in range(len(texts)) if not alone[i]]
        batches = self._batches(read, [len(e.ids) for e in encodings])
        if self._workers == 1 or len(batches) <= 1:
            for batch in batches:
                out[batch] = self._run([encodings[i] for i in batch])
        else:
            for batch, vectors in zip(batches, self._pooled(batches, encodings), strict=True):
                out[batch] = vectors
        for i, encoding in enumerate(encodings):
            if not symbols[i]:
                continue
            if alone[i]:
                out[i] = symbol_vector(symbols[i], self._dimension)
            else:
                share = encoding.ids.count(words.unknown) / sum(t not in words.special for t in encoding.ids)
                out[i] = with_symbols(out[i], symbols[i], share)
        return out

    def vector_version(self, text: str) -> str:
        """SYMBOLS_VERSION for a text holding symbols the vocabulary lacks (their vector has been
        mixed in since then, unknown_symbols.py), else "" (ports/embedder.py VersionedVectors).
        Most texts cost a set of their characters, looked up in `_lacks`'s memory."""
        if not any(self._lacks(ch) for ch in set(text) if not ch.isspace()):
            return ""
        return SYMBOLS_VERSION if self._symbols(text, self._tokenizer.encode(text)) else ""

    def _symbols(self, text: str, encoding: Encoding) -> Counter[str]:
        """The characters the vocabulary lacks in the text's `[UNK]` tokens (unknown_symbols.py)."""
        if self._unknown not in encoding.ids:
            return Counter()
        spans = [span for t, span in zip(encoding.ids, encoding.offsets, strict=True) if t == self._unknown]
        return unknown_symbols(text, spans, self._lacks)

    def _lacks(self, char: str) -> bool:
        """Whether the vocabulary has no token for `char` as the model reads it (lower-cased,
        accents stripped), remembered per character."""
        lacked = self._lacked.get(char)
        if lacked is None:
            read = self._tokenizer.normalizer.normalize_str(char) if self._tokenizer.normalizer else char
            lacked = any(self._tokenizer.token_to_id(c) is None for c in read)
            if len(self._lacked) < 65_536:
                self._lacked[char] = lacked
        return lacked

    def _unread(self, encoding: Encoding) -> bool:
        """Every token of the text unknown to the vocabulary (or special), and one at least."""
        ids, words = encoding.ids, self._words
        return words.unknown in ids and all(i == words.unknown or i in words.special for i in ids)

    def _runs(self) -> ThreadPoolExecutor:
        """The worker threads, started on the first call that has several runs to make."""
        if self._pool is None:
            with self._session_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="onnx-run")
        return self._pool

    def _pooled(self, batches: list[list[int]], encodings: list[Encoding]) -> Iterator[Vectors]:
        """Each batch's vectors in order, run on the pool with at most two runs a worker queued:
        the interpreter's exit runs every queued run first, and a call whose caller a stopping
        process left behind (a handed-back job's) held the exit for all of its file's texts.
        A run that fails, or a caller that stops reading, cancels the runs not yet started."""
        pool, ahead = self._runs(), deque[Future[Vectors]]()
        try:
            for batch in batches:
                if len(ahead) >= 2 * self._workers:
                    yield ahead.popleft().result()
                ahead.append(pool.submit(self._run, [encodings[i] for i in batch]))
            while ahead:
                yield ahead.popleft().result()
        finally:
            for future in ahead:
                future.cancel()

    def _batches(self, indices: list[int], lengths: list[int]) -> list[list[int]]:
        """`indices` grouped longest first, so each batch pads to little more than its own texts."""
        order = sorted(indices, key=lambda i: -lengths[i])
        batches: list[list[int]] = []
        for i in order:
            current = batches[-1] if batches else None
            if (
                current is None
                or len(current) >= self._batch_size
                or (len(current) + 1) * lengths[current[0]] > _TOKEN_BUDGET
            ):
                batches.append([i])
            else:
                current.append(i)
        return batches

    def _run(self, encodings: list[Encoding]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = dict(zip(_INPUTS, (ids, mask, np.zeros_like(ids)), strict=True))
        hidden: npt.NDArray[np.float32] = self._session.run(None, feeds)[0]
        weights = mask.astype(np.float32)
        pooled = np.einsum("bld,bl->bd", hidden, weights) / weights.sum(axis=1, keepdims=True)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32, copy=False)
