"""The sweep's retry of a brain's memory counts marked `over` (services/documents/memory_counts.py):
`facts` facts stored through the memory service on the embedded store (the tests' hashing embedder
standing in for the model), `copies` times as many copied as records (superseded_lookups.widen),
then notes in 420 folders of 975 characters, named to sort after every other memory record, which
grow the counts past what one record holds. Timed: the sweep's counts chore while the mark is not
an hour old, while it is (the recount reads every record before it overflows again: the worst
case), and once the long folders are erased (the recount fits, then the creation-time entries'
build). Run it through `bench/hostile_inputs.py --case counts-over [--facts N] [--copies K]`."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hostile_services import _hashing_store
from superseded_lookups import widen

FOLDERS = 420


def counts_over(facts: int = 2_000, copies: int = 0) -> str:
    from cairn.domain.models import MemoryType
    from cairn.services.documents.memory_counts import RETRY_OVER_S
    from cairn.services.memory.memory_model import MemoryInput
    from cairn.services.repositories import documents_pk

    with tempfile.TemporaryDirectory() as scratch:
        c = _hashing_store(Path(scratch))
        brain = c.brains.create("Default", slug="default")
        for n in range(facts):
            fact = MemoryInput(MemoryType.fact, f"Pump {n} runs at {n % 97} bar.", key=f"pump.{n}")
            c.memories.store(brain, fact)
        if copies:
            widen(c, brain, copies)
        counts, pk = c.documents.repo.counts, documents_pk(brain.id)
        counts.carry_on([pk], budget_s=600)
        paths = [f"memories/z{n:04d}{'f' * 970}/note.md" for n in range(FOLDERS)]
        for n, path in enumerate(paths):
            c.documents.write(brain, path, f"A note in folder {n}".encode())
        held = counts.held(pk)
        assert held is not None and held.get("over") is True
        records = facts * (copies + 1) + FOLDERS
        later = 0.0
        counts.now = lambda: time.time() + later

        def chore() -> tuple[int, float]:
            started = time.perf_counter()
            steps = counts.carry_on([pk], budget_s=600)
            return steps, (time.perf_counter() - started) * 1000

        said = [f"{records:,} memory records, counts over"]
        steps, ms = chore()
        said.append(f"counts chore within the hour: {steps} step, {ms:.2f} ms")
        later += RETRY_OVER_S
        steps, ms = chore()
        held = counts.held(pk)
        assert held is not None and held.get("over") is True
        said.append(f"the hourly try, still over: {steps} steps, {ms:.0f} ms")
        steps, ms = chore()
        said.append(f"the chore after it: {steps} step, {ms:.2f} ms")
        for path in paths[:-5]:
            c.documents.erase(brain, path)
        later += RETRY_OVER_S
        steps, ms = chore()
        assert counts.read(pk) is not None
        said.append(f"the try once the folders are erased: {steps} steps, {ms:.0f} ms, kept again")
        started = time.perf_counter()
        steps = counts.carry_on_times([pk], budget_s=600)
        ms = (time.perf_counter() - started) * 1000
        said.append(f"then the entries' build: {steps} steps, {ms:.0f} ms")
        return ", ".join(said)


def sweep_report(brains: int = 1_000) -> str:
    """What the sweep reads, at the end of each tick, to say what it still has to do for brains
    (services/maintenance.py): `brains` brains on the embedded store, their counts built as the
    sweep builds them, but one in ten holding a note under memories/ and no counts (as written
    before them); the report timed, least of 5 after the first, and the record-store reads counted."""
    from unittest.mock import patch

    from cairn.services.repositories import documents_pk

    with tempfile.TemporaryDirectory() as scratch:
        c = _hashing_store(Path(scratch))
        made = [c.brains.create(f"Brain {n}", slug=f"b{n}") for n in range(brains)]
        for n, brain in enumerate(made):
            if n % 10 in (0, 1):
                c.documents.write(brain, "memories/fact/pump.md", b"The pump runs at 4 bar.")
            c.documents.repo.counts.carry_on([documents_pk(brain.id)], budget_s=60)  # as the sweep does
            if n % 10 == 1:
                c.documents.repo.records.delete(documents_pk(brain.id), "memory-counts")
        maintenance = c.health.maintenance
        assert maintenance is not None
        records = c.documents.repo.records
        calls: list[str] = []
        wrapped = {name: getattr(records, name) for name in ("get", "get_many", "query", "scan")}

        def counted(name: str):  # type: ignore[no-untyped-def]
            def call(*args, **kwargs):  # type: ignore[no-untyped-def]
                calls.append(name)
                return wrapped[name](*args, **kwargs)

            return call

        took = []
        for _ in range(6):
            calls.clear()
            started = time.perf_counter()
            with patch.multiple(records, **{name: counted(name) for name in wrapped}):
                found = maintenance.report()
            took.append((time.perf_counter() - started) * 1000)
        assert len(found.counts_building) == brains // 10
        reads = {name: calls.count(name) for name in wrapped if calls.count(name)}
        return (
            f"{brains:,} brains: report first {took[0]:.0f} ms, least {min(took[1:]):.0f} ms; "
            f"record-store calls {reads} (the brains' listing included)"
        )
