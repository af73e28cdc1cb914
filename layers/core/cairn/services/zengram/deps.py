"""What zengram's operations work on, built by the composition root."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.options import SurfaceOptions
from cairn.ports.clock import Clock
from cairn.ports.generator import Generator
from cairn.ports.jobs import JobRunner
from cairn.services.brains import BrainService
from cairn.services.jobs.visible_jobs import VisibleJobs
from cairn.services.memory.consolidation import ConsolidationService
from cairn.services.memory.entities import EntityService
from cairn.services.memory.memories import MemoryService
from cairn.services.search.access import AccessLog
from cairn.services.zengram.runs import ConsolidationRuns


@dataclass(frozen=True)
class ZengramDeps:
    """What zengram's operations work on (built by the composition root)."""

    brains: BrainService
    memories: MemoryService
    entities: EntityService
    consolidation: ConsolidationService
    jobs: JobRunner
    job_status: VisibleJobs
    runs: ConsolidationRuns
    generator: Generator
    clock: Clock
    options: SurfaceOptions
    access: AccessLog | None
