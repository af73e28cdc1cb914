"""How long a file ingest takes inside one API call on the AWS stack, and the largest file that fits
API Gateway's 29 s integration timeout with a margin: the queueing threshold (IngestQueueBytes).

    .venv/bin/python bench/sync_ingest_budget.py [--sizes 16,32,64,128,256,512,1024] [--rounds 3]
        [--titan-p50-ms 100] [--titan-p95-ms 300] [--verify]

Bedrock, OpenSearch, DynamoDB and S3 are not reachable here, so the estimate has two parts:

- **measured**: the real ingest (IngestService.ingest_bytes, not queued) of generated markdown of
  each size through the real BedrockEmbedder (8 calls at a time, as the API function runs it) on a
  stand-in Titan client that answers at once with a 1024-d reply, and in-memory stores wrapped to
  count their calls; every chunk's OpenSearch `_bulk` NDJSON is built as the adapter builds it. So
  the CPU the function spends (extraction, chunking, fingerprints, reply parsing, bulk bodies,
  record encoding) is measured on this machine, with the remote round trips counted. A Lambda of
  1,024 MB gets 1024/1769 of a vCPU, so the measured time is scaled by `--cpu-factor` (1.73).
- **assumed** (stated, printed, and the reason for the margin): each Titan InvokeModel call takes
  `--titan-*-ms`; the calls run `--concurrency` at a time; each `_bulk` request waits for a refresh
  (`refresh=wait_for`, up to the 1 s refresh interval) and costs `--os-ms-per-chunk` per chunk on a
  t3.small.search; each record-store call `--ddb-ms`, each blob call `--s3-ms`; and a cold start
  `--cold-start-s` on top at p95.

`--laptop` measures the embedded default instead (`cairn serve`: SQLite, the local ONNX embedder,
nothing assumed): the wall time of the same ingest of each size, and the chunks per second that
puts the embedded queueing threshold (`CAIRN_INGEST_QUEUE_BYTES`, 8 MiB) at.

An estimate is `cpu × factor + ⌈calls / concurrency⌉ × titan + bulks × refresh + chunks × os +
records × ddb + blobs × s3 (+ cold start)`. The threshold printed is the largest size whose p95
estimate stays within `--budget-s` / `--margin` (29 s / 2). `--verify` runs the sizes whose p50
estimate is under 15 s again with the stand-in Titan sleeping the p50 latency per call, and prints
measured against estimated wall time, so the model's treatment of the thread pool is checked too.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes

from tests.fakes.container import fake_adapters  # noqa: E402

from cairn.adapters.aws.bedrock_embedder import BedrockEmbedder  # noqa: E402
from cairn.adapters.aws.opensearch_queries import bulk_bodies  # noqa: E402
from cairn.bootstrap import build_container  # noqa: E402
from cairn.config import Settings  # noqa: E402

KiB = 1024
DIMENSION = 1024
BULK_BYTES = 5_000_000  # OpenSearchChunkIndex.bulk_bytes
WORDS = [
    "cairn",
    "keeps",
    "notes",
    "for",
    "agents",
    "who",
    "search",
    "recall",
    "and",
    "ask",
    "grounded",
    "questions",
    "about",
    "what",
    "they",
    "stored",
    "the",
    "ingest",
    "cuts",
    "each",
    "document",
    "into",
    "passages",
    "embeds",
    "every",
    "passage",
    "and",
    "indexes",
    "it",
    "so",
    "that",
    "later",
    "searches",
    "find",
    "the",
    "passage",
    "by",
    "its",
    "words",
    "and",
    "by",
    "its",
    "meaning",
]


class StandInTitan:
    """bedrock-runtime's invoke_model for Titan V2: a 1024-d reply after `latency_s`; counts calls."""

    def __init__(self, latency_s: float = 0.0) -> None:
        vector = np.random.default_rng(7).standard_normal(DIMENSION)
        self.reply = json.dumps({"embedding": vector.tolist(), "inputTextTokenCount": 160}).encode()
        self.latency_s = latency_s
        self.calls = 0

    def invoke_model(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        return {"body": io.BytesIO(self.reply)}


class Counted:
    """A port adapter whose method calls are counted (the remote round trips on AWS)."""

    def __init__(self, inner: Any, counts: Counter[str], kind: str) -> None:
        self._inner, self._counts, self._kind = inner, counts, kind

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute) or name.startswith("_"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self._counts[self._kind] += 1
            return attribute(*args, **kwargs)

        return call


class BulkCounted(Counted):
    """The chunk index: each upsert's `_bulk` bodies built as OpenSearchChunkIndex builds them."""

    def upsert(self, chunks: Any, vectors: Any) -> None:
        if len(chunks):
            for body, _ in bulk_bodies("cairn-dev-chunks", chunks, vectors, BULK_BYTES):
                self._counts["bulks"] += 1
                self._counts["bulk_bytes"] += len(body)
            self._counts["indexed_chunks"] += len(chunks)
        self._inner.upsert(chunks, vectors)


def markdown(size: int, seed: int) -> bytes:
    """Prose in paragraphs under headings, `size` bytes."""
    rng = np.random.default_rng(seed)
    out: list[str] = ["# Field notes\n\n"]
    total = len(out[0])
    section = 0
    while total < size:
        if rng.random() < 0.08:
            section += 1
            line = f"## Section {section}\n\n"
        else:
            n = int(rng.integers(40, 120))
            line = " ".join(WORDS[int(i)] for i in rng.integers(0, len(WORDS), n)).capitalize() + ".\n\n"
        out.append(line)
        total += len(line)
    return "".join(out).encode()[:size]


@dataclass
class Run:
    size: int
    seconds: float
    titan_calls: int
    chunks: int
    bulks: int
    bulk_bytes: int
    records: int
    blobs: int


def ingest_once(size: int, seed: int, latency_s: float, concurrency: int) -> Run:
    counts: Counter[str] = Counter()
    titan = StandInTitan(latency_s)
    base = fake_adapters(dimension=DIMENSION)
    embedder = BedrockEmbedder(titan, dimension=DIMENSION, concurrency=concurrency)
    adapters = replace(
        base,
        embedder=embedder,
        records=Counted(base.records, counts, "records"),
        blobs=Counted(base.blobs, counts, "blobs"),
        chunks=BulkCounted(base.chunks, counts, "chunk_calls"),
    )
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp), backend="aws", aws_local_fallbacks=True, max_content_chars=50_000_000
        )
        container = build_container(settings, adapters)
        brain = container.brains.create("Bench", slug="bench")
        data = markdown(size, seed)
        counts.clear()
        titan.calls = 0
        started = time.perf_counter()
        result = container.ingest.ingest_bytes(brain, data, name="notes.md", queue=False)
        seconds = time.perf_counter() - started
    embedder.close()
    assert result.status == "completed", result
    return Run(
        size, seconds, titan.calls, counts["indexed_chunks"], counts["bulks"], counts["bulk_bytes"],
        counts["records"], counts["blobs"],
    )  # fmt: skip


