"""Health of the running shape's dependencies, for pollers (Mnemosyne's get_health).

One check per dependency: the record store, the blob store and the chunk index (DynamoDB, S3 and
OpenSearch on AWS) each answer one cheap read; the embedding model is checked for being
configured (a model id and a dimension) without a paid call; a configured re-ranker likewise.
A failing store or index is critical (`error`); a missing embedding model or re-ranker is not
(`degraded`), nor is a brain whose index is being rebuilt (`degraded`, with the brain's progress).
What the sweep still has to do for brains (memory counts `over` or being built, deletions
settling: services/maintenance.py) is reported as its last tick found it (on AWS, as the scheduled
sweep's last report kept in its record says), and changes no status.
Each check reports its status and how long it took, and nothing else: no endpoint,
table, bucket or error text is ever part of the answer (the failure is logged).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from cairn.ports.blobs import BlobStore
from cairn.ports.chunks import ChunkIndex
from cairn.ports.embedder import Embedder
from cairn.ports.records import RecordStore
from cairn.ports.reranker import Reranker
from cairn.services.documents.rebuilding import Progress, RebuildingBrains
from cairn.services.maintenance import BrainMaintenance, Maintenance

OK: Final = "ok"
DEGRADED: Final = "degraded"
ERROR: Final = "error"
_PROBE = "health#probe"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Check:
    status: str
    duration_ms: float
    model: str | None = None


@dataclass(frozen=True)
class Health:
    status: str
    checks: dict[str, Check] = field(default_factory=dict)
    rebuilding: dict[str, Progress] = field(default_factory=dict)
    """Brain id -> the rebuild of its index under way (its searches answer 503 meanwhile)."""
    maintenance: Maintenance | None = None
    """What the sweep still had to do at its last tick (services/maintenance.py); None before it."""


class HealthService:
    def __init__(
        self,
        records: RecordStore,
        blobs: BlobStore,
        chunks: ChunkIndex,
        embedder: Embedder,
        reranker: Reranker | None,
        *,
        on_aws: bool,
        rebuilding: RebuildingBrains | None = None,
        maintenance: BrainMaintenance | None = None,
    ) -> None:
        self.records = records
        self.blobs = blobs
        self.chunks = chunks
        self.embedder = embedder
        self.reranker = reranker
        self.rebuilding = rebuilding or RebuildingBrains()
        self.maintenance = maintenance
        local = ("record_store", "blob_store", "chunk_index")
        self.names = ("dynamodb", "s3", "opensearch") if on_aws else local

    def check(self) -> Health:
        records, blobs, chunks = self.names
        checks: dict[str, Check] = {
            records: _timed(records, lambda: self.records.get(_PROBE, "probe"), critical=True),
            blobs: _timed(blobs, lambda: self.blobs.exists("health/probe"), critical=True),
            chunks: _timed(chunks, lambda: self.chunks.count(_PROBE), critical=True),
        }
        embedding = _timed("embedding", self._embedder_configured, critical=False)
        checks["embedding"] = Check(embedding.status, embedding.duration_ms, self.embedder.model_id or None)
        if self.reranker is not None:
            reranker = _timed("reranker", lambda: self._configured(self.reranker), critical=False)
            model = self.reranker.model_id or None
            checks["reranker"] = Check(reranker.status, reranker.duration_ms, model)
        rebuilding = self.rebuilding.now()
        statuses = {c.status for c in checks.values()} | ({DEGRADED} if rebuilding else set())
        overall = ERROR if ERROR in statuses else DEGRADED if DEGRADED in statuses else OK
        maintenance = self.maintenance.last() if self.maintenance is not None else None
        return Health(overall, checks, rebuilding, maintenance)

    def _embedder_configured(self) -> None:
        if not self.embedder.model_id or self.embedder.dimension < 1:
            raise RuntimeError("no embedding model configured")

    @staticmethod
    def _configured(reranker: Reranker | None) -> None:
        if reranker is None or not reranker.model_id:
            raise RuntimeError("no re-ranking model configured")


def _timed(name: str, probe: Callable[[], object], *, critical: bool) -> Check:
    started = time.perf_counter()
    try:
        probe()
        status = OK
    except Exception as exc:
        log.warning("health check %s failed: %s", name, type(exc).__name__)
        status = ERROR if critical else DEGRADED
    return Check(status, round((time.perf_counter() - started) * 1000, 2))
