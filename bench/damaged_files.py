"""Damaged index files at 100,000 chunks: how soon `cairn serve` answers searches correctly again,
and that it never answers 5xx (but 503 while a brain is rebuilt) meanwhile.

    .venv/bin/python bench/damaged_files.py [--chunks 100000] [--store DIR] [--queries 40]

Builds (or reuses, with `--store`) one brain of `--chunks` one-chunk documents embedded with the
real ONNX model through `DocumentService.write_many` (what `cairn ingest` runs), then `cairn
compact` builds its HNSW index. The answers of `cairn serve` on that store to `--queries` searches
(REST, top 10) are the reference, and so are the same searches run exact (no ANN index) in this
process: either is a right answer of an intact store. Then, for each kind of damage, a copy of the
store is damaged, `cairn serve` started on it, and queries sent round and round from the moment
the process starts: the reference queries, and one query per damaged document (its own words; for
damage to the ANN index, ten documents picked at random), which must find that document first,
with the score it had before the damage. An answer is right when a targeted query does, and a
reference query's top 10 holds at least 9 of either reference's. The report gives when the server
first answered, from when every answer was right (seconds from the process's start; watched for
at least one more whole round and five seconds), how many 503s came before, and how many answers
were 5xx other than 503, or 200 and wrong, at any time (both must be 0: never a 500, never a
silently wrong answer).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from cairn.adapters.local.onnx_embedder import bulk_threads
from cairn.auth import access
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.documents.inputs import DocumentInput

CAIRN = str(Path(sys.executable).parent / "cairn")
ROW = 4 * 384
VOCABULARY = (  # noqa: SIM905 (a word list reads best as words)
    "tide estuary heron curlew saltmarsh shingle lighthouse ferry harbour mudflat dune beacon jetty "
    "lagoon reed sandbar creek pier buoy anchor kelp oyster cockle mussel gull tern plover redshank "
    "godwit dunlin knot avocet samphire sea lavender cordgrass spartina ebb flood neap spring surge "
    "breakwater groyne slipway quay mooring wreck channel delta inlet cove headland cliff stack arch"
).split()


def documents(count: int, seed: int) -> Iterator[tuple[str, bytes, DocumentInput]]:
    rng = random.Random(seed)
    for n in range(count):
        words = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(18, 40)))
        yield (
            f"notes/{n // 1000:03d}/{n:06d}.md",
            f"# Note {n}\n\n{words}. Entry {n}.".encode(),
            DocumentInput(),
        )


def build(store: Path, chunks: int) -> None:
    threads, workers = bulk_threads()
    settings = Settings(data_dir=store, onnx_threads=threads, onnx_workers=workers)
    container = build_container(settings)
    started = time.monotonic()
    with access.as_system():
        brain = container.brains.create("Big", slug="big")
        done = 0
        batch: list[tuple[str, bytes, DocumentInput]] = []
        for item in documents(chunks, 7):
            batch.append(item)
            if len(batch) == 2000:
                container.documents.write_many(brain, batch)
                done += len(batch)
                batch = []
                rate = done / (time.monotonic() - started)
                print(f"  built {done:,} documents ({rate:.0f}/s)", flush=True)
        if batch:
            container.documents.write_many(brain, batch)
    compacted = subprocess.run(
        [CAIRN, "compact", "--data-dir", str(store)], capture_output=True, text=True, env=env()
    )
    print(f"  compacted: {compacted.stdout.strip()} ({time.monotonic() - started:.0f} s in all)", flush=True)


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def queries(count: int) -> list[str]:
    rng = random.Random(11)
    return [" ".join(rng.sample(VOCABULARY, 3)) for _ in range(count)]


def answer(base: str, query: str) -> tuple[int, list[tuple[str, float]] | None]:
    response = httpx.post(f"{base}/v1/brains/big/search", json={"query": query, "top_k": 10}, timeout=30)
    if response.status_code != 200:
        return response.status_code, None
    return 200, [(h["path"], round(h["score"], 4)) for h in response.json()["hits"]]


def serve(store: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    port = free_port()
    log = (store.parent / f"{store.name}.log").open("wb")
    started = time.monotonic()
    process = subprocess.Popen(
        [CAIRN, "serve", "--port", str(port), "--data-dir", str(store)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env(),
    )
    return process, f"http://127.0.0.1:{port}", started


Answer = list[tuple[str, float]] | None
Asked = list[tuple[str, str | None]]  # (query, the document it must find first, if targeted)


def exact(store: Path, asked: Asked) -> list[Answer]:
    """The searches run exact over every vector, in this process, on the intact store."""
    container = build_container(Settings(data_dir=store))
    container.adapters.chunks.exact_max_rows = 10**9  # type: ignore[attr-defined]
    with access.as_system():
        brain = container.brains.resolve("big")
        found = [container.search.search(brain, query, top_k=10).hits for query, _ in asked]
    return [[(hit.path, round(hit.score, 4)) for hit in hits] for hits in found]


def reference(store: Path, asked: Asked) -> list[Answer]:
    process, base, _ = serve(store)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).json().get("status") == "ok":
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        return [answer(base, q)[1] for q, _ in asked]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def right(got: Answer, expected: tuple[Answer, Answer], target: str | None) -> bool:
    if got is None or expected[0] is None:
        return False
    if target is not None:
        return bool(got) and got[0][0] == target and abs(got[0][1] - expected[0][0][1]) < 1e-3
    paths = {p for p, _ in got}
    return any(len(paths & {p for p, _ in one}) >= min(9, len(one)) for one in expected if one is not None)


def trial(
    store: Path, asked: Asked, wanted: list[tuple[Answer, Answer]], window_s: float
) -> dict[str, float | int | None]:
    process, base, started = serve(store)
    first_answer: float | None = None
    last_bad = 0.0  # when the last 503 or wrong answer came (or the process started)
    right_from: float | None = None  # the first right answer after it
    whole_round_right = False
    unavailable = errors = wrong = 0
    try:
        while time.monotonic() - started < window_s:
            round_right = True
            for (query, target), expected in zip(asked, wanted, strict=True):
                try:
                    status, got = answer(base, query)
                except httpx.HTTPError:  # not listening yet
                    round_right = False
                    time.sleep(0.1)
                    break
                now = time.monotonic() - started
                first_answer = first_answer or now
                good = status == 200 and right(got, expected, target)
                unavailable += status == 503
                errors += status >= 500 and status != 503
                wrong += status == 200 and not good
                if good:
                    right_from = right_from or now
                else:
                    last_bad, right_from, round_right = now, None, False
            whole_round_right |= round_right
            if whole_round_right and right_from is not None and time.monotonic() - started > right_from + 5:
                break
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    return {
        "first": first_answer,
        "correct": right_from if whole_round_right else None,
        "503s": unavailable,
        "5xx": errors,
        "wrong": wrong,
        "last_bad": last_bad,
    }


def truncate(rows: float) -> Callable[[Path], None]:
    def cut(path: Path) -> None:
        with path.open("r+b") as fh:
            fh.truncate(path.stat().st_size - int(rows * ROW))

    return cut


def garbage_mid_file(path: Path) -> None:
    data = path.read_bytes()
    middle = len(data) // 2 // ROW * ROW
    path.write_bytes(data[:middle] + b"\x7f" * 64 + data[middle + 64 :])


def vectors_of(store: Path) -> Path:
    return max((store / "vectors").glob("*.f32"), key=lambda p: p.stat().st_size)


def index_of(store: Path) -> Path:
    return max((store / "vectors").glob("*.faiss"), key=lambda p: p.stat().st_size)


def halved(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def emptied(path: Path) -> None:
    path.write_bytes(b"")


def garbage_header(path: Path) -> None:
    path.write_bytes(b"\x00garbage" * 8 + path.read_bytes()[64:])


# name -> (the file, the damage, where in the vector file it lands: None for the ANN index)
CASES: dict[str, tuple[Callable[[Path], Path], Callable[[Path], None], str | None]] = {
    "ANN index truncated to half": (index_of, halved, None),
    "ANN index emptied": (index_of, emptied, None),
    "ANN index with a garbage header": (index_of, garbage_header, None),
    "ANN index deleted": (index_of, lambda p: p.unlink(), None),
    "vector file short by one row": (vectors_of, truncate(1), "end"),
    "vector file short by a partial row": (vectors_of, truncate(0.5), "end"),
    "vector file with garbage mid-file": (vectors_of, garbage_mid_file, "middle"),
}


def targeted(store: Path, where: str | None, seed: int) -> Asked:
    """A query per document whose vector the damage touches (ten at random for the ANN index),
    made of that document's own words."""
    rows = vectors_of(store).stat().st_size // ROW
    conn = sqlite3.connect(store / "chunks.sqlite3")
    try:
        if where is None:
            picked = [int(n) for n in random.Random(seed).sample(range(rows), 10)]
            found = [
                conn.execute("SELECT path FROM chunks WHERE vec_row = ?", (n,)).fetchone() for n in picked
            ]
        else:
            row = rows - 1 if where == "end" else rows // 2
            found = [conn.execute("SELECT path FROM chunks WHERE vec_row = ?", (row,)).fetchone()]
    finally:
        conn.close()
    wanted = {int(Path(path).stem): path for (path,) in filter(None, found)}
    bodies = {
        n: body.decode().split("\n\n", 1)[1]
        for n, (_, body, _) in enumerate(documents(max(wanted) + 1, 7))
        if n in wanted
    }
    return [(bodies[n], wanted[n]) for n in sorted(wanted)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=None, help="build here, or reuse what is here")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--window", type=float, default=90.0, help="seconds to watch each start")
    parser.add_argument("--case", default="", help="only the cases whose name holds this")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cairn-damage-"))
    store = args.store or work / "store"
    if not (store / "records.sqlite3").exists():
        print(f"building {args.chunks:,} chunks in {store}", flush=True)
        build(store, args.chunks)
    general: Asked = [(q, None) for q in queries(args.queries)]
    failed = False
    print(f"{'case':38} {'first answer':>12} {'right from':>10} {'503s':>5} {'5xx':>4} {'wrong':>6}")
    for n, (name, (target, damage, where)) in enumerate(CASES.items()):
        if args.case not in name:
            continue
        copy = work / "case"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(store, copy)
        asked = general + targeted(copy, where, n)
        wanted = list(zip(reference(copy, asked), exact(copy, asked), strict=True))
        damage(target(copy))
        result = trial(copy, asked, wanted, args.window)
        at, first = result["correct"], result["first"]
        failed |= at is None or at > 60 or result["5xx"] != 0 or result["wrong"] != 0
        shown = f"{at:.1f}s" if at is not None else f"never (last bad answer at {result['last_bad']:.1f}s)"
        print(
            f"{name:38} {first or 0:>11.1f}s {shown:>10} {result['503s']:>5} {result['5xx']:>4} "
            f"{result['wrong']:>6}",
            flush=True,
        )
    shutil.rmtree(work / "case", ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