def laptop(sizes: list[int], rounds: int) -> int:
    """The embedded default, measured whole: SQLite stores and the ONNX embedder on this machine."""
    from cairn.config import MiB

    print("synchronous ingest on the embedded default (SQLite, ONNX MiniLM), measured here")
    rates = []
    for size in sizes:
        times = []
        for seed in range(rounds):
            with tempfile.TemporaryDirectory() as tmp:
                container = build_container(Settings(data_dir=Path(tmp), max_content_chars=50_000_000))
                brain = container.brains.create("Bench", slug="bench")
                data = markdown(size, seed)
                container.adapters.embedder.embed(["warm the model up"])
                started = time.perf_counter()
                result = container.ingest.ingest_bytes(brain, data, name="notes.md", queue=False)
                times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        rates.append(result.chunk_count / seconds)
        each = ", ".join(f"{t:.1f}" for t in times)
        print(f"  {size // KiB:>5} KiB: {result.chunk_count} chunks in {seconds:.1f} s "
              f"({result.chunk_count / seconds:.0f} chunks/s; runs {each} s)")  # fmt: skip
    per_mib = statistics.median(rates)
    chunks_per_mib = result.chunk_count / (sizes[-1] / MiB)
    print(f"  at {per_mib:.0f} chunks/s, the 8 MiB threshold is ~{8 * chunks_per_mib:.0f} chunks, "
          f"~{8 * chunks_per_mib / per_mib:.0f} s inside one call")  # fmt: skip
    return 0


@dataclass(frozen=True)
class Assumptions:
    titan_s: float
    refresh_s: float
    os_chunk_s: float
    ddb_s: float
    s3_s: float
    cold_start_s: float


