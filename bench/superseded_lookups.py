"""zengram's lookups of current memories in a brain that also holds many superseded values: `facts`
fact keys, each written `values` times (each value superseding the one before), through the
memory service on the embedded store, the tests' hashing embedder standing in for the model.
Run it through `bench/hostile_inputs.py --case superseded-facts [--facts N] [--keep DIR] [--copies K]`
(`--copies`: `widen`).

With `keep`, the store is built there once and reused by later runs (the same data timed by two
releases of the code). A store without the current memories' entries (written before them) has
its first lookup timed apart, then the sweep's build of the entries (`first_lookup`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cairn.ports.records import Delete, Item, Put
from hostile_services import _hashing_store

if TYPE_CHECKING:
    from cairn.bootstrap import Container
    from cairn.domain.models import Brain


def widen(c: Container, brain: Brain, copies: int) -> None:
    """Copy every fact record of `brain` `copies` times over as records (new ids, paths and keys,
    each copy's chain pointing within itself; no chunks, the texts' bytes shared): a brain of ten
    times the facts without ten times the writes. Only the lookups of records are timed on it."""
    try:
        from cairn.services.documents.current_memories import entry_ops
    except ImportError:  # the code before it

        def entry_ops(ops: Sequence[Put | Delete]) -> list[Put | Delete]:
            return []

    from cairn.services.repositories import all_items, doc_id_key, doc_key, documents_pk

    records = c.adapters.records
    originals = list(all_items(records, documents_pk(brain.id), "doc#memories/fact/"))
    facts = sum(1 for item in originals if item.data["memory"]["superseded_by"] is None)
    ops: list[Put | Delete] = []
    for copy in range(1, copies + 1):
        for item in originals:
            data = json.loads(json.dumps(item.data))
            data["id"] = f"{data['id']}x{copy}"
            data["path"] = f"memories/fact/{data['id']}.md"
            m = data["memory"]
            m["key"] = f"pump.{int(m['key'].split('.')[1]) + facts * copy}"
            m["superseded_by"] = m["superseded_by"] and f"{m['superseded_by']}x{copy}"
            put = Put(Item(*doc_key(brain.id, data["path"]), data=data))
            ops += [
                put,
                Put(Item(*doc_id_key(data["id"]), data={"brain_id": brain.id, "path": data["path"]})),
            ]
            ops += entry_ops([put])
            if len(ops) >= 90:
                records.transact(ops)
                ops = []
    if ops:
        records.transact(ops)


def first_lookup(c: Container, brain: Brain, key: str) -> list[str]:
    """On a brain without its current memories' entries (a store an earlier release wrote), the
    first brain_query by key timed alone; then, where the sweep builds them, that build, a tick's
    share at a time."""
    from cairn.services.repositories import documents_pk

    current = c.documents.repo.current
    pk = documents_pk(brain.id)
    if current.built(pk):
        return []
    started = time.perf_counter()
    c.zengram.query({"type": "fact", "key": key})
    said = [f"first lookup without entries {(time.perf_counter() - started) * 1000:.1f} ms"]
    if not current.built(pk) and hasattr(current, "carry_on"):
        from cairn.services.documents.current_memories import ENTRIES_BUDGET_S

        started, ticks = time.perf_counter(), 0
        while not current.built(pk):
            current.carry_on([pk], budget_s=ENTRIES_BUDGET_S)
            ticks += 1
        said.append(f"the sweep's build {time.perf_counter() - started:.1f} s in {ticks} ticks")
    return said


def superseded_facts(facts: int = 1_000, values: int = 11, keep: Path | None = None, copies: int = 0) -> str:
    """Each lookup timed first, then the least of 5: brain_query by one key (one row), brain_query
    of every fact (the newest 50 rows), zengram's export of the active facts (the first 1,000),
    the memory count uncached, zengram's stats and a briefing."""
    import tempfile

    from cairn.domain.models import MemoryType
    from cairn.services.memory.memory_model import MemoryInput

    said: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        data = keep or Path(scratch)
        built = (data / "built").exists()
        c = _hashing_store(data)
        if not built:
            brain = c.brains.create("Default", slug="default")
            writes: list[float] = []
            for round_ in range(values):
                for n in range(facts):
                    value = MemoryInput(
                        MemoryType.fact, f"Pump {n} runs at {round_ * 7 + n % 97} bar.", key=f"pump.{n}"
                    )
                    started = time.perf_counter()
                    c.memories.store(brain, value)
                    writes.append(time.perf_counter() - started)
            (data / "built").write_text(f"{facts} {values}\n")
            said.append(f"built: {len(writes):,} writes, {sum(writes) / len(writes) * 1000:.1f} ms each")
        brain = c.brains.get("default")
        if copies and not (data / "widened").exists():
            widen(c, brain, copies)
            (data / "widened").write_text(f"{copies}\n")
        facts *= copies + 1
        said += first_lookup(c, brain, f"pump.{facts // 2}")
        cases: list[tuple[str, Callable[[], object]]] = [
            ("brain_query by key", lambda: c.zengram.query({"type": "fact", "key": f"pump.{facts // 2}"})),
            ("brain_query all", lambda: c.zengram.query({"type": "fact"})),
            ("export active", lambda: c.zengram.export({"type": "fact"})),
            ("count", lambda: c.memories.count(brain, max_age_s=0)),
            ("stats", c.zengram.stats),
            ("briefing", lambda: c.zengram.briefing({"since": "2000-01-01T00:00:00Z"})),
        ]
        for name, run in cases:
            took = []
            for _ in range(6):
                started = time.perf_counter()
                run()
                took.append((time.perf_counter() - started) * 1000)
            said.append(f"{name} first {took[0]:.1f} ms, least {min(took[1:]):.1f} ms")
    return f"{facts:,} facts of {values} values each: " + ", ".join(said)


