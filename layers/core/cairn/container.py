"""What the composition root builds: the adapters behind the ports, and the container of services
and options every entry point is handed."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from cairn.auth.api_keys import ApiKeyService
from cairn.auth.authenticate import Authenticator
from cairn.auth.oauth.metadata import SignIn
from cairn.auth.ui_sessions import UiSessions
from cairn.options import Options
from cairn.ports.audit_spill import AuditSpill
from cairn.ports.blobs import BlobStore
from cairn.ports.change_log import ChangeLog
from cairn.ports.chunks import ChunkIndex
from cairn.ports.clock import Clock
from cairn.ports.downloads import DownloadSigner
from cairn.ports.embedder import Embedder
from cairn.ports.facts import FactExtractor
from cairn.ports.generator import Generator
from cairn.ports.jobs import JobRunner
from cairn.ports.oauth_clients import OAuthClients
from cairn.ports.records import RecordStore
from cairn.ports.reflection import Reflector
from cairn.ports.reranker import Reranker
from cairn.ports.store_secret import RotatableSecret
from cairn.ports.uploads import UploadSigner
from cairn.services.archive.service import BrainArchive
from cairn.services.audit import AuditLog
from cairn.services.brains import BrainService
from cairn.services.documents.index_repair import IndexRepair
from cairn.services.documents.service import DocumentService
from cairn.services.documents.writes import ERASES
from cairn.services.erasure.documents import DocumentEraser
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.erasure.interrupted import WRITERS_S, InterruptedErases, RunningErasures
from cairn.services.erasure.keyspace import BrainKeyspace
from cairn.services.erasure.log import ErasureLog
from cairn.services.erasure.service import ErasureService
from cairn.services.erasure.settling import DeletionsSettling
from cairn.services.events import EventBus
from cairn.services.gbrain.gaps import GapService
from cairn.services.gbrain.page_assertions import PageAssertions
from cairn.services.gbrain.pages import PageService
from cairn.services.gbrain.raw_data import RawDataService
from cairn.services.health import HealthService
from cairn.services.ingest.service import IngestService
from cairn.services.jobs.job_log import JobLog
from cairn.services.jobs.visible_jobs import VisibleJobs
from cairn.services.links.graph import GraphService
from cairn.services.links.pending import PendingLinks
from cairn.services.memory.consolidation import ConsolidationService
from cairn.services.memory.entities import EntityService
from cairn.services.memory.extraction import ExtractionService
from cairn.services.memory.memories import MemoryService
from cairn.services.memory.reflection import ReflectionService
from cairn.services.mnemosyne.concepts import ConceptGraph
from cairn.services.mnemosyne.image_items import ImageItems
from cairn.services.mnemosyne.image_refs import ImageRefs
from cairn.services.mnemosyne.item_status import ItemStatusLog
from cairn.services.mnemosyne.libraries import LibraryService
from cairn.services.mnemosyne.library_search import LibrarySearch
from cairn.services.search.access import AccessLog
from cairn.services.search.ask import AskService
from cairn.services.search.service import SearchService
from cairn.services.secret_rotation import SecretRotation
from cairn.services.sessions.service import SessionService
from cairn.services.thoughtmcp.memories import ThoughtMemories
from cairn.services.thoughtmcp.metacognition import MetacognitionService
from cairn.services.thoughtmcp.reasoning.service import ReasoningService
from cairn.services.zengram.api import ZengramApi


@dataclass
class Adapters:
    records: RecordStore
    blobs: BlobStore
    chunks: ChunkIndex
    embedder: Embedder
    clock: Clock
    generator: Generator
    jobs: JobRunner
    extractor: FactExtractor
    reflector: Reflector
    store_secret: RotatableSecret  # the secret the store's processes share (ports/store_secret.py)
    uploads: UploadSigner | None = None  # presigned uploads: S3 only (ports/uploads.py)
    downloads: DownloadSigner | None = None  # reads past 6 MB: S3 only (ports/downloads.py)
    reranker: Reranker | None = None  # none unless configured (docs/RERANKING.md)
    oauth_clients: OAuthClients | None = None  # a user pool's app clients, for dynamic registration
    changes: ChangeLog | None = None  # change events the embedded store's processes share
    audit_spill: AuditSpill | None = None  # audit entries a stop could not write: embedded only


@dataclass
class Container:
    options: Options
    adapters: Adapters
    events: EventBus
    brains: BrainService
    documents: DocumentService
    search: SearchService
    memories: MemoryService
    entities: EntityService
    pages: PageService
    libraries: LibraryService
    concepts: ConceptGraph
    library_search: LibrarySearch
    thoughts: ThoughtMemories
    reasoning: ReasoningService
    metacognition: MetacognitionService
    health: HealthService
    assertions: PageAssertions
    graph: GraphService
    gaps: GapService
    raw_data: RawDataService
    ingest: IngestService
    sessions: SessionService
    ask: AskService
    jobs: JobRunner
    job_status: VisibleJobs
    job_log: JobLog
    extraction: ExtractionService
    reflection: ReflectionService
    consolidation: ConsolidationService
    keys: ApiKeyService
    authenticator: Authenticator
    ui_sessions: UiSessions
    audit: AuditLog
    repair: IndexRepair
    zengram: ZengramApi
    pending_links: PendingLinks
    """Links memories' commits left to be made after them (services/links/pending.py)."""
    sign_in: SignIn | None = None
    """Cairn as the MCP clients' authorization server (auth/oauth/); None when not configured."""

    def __post_init__(self) -> None:
        # An ingest that wrote into an agent scope erased meanwhile takes it back as the erasure
        # would have; the erasure service is made on first use, after the ingest service.
        self.ingest.take_back = lambda brain, path: self.erasure.take_back(brain, path)
        # An erase a stopped process left half-way is finished by the sweep with the erasure's own
        # document eraser (services/erasure/interrupted.py).
        running = RunningErasures(lambda: self.erasure.erasures, self.pending_links.now)
        self.pending_links.finish_with(
            ERASES,
            lambda brain, doc_id, relink: InterruptedErases(
                self.erasure.eraser, running, self.pending_links
            ).finish(brain, doc_id, relink),
            writers_s=WRITERS_S,
        )

    @cached_property
    def archive(self) -> BrainArchive:
        """Whole-brain export and import (services/archive/), over the services above."""
        return BrainArchive(
            self.brains,
            self.documents,
            self.memories,
            self.pages,
            self.graph,
            self.gaps,
            self.raw_data,
            self.adapters.clock,
            self.thoughts,
            self.libraries,
            max_document_bytes=self.options.limits.max_file_bytes,
        )

    @cached_property
    def secret_rotation(self) -> SecretRotation:
        """`cairn secret`: rotating the store's secret (services/secret_rotation.py)."""
        return SecretRotation(self.adapters.store_secret, [self.audit.erased, self.erasure.erased])

    @cached_property
    def erasure(self) -> ErasureService:
        """Erasing a subject and deleting a brain (services/erasure/), over the services above."""
        a = self.adapters
        eraser = DocumentEraser(
            documents=self.documents,
            chunks=self.search.chunks,
            siblings=self.documents.siblings,
            assertions=self.assertions,
            blobs=a.blobs,
            links=self.entities.links,
            entities=self.entities,
            memories=self.memories,
            raw_data=self.raw_data,
            images=ImageItems(ImageRefs(a.records), self.documents),
            status=ItemStatusLog(a.records, a.clock),
            access=self.search.access or AccessLog(a.records, a.clock),
            waypoints=self.thoughts,
            concepts=self.concepts,
        )
        return ErasureService(
            brains=self.brains,
            documents=self.documents.repo,
            eraser=eraser,
            thoughts=self.thoughts,
            chunks=a.chunks,
            keyspace=BrainKeyspace(a.records),
            blobs=a.blobs,
            audit=self.audit,
            erasures=ErasureLog(a.records, a.clock),
            settling=DeletionsSettling(a.records, a.clock),
            erased=ErasedSubjects(a.records, a.clock, a.store_secret),
            keys=self.keys,
            job_log=self.job_log,
            clock=a.clock,
            changes=a.changes,
        )
