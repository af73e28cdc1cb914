"""The services the canonical surface's tools use, taken from the Container once."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.container import Container
from cairn.entrypoints.mcp.kit.surface import services_of
from cairn.ports.uploads import UploadSigner
from cairn.services.brains import BrainService
from cairn.services.ingest.service import IngestService
from cairn.services.memory.consolidation import ConsolidationService
from cairn.services.memory.extraction import ExtractionService
from cairn.services.memory.reflection import ReflectionService
from cairn.services.search.ask import AskService
from cairn.services.search.service import SearchService
from cairn.services.sessions.service import SessionService


@dataclass(frozen=True)
class CanonicalServices:
    brains: BrainService
    search: SearchService
    ask: AskService
    ingest: IngestService
    uploads: UploadSigner | None
    sessions: SessionService
    extraction: ExtractionService
    reflection: ReflectionService
    consolidation: ConsolidationService


def canonical_services(c: Container) -> CanonicalServices:
    return services_of(CanonicalServices, c, uploads=c.adapters.uploads)
