"""kill -9 rounds: nothing Cairn acknowledged is lost or unsearchable, however often it is killed.

    .venv/bin/python bench/crash_rounds.py [--rounds 20] [--batch 100] [--data-dir DIR] [--seed 1]

Alternates two kinds of round on one data directory, `--rounds` of each:

- batch-ops: `cairn serve` starts; a client streams batch-ops of `--batch` writes (new documents,
  and a few rewrites of earlier ones) as fast as the server takes them; after a random 1-6 s the
  server is killed with SIGKILL from outside (no fault hook: wherever it happens to be). The
  batch in flight is not acknowledged; the next round's server starts and the client sends that
  batch again first, as a client whose request failed would.
- bulk ingest: `cairn ingest DIR` of `--files` new files (about 8 s of writing after 2 s of
  start-up here) is killed with SIGKILL after a random 2.5-9 s, then run again to the end (a rerun
  is how a user finishes an ingest).

At the end the data directory is opened in this process and every acknowledged document is
checked: its record holds the last acknowledged text, and its chunks are found by the full-text
leg alone and by the vector leg alone; no document has more chunks than its record says (nothing
found twice) and no deleted or unknown document keeps any. Prints the counts; exits 1 if any is
not zero.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from cairn.auth import access
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.documents.indexing import embedding_text
from cairn.services.repositories import document_of

CAIRN = str(Path(sys.executable).parent / "cairn")
WORDS = [
    "tern",
    "plover",
    "dunlin",
    "godwit",
    "curlew",
    "knot",
    "sanderling",
    "redshank",
    "whimbrel",
    "avocet",
]


def text_of(rng: random.Random, key: str, version: int) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
    return f"# {key}\n\nVersion {version} of {key}, token {key.replace('/', '')}v{version}. {body}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}


class Server:
    def __init__(self, data: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = (data.parent / "serve.log").open("ab")
        self.process = subprocess.Popen(
            [CAIRN, "serve", "--port", str(self.port), "--data-dir", str(data)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env(),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).json().get("status") == "ok":
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("cairn serve did not become healthy")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def send(base: str, writes: dict[str, str]) -> bool:
    ops = [
        {"type": "write", "path": p, "content_base64": base64.b64encode(t.encode()).decode()}
        for p, t in writes.items()
    ]
    try:
        answer = httpx.post(
            f"{base}/v1/brains/crash/documents/batch-ops", json={"reason": "bench", "ops": ops}, timeout=300
        )
    except httpx.HTTPError:
        return False
    if answer.status_code != 200:
        raise RuntimeError(f"batch-ops answered {answer.status_code}: {answer.text[:300]}")
    return True


def batch_round(
    data: Path, rng: random.Random, acked: dict[str, str], pending: dict[str, str], size: int, n: int
) -> int:
    """One batch-ops round; returns how many batches were acknowledged. `pending` is the batch a
    killed server never answered (sent again first)."""
    server = Server(data)
    stop = threading.Event()
    done = 0

    def client() -> None:
        nonlocal done
        while not stop.is_set():
            if not pending:
                fresh = {
                    f"b{n}/{i}.md": text_of(rng, f"b{n}/{i}", 1) for i in range(len(acked), len(acked) + size)
                }
                for old in rng.sample(sorted(acked), min(5, len(acked))):  # rewrite a few earlier ones
                    fresh[old] = text_of(rng, old.removesuffix(".md"), int(time.time() * 1000))
                pending.update(fresh)
            if not send(server.base, pending):
                return  # killed: the batch stays pending
            acked.update(pending)
            pending.clear()
            done += 1

    thread = threading.Thread(target=client)
    thread.start()
    time.sleep(rng.uniform(1.0, 6.0))
    server.kill()
    stop.set()
    thread.join(timeout=300)
    return done


def ingest_round(
    data: Path, rng: random.Random, acked: dict[str, str], files: int, n: int, root: Path
) -> bool:
    folder = root / f"ingest{n}"
    folder.mkdir()
    texts = {f"f{i}.md": text_of(rng, f"ingest{n}/f{i}", 1) for i in range(files)}
    for name, text in texts.items():
        (folder / name).write_text(text)
    args = [CAIRN, "ingest", str(folder), "--brain", "crash", "--data-dir", str(data)]
    victim = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
    time.sleep(rng.uniform(2.5, 9.0))
    killed = victim.poll() is None
    if killed:
        victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=60)
    again = subprocess.run(args, capture_output=True, text=True, env=env(), check=False)
    if again.returncode != 0:
        raise RuntimeError(f"the rerun of cairn ingest failed: {again.stderr[-500:]}")
    acked.update({f"ingest/{folder.name}/{name}": text for name, text in texts.items()})
    return killed


def verify(data: Path, acked: dict[str, str]) -> dict[str, int]:
    container = build_container(Settings(data_dir=data))
    counts = {"acknowledged": len(acked), "lost": 0, "wrong_text": 0, "no_fulltext": 0, "no_vector": 0}
    counts.update({"found_twice": 0, "ghost_documents": 0})
    chunks, embedder = container.adapters.chunks, container.adapters.embedder
    with access.as_system():
        brain = container.brains.resolve("crash")
        records = {
            document_of(item).path: document_of(item) for item in container.documents.repo.raw(brain.id)
        }
        held = chunks.held(brain.id)
        live_ids = {d.id for d in records.values() if d.deleted_at is None}
        counts["ghost_documents"] = sum(1 for doc_id in held if doc_id not in live_ids)
        for path, text in acked.items():
            doc = records.get(path)
            if doc is None or doc.deleted_at is not None:
                counts["lost"] += 1
                continue
            if container.documents.content(doc).decode() != text:
                counts["wrong_text"] += 1
            if held.get(doc.id, 0) > doc.chunk_count:
                counts["found_twice"] += 1
            first = next(iter(chunks.get_chunks(brain.id, doc.id)), None)
            scope = ChunkFilter(brain_ids=(brain.id,), document_ids=(doc.id,))
            token = text.split("token ", 1)[1].split(".", 1)[0]
            if not chunks.search(ChunkQuery(text=token, vector=None, filter=scope)):
                counts["no_fulltext"] += 1
            vector = embedder.embed([embedding_text(first.title, None, first.text) if first else text])[0]
            if first is None or not chunks.search(ChunkQuery(text="", vector=vector.tolist(), filter=scope)):
                counts["no_vector"] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds of each kind")
    parser.add_argument("--batch", type=int, default=100, help="new documents per batch-ops")
    parser.add_argument("--files", type=int, default=1500, help="files per bulk ingest")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="cairn-crash-"))
    data = args.data_dir or root / "data"
    subprocess.run(
        [CAIRN, "brains", "create", "Crash", "--data-dir", str(data)],
        env=env(),
        check=True,
        capture_output=True,
    )
    acked: dict[str, str] = {}
    pending: dict[str, str] = {}
    started = time.monotonic()
    batches = killed_ingests = 0
    for n in range(args.rounds):
        batches += batch_round(data, rng, acked, pending, args.batch, n)
        killed_ingests += ingest_round(data, rng, acked, args.files, n, root)
        print(f"round {n + 1}: {len(acked):,} acknowledged documents so far", flush=True)
    last = Server(data)  # the last batch a kill left unanswered, sent again
    if pending:
        assert send(last.base, pending)
        acked.update(pending)
    last.stop()
    counts = verify(data, acked)
    seconds = time.monotonic() - started
    print(
        f"{args.rounds} batch-ops rounds (killed with SIGKILL, {batches} batches acknowledged) and "
        f"{args.rounds} bulk ingest rounds ({killed_ingests} killed mid-run) in {seconds:.0f} s"
    )
    print(", ".join(f"{k} {v:,}" for k, v in counts.items()))
    return 0 if all(v == 0 for k, v in counts.items() if k != "acknowledged") else 1


if __name__ == "__main__":
    sys.exit(main())