def estimate(run: Run, cpu_factor: float, concurrency: int, a: Assumptions) -> tuple[float, dict[str, float]]:
    parts = {
        "cpu": run.seconds * cpu_factor,
        "titan": math.ceil(run.titan_calls / concurrency) * a.titan_s,
        "opensearch": run.bulks * a.refresh_s + run.chunks * a.os_chunk_s,
        "dynamodb": run.records * a.ddb_s,
        "s3": run.blobs * a.s3_s,
        "cold start": a.cold_start_s,
    }
    return sum(parts.values()), parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,32,64,128,256,512,1024", help="KiB, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8, help="Titan calls at once (BedrockEmbedder)")
    parser.add_argument(
        "--cpu-factor", type=float, default=1769 / 1024, help="Lambda 1,024 MB vs a full vCPU"
    )
    parser.add_argument("--titan-p50-ms", type=float, default=100.0)
    parser.add_argument("--titan-p95-ms", type=float, default=300.0)
    parser.add_argument("--refresh-p50-ms", type=float, default=500.0, help="refresh=wait_for per _bulk")
    parser.add_argument("--refresh-p95-ms", type=float, default=1000.0)
    parser.add_argument("--os-p50-ms-per-chunk", type=float, default=1.0)
    parser.add_argument("--os-p95-ms-per-chunk", type=float, default=3.0)
    parser.add_argument("--ddb-p50-ms", type=float, default=10.0)
    parser.add_argument("--ddb-p95-ms", type=float, default=30.0)
    parser.add_argument("--s3-p50-ms", type=float, default=30.0)
    parser.add_argument("--s3-p95-ms", type=float, default=100.0)
    parser.add_argument("--cold-start-s", type=float, default=3.0, help="added at p95 only")
    parser.add_argument("--budget-s", type=float, default=29.0)
    parser.add_argument("--margin", type=float, default=2.0)
    parser.add_argument("--verify", action="store_true", help="re-run small sizes with the p50 latency slept")
    parser.add_argument("--laptop", action="store_true", help="measure the embedded default (ONNX) instead")
    args = parser.parse_args()
    logging.getLogger("cairn").setLevel(logging.ERROR)  # the calibration notice, once per container
    sizes = [int(s) * KiB for s in args.sizes.split(",")]
    if args.laptop:
        return laptop(sizes, args.rounds)
    p50 = Assumptions(args.titan_p50_ms / 1e3, args.refresh_p50_ms / 1e3, args.os_p50_ms_per_chunk / 1e3,
                      args.ddb_p50_ms / 1e3, args.s3_p50_ms / 1e3, 0.0)  # fmt: skip
    p95 = Assumptions(args.titan_p95_ms / 1e3, args.refresh_p95_ms / 1e3, args.os_p95_ms_per_chunk / 1e3,
                      args.ddb_p95_ms / 1e3, args.s3_p95_ms / 1e3, args.cold_start_s)  # fmt: skip
    allowed = args.budget_s / args.margin
    print("synchronous ingest on the AWS API function: measured CPU here, remote latencies assumed")
    print(f"  assumed p50 / p95: Titan {args.titan_p50_ms:g} / {args.titan_p95_ms:g} ms per call, "
          f"{args.concurrency} at a time; _bulk refresh wait {args.refresh_p50_ms:g} / "
          f"{args.refresh_p95_ms:g} ms; OpenSearch {args.os_p50_ms_per_chunk:g} / "
          f"{args.os_p95_ms_per_chunk:g} ms per chunk; DynamoDB {args.ddb_p50_ms:g} / "
          f"{args.ddb_p95_ms:g} ms, S3 {args.s3_p50_ms:g} / {args.s3_p95_ms:g} ms per call; "
          f"cold start {args.cold_start_s:g} s at p95; CPU x{args.cpu_factor:.2f}")  # fmt: skip
    print(f"  budget {args.budget_s:g} s / margin {args.margin:g} = {allowed:.1f} s at p95")
    print(f"  {'size':>8} {'chunks':>7} {'titan':>6} {'bulks':>5} {'rec':>5} {'blob':>4} "
          f"{'cpu here':>9} {'p50 est':>8} {'p95 est':>8}  p95 parts")  # fmt: skip
    threshold = 0
    rows: list[tuple[Run, float]] = []
    for size in sizes:
        runs = [ingest_once(size, seed, 0.0, args.concurrency) for seed in range(args.rounds)]
        run = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
        run.seconds = statistics.median(r.seconds for r in runs)
        low, _ = estimate(run, args.cpu_factor, args.concurrency, p50)
        high, parts = estimate(run, args.cpu_factor, args.concurrency, p95)
        rows.append((run, low))
        shown = ", ".join(f"{k} {v:.1f}" for k, v in parts.items())
        verdict = "fits" if high <= allowed else "QUEUE"
        print(f"  {size // KiB:>5} KiB {run.chunks:>7} {run.titan_calls:>6} {run.bulks:>5} "
              f"{run.records:>5} {run.blobs:>4} {run.seconds:>8.2f}s {low:>7.1f}s {high:>7.1f}s  "
              f"{shown}  {verdict}")  # fmt: skip
        if high <= allowed:
            threshold = max(threshold, size)
    print(f"  largest size within {allowed:.1f} s at p95: {threshold // KiB} KiB "
          f"(IngestQueueBytes={threshold})")  # fmt: skip
    if args.verify:
        print(f"  check of the model: the stand-in Titan sleeps {args.titan_p50_ms:g} ms per call")
        for run, low in rows:
            if low > 15:
                continue
            slept = ingest_once(run.size, 0, p50.titan_s, args.concurrency)
            predicted = run.seconds + math.ceil(slept.titan_calls / args.concurrency) * p50.titan_s
            print(f"    {run.size // KiB:>5} KiB: wall {slept.seconds:.2f} s, "
                  f"model (CPU here + Titan) {predicted:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
