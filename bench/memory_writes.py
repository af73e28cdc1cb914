"""What one memory write costs on the embedded store: its transactions and its wall time.

A memory's links are written after its commit, which marks them pending (services/links/pending.py);
these cases count every record-store transaction a run of writes makes, beside the time, so a step
added to each write (a mark's own delete was one: 4.03 s for 100 ThoughtMCP memories against 3.56 s
without marks) shows as a number that does not depend on the disk. The tests' hashing embedder
stands in for the model. Run them through `bench/hostile_inputs.py --case NAME`, or alone:

    .venv/bin/python bench/memory_writes.py [--case thought-erase ...] [--writes N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hostile_services import _hashing_store

if TYPE_CHECKING:
    from cairn.bootstrap import Container

SUBJECTS = ("lamp", "fog horn", "tide gauge", "boat hook", "log book", "radio mast")


def _counting(c: Container) -> list[int]:
    """Count the record store's transactions and queries from here on (every repository shares
    the store)."""
    records = c.documents.repo.records
    counted = [0, 0, 0]
    transact, query, get, put, delete = (
        records.transact,
        records.query,
        records.get,
        records.put,
        records.delete,
    )

    inside = [0]  # a put or delete the store makes a transaction of counts once

    def counted_transact(ops: Sequence[Any]) -> Any:
        counted[0] += 0 if inside[0] else 1
        return transact(ops)

    def counted_query(*args: Any, **kwargs: Any) -> Any:
        counted[1] += 1
        return query(*args, **kwargs)

    def counted_get(*args: Any, **kwargs: Any) -> Any:
        counted[2] += 1
        return get(*args, **kwargs)

    def one_item(write: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        counted[0] += 1  # a write of one item is a transaction of its own
        inside[0] += 1
        try:
            return write(*args, **kwargs)
        finally:
            inside[0] -= 1

    def counted_put(*args: Any, **kwargs: Any) -> Any:
        return one_item(put, *args, **kwargs)

    def counted_delete(*args: Any, **kwargs: Any) -> Any:
        return one_item(delete, *args, **kwargs)

    records.transact = counted_transact  # the bench's own probes, for the run
    records.query = counted_query
    records.get = counted_get
    records.put = counted_put
    records.delete = counted_delete
    return counted


def _timed(writes: int, build: Callable[[Container], Callable[[int], Any]], first: int = 1) -> str:
    """`first` writes to warm up (the store's files made), then `writes` timed and counted."""
    with tempfile.TemporaryDirectory() as data:
        c = _hashing_store(Path(data))
        write = build(c)
        for n in range(first):
            write(-1 - n)
        counted = _counting(c)
        started = time.perf_counter()
        for n in range(writes):
            write(n)
        wall = time.perf_counter() - started
        marks = len(list(c.pending_links.pending()))
    return (
        f"{writes:,} writes {wall:.2f} s wall ({wall / writes * 1000:.1f} ms each), "
        f"{counted[0] / writes:.2f} transactions, {counted[1] / writes:.2f} queries and "
        f"{counted[2] / writes:.2f} gets each, "
        f"{marks} marks left"
    )


def thought_remember(writes: int = 100) -> str:
    """ThoughtMCP `remember` of one user's memories, alike enough to be linked to each other."""
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import NewMemory

    def build(c: Container) -> Callable[[int], Any]:
        brain = thought_brain(c.brains, None, create=True)

        def write(n: int) -> Any:
            text = f"The keeper checked the {SUBJECTS[n % 6]} at {n % 24} o'clock, as logged."
            return c.thoughts.remember(brain, NewMemory(text, "u", "s", "semantic"))

        return write

    return _timed(writes, build)


def thought_forget(writes: int = 100) -> str:
    """ThoughtMCP hard `forget` of one user's memories, each linked to those alike (stored first,
    untimed): the removal's commit, then its links' and the other ends' statistics'."""
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import NewMemory

    def build(c: Container) -> Callable[[int], Any]:
        brain = thought_brain(c.brains, None, create=True)
        ids = [
            c.thoughts.remember(
                brain,
                NewMemory(
                    f"The keeper checked the {SUBJECTS[n % 6]} at {n % 24} o'clock.", "u", "s", "semantic"
                ),
            )["memoryId"]
            for n in range(writes + 1)
        ]
        return lambda n: c.thoughts.forget(brain, ids[n], "u")

    return _timed(writes, build)


def thought_erase(writes: int = 100) -> str:
    """An erasure's removal of ThoughtMCP memories one at a time (services/erasure/documents.py,
    as a subject's erasure removes each document it selected), every other memory kept: every
    other one stored about a subject of its own, so not all of them are linked."""
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import NewMemory

    def build(c: Container) -> Callable[[int], Any]:
        brain = thought_brain(c.brains, None, create=True)
        for n in range(writes + 1):
            text = (
                f"The keeper checked the {SUBJECTS[n % 6]} at {n % 24} o'clock."
                if n % 2
                else f"Item {n}: zq{n}x wv{n}y kp{n}z."
            )
            c.thoughts.remember(brain, NewMemory(text, "u", "s", "semantic"))
        docs = sorted(c.documents.repo.list(brain.id), key=lambda d: d.path)

        def erase(n: int) -> Any:
            doomed = docs[n if n >= 0 else writes]
            return c.erasure.eraser.erase(brain, [doomed], [d for d in docs if d.id != doomed.id])

        return erase

    return _timed(writes, build)


def typed_store(writes: int = 100) -> str:
    """A zengram store of events about one client (each linked to the client's entity and what
    the rules find in its text)."""
    from cairn.domain.models import MemoryType
    from cairn.services.memory.memory_model import MemoryInput

    def build(c: Container) -> Callable[[int], Any]:
        brain = c.brains.create("Default", slug="default")

        def write(n: int) -> Any:
            text = f"Deployed billing {n} to PostgreSQL after the {SUBJECTS[n % 6]} check."
            return c.memories.store(brain, MemoryInput(MemoryType.event, text, client_id="harbour-trust"))

        return write

    return _timed(writes, build)


def typed_store_plain(writes: int = 100) -> str:
    """A store of events that mention no entity (no client, nothing the rules find): nothing to link."""
    from cairn.domain.models import MemoryType
    from cairn.services.memory.memory_model import MemoryInput

    def build(c: Container) -> Callable[[int], Any]:
        brain = c.brains.create("Default", slug="default")
        return lambda n: c.memories.store(
            brain, MemoryInput(MemoryType.event, f"the kettle was descaled {n} times over the winter")
        )

    return _timed(writes, build)


def _note(n: int, parts: int) -> bytes:
    """Note `n` of `parts` parts (a chunk each), each part naming two concepts of its own."""

    def name(k: int) -> str:
        letters = ""
        while True:
            k, d = divmod(k, 26)
            letters += chr(97 + d)
            if not k:
                return "V" + letters + "mere"

    return "\n\n".join(
        f"## Part {i}\n\n"
        + f"The {name(20 * n + i)} Ferry Company sailed to {name(20 * n + 10 + i)} Harbour. " * 8
        for i in range(parts)
    ).encode()


def _ingested(c: Container, writes: int) -> tuple[Any, list[Any]]:
    """`writes` + 1 notes of ten parts, ingested (their chunks linked to their concepts), untimed."""
    brain = c.brains.create("Default", slug="default")
    for n in range(writes + 1):
        c.ingest.ingest_bytes(brain, _note(n, 10), name=f"{n}.md", path=f"notes/{n}.md", queue=False)
    return brain, sorted(c.documents.repo.list(brain.id), key=lambda d: int(d.path[6:-3]))


def doc_ingest(writes: int = 100) -> str:
    """An ingest of a new note of ten parts (a chunk each), its chunks linked to their concepts."""

    def build(c: Container) -> Callable[[int], Any]:
        brain = c.brains.create("Default", slug="default")
        return lambda n: c.ingest.ingest_bytes(
            brain, _note(n + 1, 10), name=f"{n + 1}.md", path=f"notes/{n + 1}.md", queue=False
        )

    return _timed(writes, build)


def doc_rewrite(writes: int = 100) -> str:
    """An ingest rewriting a note of ten parts (a chunk each) to its first three: its chunks' concept
    links compared with the text's, and those of the seven chunks it dropped removed
    (services/mnemosyne/concept_reach.py)."""

    def build(c: Container) -> Callable[[int], Any]:
        brain, _ = _ingested(c, writes)

        def write(n: int) -> Any:
            n = n if n >= 0 else writes
            return c.ingest.ingest_bytes(
                brain, _note(n, 3), name=f"{n}.md", path=f"notes/{n}.md", queue=False
            )

        return write

    return _timed(writes, build)


def doc_erase(writes: int = 100) -> str:
    """An erasure's removal of ingested notes one at a time (services/erasure/documents.py), each
    written again with three of its ten parts through another surface (no linker ran): the links
    of all ten chunks go."""

    def build(c: Container) -> Callable[[int], Any]:
        brain, docs = _ingested(c, writes)
        for n, doc in enumerate(docs):
            c.documents.write(brain, doc.path, _note(n, 3))

        def erase(n: int) -> Any:
            doomed = docs[n if n >= 0 else writes]
            return c.erasure.eraser.erase(brain, [doomed], [d for d in docs if d.id != doomed.id])

        return erase

    return _timed(writes, build)


def reach_pass(documents: int = 10_000) -> str:
    """The pass over concept links an earlier release left without a reach (services/mnemosyne/
    concept_reach_sweep.py) on one brain of `documents` documents of one chunk each, linked as that
    release linked them (no reach) on five chunk ordinals, as a document that shrank from five
    parts; a tenth of them erased by that release (their records gone, their links left). Timed: the
    pass from its first step to its last, in the sweep's 10 s budgets; counted: its scan pages,
    transactions, queries and gets."""
    from cairn.domain.models import Chunk
    from cairn.services.documents.chunk_ids import chunk_id
    from cairn.services.mnemosyne.concept_reach_sweep import ReachSweep, done_key

    def items(records: Any, prefix: str) -> int:
        found, cursor = 0, None
        while True:
            page = records.scan([prefix], cursor=cursor)
            found, cursor = found + len(page.items), page.cursor
            if cursor is None:
                return found

    with tempfile.TemporaryDirectory() as data:
        c = _hashing_store(Path(data))
        records = c.documents.repo.records
        brain = c.brains.create("Default", slug="default")
        live = documents - documents // 10
        for n in range(live):
            c.documents.write(brain, f"notes/{n}.md", f"Note {n}.".encode())
        docs = [d.id for d in c.documents.repo.list(brain.id)]
        docs += [f"doc_{n:026d}" for n in range(documents - live)]  # erased: their records gone
        links, now = 0, c.adapters.clock.now()
        for n, doc_id in enumerate(docs):
            text = _note(n, 5).decode()
            parts = text.split("\n\n")[1::2]  # each part's sentences, under its heading
            chunks = [
                Chunk(
                    id=chunk_id(doc_id, k),
                    brain_id=brain.id,
                    document_id=doc_id,
                    path="",
                    ordinal=k,
                    text=t,
                    created_at=now,
                )
                for k, t in enumerate(parts)
            ]
            links += c.concepts.index(brain.id, text, chunks, fresh=True)
        counted = _counting(c)
        scans, scan = [0], records.scan

        def counted_scan(*args: Any, **kwargs: Any) -> Any:
            scans[0] += 1
            return scan(*args, **kwargs)

        records.scan = counted_scan
        sweep = ReachSweep(records, c.concepts.reach, c.documents.repo, c.adapters.clock)
        started = time.perf_counter()
        ticks = 0
        while records.get(*done_key(brain.id)) is None:
            ticks += 1
            sweep.carry_on(c.brains.own, stop=lambda: False)
        wall = time.perf_counter() - started
        records.scan = scan
        reaches = items(records, f"links#{brain.id}#reach#")
        kept = items(records, f"links#{brain.id}#out#chk_")
    return (
        f"{documents:,} documents, {links:,} links: {wall:.2f} s wall in {ticks} sweep ticks, "
        f"{scans[0]} scan pages, {counted[0]:,} transactions, {counted[1]:,} queries, "
        f"{counted[2]:,} gets; after: {reaches:,} reaches, {kept:,} links"
    )


CASES: dict[str, Callable[[int], str]] = {
    "doc-ingest": doc_ingest,
    "doc-rewrite": doc_rewrite,
    "doc-erase": doc_erase,
    "thought-remember": thought_remember,
    "thought-forget": thought_forget,
    "thought-erase": thought_erase,
    "typed-store": typed_store,
    "typed-store-plain": typed_store_plain,
}
PASSES: dict[str, Callable[[int], str]] = {"reach-pass": reach_pass}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=sorted({*CASES, *PASSES}), action="append")
    parser.add_argument("--writes", type=int, default=100, help="the writes timed (100)")
    parser.add_argument("--documents", type=int, default=10_000, help="the reach pass's brain (10,000)")
    args = parser.parse_args()
    for name in args.case or list(CASES):
        run = f"{PASSES[name](args.documents)}" if name in PASSES else CASES[name](args.writes)
        print(f"{name:<18} {run}", flush=True)


if __name__ == "__main__":
    main()
