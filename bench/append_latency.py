"""Latency of appending one line to a large document, through REST on the embedded stores.

For each size, builds a markdown document of about that many bytes with one PUT (headings,
paragraphs, lists; embedded by the ONNX model like any write), then appends a short line
`--appends` times with `POST /v1/brains/{id}/documents/append` and prints the p50 / p95 / max of
the append requests, timed client-side through the in-process app. A second container opened on
the same data directory then appends once more: the first append of a process, which has no chunking
of the document in memory yet and cuts the whole text.

    python bench/append_latency.py [--sizes 8000,139000,1000000] [--appends 50] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app

WORDS = [
    "river",
    "stone",
    "lantern",
    "harbor",
    "meadow",
    "copper",
    "signal",
    "orchard",
    "window",
    "ledger",
    "falcon",
    "compass",
    "thunder",
    "velvet",
    "canyon",
    "glacier",
    "marble",
    "pepper",
    "violin",
    "garden",
    "rocket",
    "timber",
    "silver",
    "anchor",
    "quartz",
    "maple",
    "ember",
    "cobalt",
    "willow",
    "summit",
    "prairie",
]
OCTET = {"content-type": "application/octet-stream"}


def markdown(size: int, seed: int) -> bytes:
    """About `size` bytes of notes: a title, a section every dozen blocks, paragraphs and lists."""
    rnd = random.Random(seed)
    parts, total, n = ["# Field notes\n\n"], 15, 0
    while total < size:
        n += 1
        if n % 12 == 1:
            block = f"## Section {n // 12 + 1}\n\n"
        elif n % 7 == 0:
            items = [" ".join(rnd.choices(WORDS, k=rnd.randint(3, 9))) for _ in range(rnd.randint(2, 5))]
            block = "".join(f"- {item}\n" for item in items) + "\n"
        else:
            sentences = [
                " ".join(rnd.choices(WORDS, k=rnd.randint(6, 20))).capitalize() + "."
                for _ in range(rnd.randint(2, 7))
            ]
            block = " ".join(sentences) + "\n\n"
        parts.append(block)
        total += len(block)
    return "".join(parts).encode()


def timed_append(client: TestClient, url: str, path: str, line: str) -> float:
    started = time.perf_counter()
    response = client.post(url, params={"path": path}, content=line.encode(), headers=OCTET)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 204:
        raise SystemExit(f"append failed: {response.status_code} {response.text}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8000,139000,1000000")
    parser.add_argument("--appends", type=int, default=50)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-append-"))
    settings = Settings(data_dir=data_dir)
    container = build_container(settings)
    brain = container.brains.create("Append bench", slug="append-bench")
    base = f"/v1/brains/{brain.id}/documents"
    rnd = random.Random(11)
    paths: list[str] = []
    with TestClient(create_app(container), base_url="http://localhost") as client:
        for size in (int(s) for s in args.sizes.split(",")):
            path = f"notes/doc-{size}.md"
            paths.append(path)
            body = markdown(size, seed=size)
            started = time.perf_counter()
            response = client.put(base, params={"path": path}, content=body, headers=OCTET)
            if response.status_code != 204:
                raise SystemExit(f"write failed: {response.status_code} {response.text}")
            built = time.perf_counter() - started
            times = [
                timed_append(client, f"{base}/append", path, f"- {' '.join(rnd.choices(WORDS, k=8))} {i}\n")
                for i in range(args.appends)
            ]
            p50, p95 = np.percentile(times, [50, 95])
            chunks = container.documents.get(brain, path).chunk_count
            print(
                f"{len(body):>9,} bytes ({chunks} chunks, written in {built:.1f} s): {len(times)} appends "
                f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {max(times):.1f} ms",
                flush=True,
            )
    fresh = build_container(settings)  # a new process's state on the same files
    fresh.adapters.embedder.embed(["load the model first"])
    with TestClient(create_app(fresh), base_url="http://localhost") as client:
        client.get("/healthz")  # the app's own first-request costs are not the append's
        for path in paths:
            first = timed_append(client, f"{base}/append", path, "- the first line after a restart\n")
            print(f"first append after a restart, {path}: {first:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
