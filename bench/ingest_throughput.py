"""`cairn ingest` of a folder of real documents: chunks/s against the embedder's own ceiling.

    .venv/bin/python bench/ingest_throughput.py [--chars 2000000] [--rounds 2] [--keep DIR]

Builds a folder by copying documents found on this machine (no network): the repository's docs
and README, the package descriptions (dist-info METADATA, saved as .md) and the .md/.rst/.txt files
of the virtualenv's site-packages, then the standard library's .py sources saved as .txt, until
`--chars` characters. Runs the real CLI (`python -m cairn.entrypoints.cli ingest DIR`, a fresh data
directory each time) `--rounds` times and keeps the fastest (wall clock: process start to exit,
imports and model load included), as the ceiling keeps its best round: on a shared machine a best
of one against a best of several would measure the neighbours.

The ceiling is the embedder's own rate on the same texts, in the same run: the embedding texts of
the chunks the ingest stored (read back from its data directory), a sample of `--sample` of them
embedded in one `embed()` call, best of `--rounds`, by the embedder in its default configuration
and in the bulk one `cairn ingest` uses; the ratio is to the better of the two. The synthetic
figure of bench/embed_throughput.py (~200-word chunks, batches of 32) is printed beside it.
The machine is shared: load averages are printed before and after each ingest. So is the CPU time
per chunk of the ingest (all its threads, start-up included) and of the embedder alone: how much
work the ingest adds to the embedding, which no neighbour changes.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from cairn.adapters.local.onnx_embedder import bulk_threads
from cairn.bootstrap import build_container, local_embedder
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
        text = container.documents._text_of(doc)
        texts += [embedded for _, embedded in container.documents.indexer.chunks_of(doc, text)]
    return texts


def ceiling(embedder: Embedder, texts: list[str], rounds: int) -> tuple[float, float]:
    """The best rate of `rounds` and the CPU seconds per text."""
    best = 0.0
    embedder.embed(texts[:2])
    cpu = _own_cpu()
    for _ in range(rounds):
        started = time.perf_counter()
        embedder.embed(texts)
        best = max(best, len(texts) / (time.perf_counter() - started))
    return best, (_own_cpu() - cpu) / (rounds * len(texts))


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
    parser.add_argument("--sample", type=int, default=600, help="chunks the ceiling embeds")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="build the folder and store here")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="cairn-ingest-bench-"))
    folder, data = work / "corpus", work / "data"
    if data.exists():
        sys.exit(f"{data} exists: the ingest needs a fresh data directory")
    files, chars = build_folder(folder, args.chars)
    print(f"folder: {files} files, {chars:,} characters ({folder})")
    try:
        runs: list[tuple[float, float]] = []
        for n in range(args.rounds):
            run_data = data if n == 0 else work / f"data-{n}"
            load_before = os.getloadavg()[0]
            seconds, cpu, output = ingest(folder, run_data)
            print(output if n == 0 else output.splitlines()[-1])
            print(f"  ingest round {n + 1}: {seconds:.1f} s; load average {load_before:.2f} before, ", end="")
            print(f"{os.getloadavg()[0]:.2f} after")
            runs.append((seconds, cpu))
            if run_data != data:
                shutil.rmtree(run_data, ignore_errors=True)
        seconds, cpu = min(runs)
        texts = stored_texts(data)
        step = max(1, len(texts) // args.sample)
        sample = texts[::step][: args.sample]
        threads, workers = bulk_threads()
        configs = {
            "default (onnxruntime's threads, one run at a time)": Settings(data_dir=data),
            f"bulk ({threads} thread per run, {workers} runs at once)": Settings(
                data_dir=data, onnx_threads=threads, onnx_workers=workers
            ),
        }
        own, own_cpu = 0.0, 0.0
        for name, settings in configs.items():
            embedder = local_embedder(settings)
            (rate, per_text), other = ceiling(embedder, sample, args.rounds), synthetic(embedder, args.rounds)
            print(
                f"embedder {name}: {rate:.1f} chunks/s on {len(sample)} of the stored chunks "
                f"(best of {args.rounds}, {per_text * 1000:.1f} CPU ms each); "
                f"embed_throughput's synthetic chunks {other:.1f}/s"
            )
            if rate > own:
                own, own_cpu = rate, per_text
        rate = len(texts) / seconds
        print(
            f"ingest: {len(texts):,} chunks in {seconds:.1f} s = {rate:.1f} chunks/s (wall clock, best of "
            f"{args.rounds}); {cpu / len(texts) * 1000:.1f} CPU ms per chunk"
        )
        print(f"ratio: {rate / own:.2f} of the embedder's best ({own:.1f} chunks/s)")
        print(
            f"CPU per chunk: {cpu / len(texts) / own_cpu:.2f} times the embedder's; "
            f"load average at the end {os.getloadavg()[0]:.2f}"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