def _superseded_store(data: Path, facts: int, copies: int) -> tuple[Container, Brain]:
    """The superseded-facts store at `data` (built there first when it holds none) and its brain."""
    if not (data / "built").exists() or (copies and not (data / "widened").exists()):
        superseded_facts(facts, keep=data, copies=copies)
    c = _hashing_store(data)
    brain = c.brains.get("default")
    assert brain is not None
    return c, brain


def memory_counts(facts: int = 1_000, keep: Path | None = None, copies: int = 0) -> str:
    """The memory count (briefings' totals) of the superseded-facts store, built there first when
    `keep` holds none: by reading every record (the kept counts set aside), the build of the kept
    counts, then from them; and a fact's store with them built (the counts read and written in
    its commit)."""
    import tempfile
    from unittest.mock import patch

    from cairn.domain.models import MemoryType
    from cairn.services.memory.memory_model import MemoryInput
    from cairn.services.repositories import documents_pk

    with tempfile.TemporaryDirectory() as scratch:
        c, brain = _superseded_store(keep or Path(scratch), facts, copies)
        pk, counts = documents_pk(brain.id), c.documents.repo.counts
        c.documents.repo.records.delete(pk, "memory-counts")  # as a store written before them
        with patch.object(counts, "step", return_value=False):  # the count reads every record, builds nothing
            started = time.perf_counter()
            total, _ = c.memories.count(brain, max_age_s=0)
            took_ms = (time.perf_counter() - started) * 1000
            said = [f"{total:,} memories: count reading every record {took_ms:.0f} ms"]
        started = time.perf_counter()
        taken = counts.carry_on([pk], budget_s=600)
        said.append(f"build {taken} steps {(time.perf_counter() - started) * 1000:.0f} ms")
        took = []
        for _ in range(6):
            started = time.perf_counter()
            assert c.memories.count(brain, max_age_s=0)[0] == total
            took.append((time.perf_counter() - started) * 1000)
        said.append(f"count kept first {took[0]:.2f} ms, least {min(took[1:]):.2f} ms")
        stores = []
        for n in range(50):
            started = time.perf_counter()
            c.memories.store(
                brain, MemoryInput(MemoryType.fact, f"Counted pump {n} at 3 bar.", key=f"pump.{n}")
            )
            stores.append((time.perf_counter() - started) * 1000)
        said.append(f"store a fact {sorted(stores)[25]:.1f} ms (median)")
        return ", ".join(said)


def zengram_stats(facts: int = 1_000, keep: Path | None = None, copies: int = 0) -> str:
    """zengram's stats of the superseded-facts store (built there first when `keep` holds none),
    its memory counts built first: as it answers before the memories' creation-time entries are
    built (every record read), the build of those entries (the sweep's), then from them. Both
    answers must be the same."""
    import tempfile

    from cairn.services.repositories import documents_pk

    with tempfile.TemporaryDirectory() as scratch:
        c, brain = _superseded_store(keep or Path(scratch), facts, copies)
        pk, counts = documents_pk(brain.id), c.documents.repo.counts
        counts.carry_on([pk], budget_s=600)

        def timed(label: str) -> tuple[str, dict[str, object]]:
            took, body = [], {}
            for _ in range(4):
                started = time.perf_counter()
                body = c.zengram.stats().body
                took.append((time.perf_counter() - started) * 1000)
            return f"{label} first {took[0]:.1f} ms, least {min(took[1:]):.1f} ms", body

        said, before = timed("stats")
        said = f"{before['total_memories']:,} memories: {said}"
        build = getattr(counts, "carry_on_times", None)
        if build is None:  # the code before the entries
            return said
        started = time.perf_counter()
        taken = build([pk], budget_s=600)
        said += f", entries built in {taken} steps {(time.perf_counter() - started) * 1000:.0f} ms"
        kept, after = timed("stats from them")
        assert after == before, (before, after)
        return f"{said}, {kept}"
