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
    counted = [0, 0]
    transact, query = records.transact, records.query

    def counted_transact(ops: Sequence[Any]) -> Any:
        counted[0] += 1
        return transact(ops)

    def counted_query(*args: Any, **kwargs: Any) -> Any:
        counted[1] += 1
        return query(*args, **kwargs)

    records.transact = counted_transact  # the bench's own probes, for the run
    records.query = counted_query
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
        f"{counted[0] / writes:.2f} transactions and {counted[1] / writes:.2f} queries each, "
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


CASES: dict[str, Callable[[int], str]] = {
    "thought-remember": thought_remember,
    "thought-forget": thought_forget,
    "thought-erase": thought_erase,
    "typed-store": typed_store,
    "typed-store-plain": typed_store_plain,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--writes", type=int, default=100, help="the writes timed (100)")
    args = parser.parse_args()
    for name in args.case or list(CASES):
        print(f"{name:<18} {CASES[name](args.writes)}", flush=True)


if __name__ == "__main__":
    main()
