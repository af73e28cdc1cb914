"""`cairn ingest` of a folder of real documents: chunks/s against the embedder's own ceiling.

    .venv/bin/python bench/ingest_throughput.py [--chars 2000000] [--rounds 2] [--keep DIR]

Builds a folder by copying documents found on this machine (no network): the repository's docs
and README, the package descriptions (dist-info METADATA, saved as .md) and the .md/.rst/.txt files
of the virtualenv's site-packages, then the standard library's .py sources saved as .txt, until
`--chars` characters. Runs the real CLI (`python -m cairn.entrypoints.cli ingest DIR`, a fresh data
directory each time) `--rounds` times (wall clock: process start to exit, imports and model load
included).

The ceiling is the embedder's own rate on the same texts, measured in every round right after
that round's ingest: the embedding texts of the chunks the ingest stored (read back from its data
directory), all of them (or a sample of `--sample`) embedded in one `embed()` call by the embedder
with onnxruntime's own threading (one run at a time) and in the bulk configuration `cairn ingest`
uses, each for about as long as the ingest ran. A round's ratio is its ingest's rate to the better
of the two; the summary gives each round's ratio, their median, and the best
ingest against the best ceiling of all rounds. The machine is shared and its speed drifts over
minutes (the embedder's CPU time per chunk moved by 15 % within an hour here), so the two are
measured side by side rather than all ingests first. The synthetic figure of
bench/embed_throughput.py (~200-word chunks, batches of 32) is printed beside it. Load averages are
printed before and after each ingest, and so is the CPU time per chunk of the ingest (all its
threads, start-up included) and of the embedder alone: how much work the ingest adds to the
embedding, which no neighbour changes.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from cairn.adapters.local.onnx_embedder import OnnxEmbedder, bulk_threads
from cairn.bootstrap import build_container
from cairn.bootstrap.models import local_embedder
from cairn.config import Settings
from cairn.ports.embedder import Embedder
from embed_throughput import chunk  # bench/ is the script's folder

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(sysconfig.get_paths()["purelib"])
STDLIB = Path(sysconfig.get_paths()["stdlib"])
MAX_FILE_BYTES = 200_000  # leave out lexicons and license dumps


def sources() -> Iterator[tuple[Path, str]]:
    """Candidate documents with the name each is saved under, in a fixed order."""
    yield ROOT / "README.md", "cairn/README.md"
    for path in sorted((ROOT / "docs").glob("*.md")):
        yield path, f"cairn/docs/{path.name}"
    for path in sorted(SITE.glob("*.dist-info/METADATA")):
        yield path, f"packages/{path.parent.name.removesuffix('.dist-info')}.md"
    for suffix in ("md", "rst", "txt"):
        for path in sorted(SITE.rglob(f"*.{suffix}")):
            if ".dist-info" not in str(path):
                yield path, f"site/{path.relative_to(SITE).as_posix().replace('/', '__')}"
    for path in sorted(STDLIB.glob("*.py")):
        yield path, f"stdlib/{path.stem}.txt"


def build_folder(folder: Path, chars: int) -> tuple[int, int]:
    """Copy documents into `folder` until `chars` characters; (files, characters) copied."""
    files = total = 0
    for path, name in sources():
        if total >= chars:
            break
        try:
            size = path.stat().st_size
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not 500 <= size <= MAX_FILE_BYTES or not text.strip():
            continue
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        files += 1
        total += len(text)
    return files, total


def ingest(folder: Path, data: Path) -> tuple[float, float, str]:
    """Run the CLI; its wall-clock and CPU seconds and its output (stdout's summary, stderr's
    last lines)."""
    env = {**os.environ, "CAIRN_DATA_DIR": str(data), "COLUMNS": "120"}
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cairn.entrypoints.cli", "ingest", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"cairn ingest failed ({done.returncode}):\n{done.stderr[-2000:]}")
    tail = [line for line in done.stderr.splitlines() if line.strip()][-4:]
    return seconds, _children_cpu() - cpu, "\n".join([*tail, done.stdout.strip()])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stored_texts(data: Path) -> list[str]:
    """The embedding text of every chunk the ingest stored."""
    container = build_container(Settings(data_dir=data))
    brain = container.brains.resolve(None)
    texts: list[str] = []
    for doc in container.documents.documents(brain):
        text = container.documents.text_of(doc)
        texts += [embedded for _, embedded in container.documents.indexer.chunks_of(doc, text)]
    return texts


def ceiling(embedder: Embedder, texts: list[str]) -> tuple[float, float]:
    """The rate of one `embed()` of `texts` and the CPU seconds per text."""
    embedder.embed(texts[:2])
    cpu = _own_cpu()
    started = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - started), (_own_cpu() - cpu) / len(texts)


def synthetic(embedder: Embedder, rounds: int) -> float:
    """bench/embed_throughput.py's chunk case: 64 chunks of ~200 words, `embed()` of 32."""
    rng = random.Random(0)
    chunks = [chunk(rng) for _ in range(64)]
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for i in range(0, 64, 32):
            embedder.embed(chunks[i : i + 32])
        best = max(best, 64 / (time.perf_counter() - started))
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chars", type=int, default=2_000_000, help="characters of documents to copy")
    parser.add_argument("--sample", type=int, default=0, help="chunks the ceiling embeds (0: all)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="build the folder and store here")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="cairn-ingest-bench-"))
    folder, data = work / "corpus", work / "data"
    if data.exists():
        sys.exit(f"{data} exists: the ingest needs a fresh data directory")
    files, chars = build_folder(folder, args.chars)
    print(f"folder: {files} files, {chars:,} characters ({folder})")
    threads, workers = bulk_threads()
    embedders: dict[str, Embedder] = {
        "onnxruntime's own threads, one run at a time": OnnxEmbedder(threads=0, workers=1),
        f"bulk, as cairn runs it ({threads} thread per run, {workers} runs at once)": local_embedder(
            Settings(data_dir=data, onnx_threads=threads, onnx_workers=workers)
        ),
    }
    try:
        ingests: list[tuple[float, float, int]] = []  # seconds, CPU seconds, chunks
        ceilings: list[tuple[float, float]] = []  # the round's best rate, its CPU seconds per text
        for n in range(args.rounds):
            run_data = data if n == 0 else work / f"data-{n}"
            load_before = os.getloadavg()[0]
            seconds, cpu, output = ingest(folder, run_data)
            print(output if n == 0 else output.splitlines()[-1])
            texts = stored_texts(run_data)
            step = max(1, len(texts) // args.sample) if args.sample else 1
            sample = texts[::step][: args.sample or None]
            rates = {name: ceiling(embedder, sample) for name, embedder in embedders.items()}
            best_name = max(rates, key=lambda name: rates[name][0])
            ingests.append((seconds, cpu, len(texts)))
            ceilings.append(rates[best_name])
            rate = len(texts) / seconds
            print(
                f"  round {n + 1}: ingest {seconds:.1f} s = {rate:.1f} chunks/s "
                f"({cpu / len(texts) * 1000:.1f} CPU ms each); embedder alone on {len(sample)} of its "
                + ", ".join(f"{name} {r:.1f}/s ({c * 1000:.1f} CPU ms)" for name, (r, c) in rates.items())
                + f"; ratio {rate / rates[best_name][0]:.2f}; load average {load_before:.2f} before, "
                f"{os.getloadavg()[0]:.2f} after"
            )
            if run_data != data:
                shutil.rmtree(run_data, ignore_errors=True)
        for name, embedder in embedders.items():
            print(f"embed_throughput's synthetic chunks, {name}: {synthetic(embedder, args.rounds):.1f}/s")
        ratios = sorted(
            chunks / seconds / best for (seconds, _, chunks), (best, _) in zip(ingests, ceilings, strict=True)
        )
        median = statistics.median(ratios)
        seconds, cpu, chunks = min(ingests)
        own, own_cpu = max(ceilings)
        print(
            f"ingest: {chunks:,} chunks in {seconds:.1f} s = {chunks / seconds:.1f} chunks/s "
            f"(wall clock, best of {args.rounds}); {cpu / chunks * 1000:.1f} CPU ms per chunk"
        )
        print(
            f"ratio: {median:.2f} median of the rounds ({', '.join(f'{r:.2f}' for r in ratios)}); "
            f"best ingest to best embedder {chunks / seconds / own:.2f} ({own:.1f} chunks/s)"
        )
        print(
            f"CPU per chunk: {cpu / chunks / own_cpu:.2f} times the embedder's; "
            f"load average at the end {os.getloadavg()[0]:.2f}"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
