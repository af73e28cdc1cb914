"""The embedded backend: SQLite, files and ONNX in one data directory."""

from __future__ import annotations

from cairn.bootstrap.models import distillers_for, generator_for, local_embedder, reranker_for
from cairn.config import Settings
from cairn.container import Adapters
from cairn.ports.clock import SystemClock


def local_adapters(settings: Settings) -> Adapters:
    from cairn.adapters.local.durable_dirs import make_directories
    from cairn.adapters.local.file_blobs import FileBlobStore
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
    from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
    from cairn.adapters.local.sqlite_records import SqliteRecordStore

    data = settings.data_dir
    make_directories(data)
    # HTTP memory_ingest_file reads only below it and names it when refusing: it should exist.
    settings.resolved_ingest_root.mkdir(parents=True, exist_ok=True)
    embedder = local_embedder(settings)
    clock = SystemClock()
    extractor, reflector = distillers_for(settings)
    return Adapters(
        records=SqliteRecordStore(data / "records.sqlite3"),
        blobs=FileBlobStore(data / "blobs"),
        chunks=SqliteChunkIndex(data / "chunks.sqlite3", data / "vectors", embedder.dimension),
        embedder=embedder,
        clock=clock,
        generator=generator_for(settings, embedder),
        jobs=SqliteJobRunner(
            data / "jobs.sqlite3", clock, lease_s=settings.job_lease_s, max_attempts=settings.job_max_attempts
        ),
        extractor=extractor,
        reflector=reflector,
        reranker=reranker_for(settings),
    )
