"""The composition root: the one place that reads Settings and picks adapters."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.config import Settings
from cairn.ingest.fetch import SafeFetcher
from cairn.ports.blobs import BlobStore
from cairn.ports.chunks import ChunkIndex
from cairn.ports.clock import Clock, SystemClock
from cairn.ports.embedder import Embedder
from cairn.ports.records import RecordStore
from cairn.services.brains import BrainService
from cairn.services.documents import DocumentService
from cairn.services.events import EventBus
from cairn.services.indexing import DocumentIndexer
from cairn.services.ingest import IngestService
from cairn.services.repositories import BrainRepository, DocumentRepository
from cairn.services.search import SearchService, SearchTuning
from cairn.services.siblings import SiblingContext


@dataclass
class Adapters:
    records: RecordStore
    blobs: BlobStore
    chunks: ChunkIndex
    embedder: Embedder
    clock: Clock


@dataclass
class Container:
    settings: Settings
    adapters: Adapters
    events: EventBus
    brains: BrainService
    documents: DocumentService
    search: SearchService
    ingest: IngestService


def local_adapters(settings: Settings) -> Adapters:
    from cairn.adapters.local.file_blobs import FileBlobStore
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
    from cairn.adapters.local.sqlite_records import SqliteRecordStore

    data = settings.data_dir
    data.mkdir(parents=True, exist_ok=True)
    embedder = _embedder(settings)
    return Adapters(
        records=SqliteRecordStore(data / "records.sqlite3"),
        blobs=FileBlobStore(data / "blobs"),
        chunks=SqliteChunkIndex(data / "chunks.sqlite3", data / "vectors", embedder.dimension),
        embedder=embedder,
        clock=SystemClock(),
    )


def _embedder(settings: Settings) -> Embedder:
    from cairn.adapters.local.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder(threads=settings.onnx_threads)


def build_container(settings: Settings, adapters: Adapters | None = None) -> Container:
    """Wire services onto adapters; tests pass fakes through `adapters`."""
    a = adapters or local_adapters(settings)
    events = EventBus()
    brain_repo = BrainRepository(a.records)
    doc_repo = DocumentRepository(a.records)
    brains = BrainService(
        brain_repo,
        a.clock,
        embedding_model=a.embedder.model_id,
        embedding_dim=a.embedder.dimension,
        default_brain=settings.default_brain,
    )
    indexer = DocumentIndexer(
        a.chunks,
        a.embedder,
        target_chars=settings.chunk_target_chars,
        overlap_chars=settings.chunk_overlap_chars,
    )
    documents = DocumentService(
        doc_repo,
        a.blobs,
        indexer,
        events,
        a.clock,
        max_batch_ops=settings.max_batch_ops,
        max_batch_bytes=settings.max_batch_bytes,
        max_list_items=settings.max_list_items,
        siblings=SiblingContext(a.records, window_s=settings.sibling_context_window_s),
    )
    fetcher = SafeFetcher(
        max_bytes=settings.max_url_bytes,
        timeout_s=settings.url_timeout_s,
        max_redirects=settings.url_max_redirects,
        allow_private=settings.allow_private_urls,
    )
    tuning = SearchTuning(
        candidate_pool=settings.candidate_pool,
        rrf_k=settings.rrf_k,
        bm25_weight=settings.bm25_weight,
        vector_weight=settings.vector_weight,
    )
    return Container(
        settings=settings,
        adapters=a,
        events=events,
        brains=brains,
        documents=documents,
        search=SearchService(a.chunks, a.embedder, doc_repo, tuning),
        ingest=IngestService(
            documents,
            fetcher,
            max_content_chars=settings.max_content_chars,
            max_file_bytes=settings.max_file_bytes,
        ),
    )
