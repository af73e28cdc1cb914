"""The composition root: services wired onto the adapters Settings pick, and the options each
entry point is handed. The one place, with the CLI's argument parsing, that reads Settings."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from cairn.adapters.vector_cache import VectorCache
from cairn.auth import access
from cairn.auth.api_keys import ApiKeyService
from cairn.auth.authenticate import Authenticator
from cairn.auth.ui_sessions import UiSessions
from cairn.bootstrap.options import auth_options, options_from
from cairn.bootstrap.sign_in import oauth_clients_for, sign_in_for
from cairn.bootstrap.sweep import every_brain
from cairn.config import Settings
from cairn.container import Adapters, Container
from cairn.domain.errors import Forbidden
from cairn.domain.models import Job
from cairn.ingest.fetch import SafeFetcher
from cairn.ports.chunks import VerifiableChunks
from cairn.ports.embedder import Embedder
from cairn.ports.jobs import AnnouncesStarts, JobContext, JobHandler, JobSteps, StepHandler, SteppedJobRunner
from cairn.ports.records import CommitWatch
from cairn.services.audit import AuditLog
from cairn.services.brains import BrainService
from cairn.services.documents.index_intents import IndexIntents
from cairn.services.documents.index_repair import IndexRepair
from cairn.services.documents.indexing import DocumentIndexer
from cairn.services.documents.rebuilding import RebuildingBrains
from cairn.services.documents.service import DocumentService
from cairn.services.documents.siblings import SiblingContext
from cairn.services.documents.visible_chunks import VisibleChunks
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.erasure.settling import DeletionsSettling
from cairn.services.events import EventBus
from cairn.services.gbrain.gaps import GapService
from cairn.services.gbrain.page_assertions import PageAssertions
from cairn.services.gbrain.pages import PageService
from cairn.services.gbrain.raw_data import RawDataService
from cairn.services.gbrain.sequences import Sequences
from cairn.services.health import HealthService
from cairn.services.ingest.ingest_steps import StagedIngest
from cairn.services.ingest.inputs import INGEST_JOB
from cairn.services.ingest.service import IngestService
from cairn.services.jobs.job_log import JobLog
from cairn.services.jobs.visible_jobs import VisibleJobs
from cairn.services.links.graph import GraphService
from cairn.services.links.pending import PendingLinks
from cairn.services.links.repository import LinkRepository
from cairn.services.maintenance import BrainMaintenance
from cairn.services.memory.claims import MemoryClaims
from cairn.services.memory.consolidation import CONSOLIDATE_JOB, ConsolidationService, ConsolidationTuning
from cairn.services.memory.entities import EntityRepository, EntityService
from cairn.services.memory.entity_llm import entity_extractor_for
from cairn.services.memory.extraction import EXTRACT_JOB, ExtractionService
from cairn.services.memory.fact_memory import FactMemory
from cairn.services.memory.memories import MemoryService
from cairn.services.memory.mention_links import MENTIONS_PENDING, MentionLinks
from cairn.services.memory.reflection import ReflectionService
from cairn.services.migrations import migrate
from cairn.services.mnemosyne.collection_records import CollectionRecords
from cairn.services.mnemosyne.concept_reach_sweep import ReachSweep
from cairn.services.mnemosyne.concept_rules import ConceptRules
from cairn.services.mnemosyne.concepts import ConceptGraph
from cairn.services.mnemosyne.image_items import ImageItems
from cairn.services.mnemosyne.image_refs import ImageRefs
from cairn.services.mnemosyne.image_refs_sweep import ImageRefsSweep
from cairn.services.mnemosyne.item_status import ItemStatusLog
from cairn.services.mnemosyne.libraries import LibraryService
from cairn.services.mnemosyne.library_profiles import LibraryProfiles
from cairn.services.mnemosyne.library_search import LibrarySearch
from cairn.services.repositories import BrainRepository, DocumentRepository, SessionRepository
from cairn.services.search.access import AccessLog
from cairn.services.search.ask import AskService
from cairn.services.search.relevance import EMBEDDED, Calibration, calibration_for
from cairn.services.search.service import SearchService, SearchTuning
from cairn.services.sessions.service import SessionService
from cairn.services.sessions.session_recall import RecallTuning, SessionRecall
from cairn.services.thoughtmcp.brain import ThoughtContext
from cairn.services.thoughtmcp.memories import ThoughtMemories
from cairn.services.thoughtmcp.metacognition import MetacognitionService
from cairn.services.thoughtmcp.reasoning.service import ReasoningService
from cairn.services.thoughtmcp.removal import UNLINKS, MemoryRecords
from cairn.services.thoughtmcp.rows import ThoughtRows
from cairn.services.thoughtmcp.sectors import SectorVectors
from cairn.services.thoughtmcp.stale_sectors import StaleSectors
from cairn.services.thoughtmcp.waypoints import WAYPOINTS
from cairn.services.zengram.api import ZengramApi
from cairn.services.zengram.deps import ZengramDeps
from cairn.services.zengram.runs import ConsolidationRuns

log = logging.getLogger(__name__)


def adapters_for(settings: Settings) -> Adapters:
    if settings.backend == "aws":
        from cairn.bootstrap.aws import aws_adapters

        adapters = aws_adapters(settings)
    else:
        from cairn.bootstrap.local import local_adapters

        adapters = local_adapters(settings)
    adapters.oauth_clients = oauth_clients_for(settings)
    return adapters


def build_container(settings: Settings | None = None, adapters: Adapters | None = None) -> Container:
    """Wire services onto adapters; tests pass fakes through `adapters`. Without settings, the
    environment's (CAIRN_* variables)."""
    settings = settings if settings is not None else Settings()
    a = adapters or adapters_for(settings)
    migrate(a.records)  # what this release changes in data an earlier one stored (services/migrations.py)
    events = EventBus(a.changes)
    brain_repo = BrainRepository(a.records)
    doc_repo = DocumentRepository(a.records, IndexIntents(a.records, lambda: a.clock.now().timestamp()))
    rebuilding = RebuildingBrains()  # brains whose index is being rebuilt: their searches wait
    chunks = VisibleChunks(a.chunks, brain_repo, rebuilding)  # what services read: the access rule applied
    brains = BrainService(
        brain_repo,
        a.clock,
        embedding_model=a.embedder.model_id,
        embedding_dim=a.embedder.dimension,
        default_brain=settings.default_brain,
    )
    indexer = DocumentIndexer(
        chunks,
        a.embedder,
        target_chars=settings.chunk_target_chars,
        overlap_chars=settings.chunk_overlap_chars,
        profiles=LibraryProfiles(brain_repo),
    )
    # links a memory's commit (or removal) leaves to be made (removed) after it, finished by the
    # sweep (services/links/pending.py)
    pending = PendingLinks(a.records, brain_repo.get, lambda: a.clock.now().timestamp())
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
        companions=MemoryRecords(pending),  # a ThoughtMCP memory's row goes with its document
        erasing=pending,  # an erase under way is marked, for the sweep to finish one stopped half-way
    )
    repair = IndexRepair(documents, a.chunks, rebuilding)
    if isinstance(a.chunks, VerifiableChunks):  # files found damaged in use are rebuilt at once
        a.chunks.on_damage(repair.request)
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
        calibration=_calibration(settings, a.embedder.model_id),
    )
    access = AccessLog(a.records, a.clock)
    questions = _questions(settings, a.embedder)  # what embeds questions; documents get the model
    search = SearchService(chunks, questions, doc_repo, tuning, access, a.reranker)
    sessions = _sessions(settings, a, search)
    facts = FactMemory(documents, search, dedupe_overlap=settings.fact_dedupe_overlap)
    erased = ErasedSubjects(a.records, a.clock, a.store_secret)
    extraction = ExtractionService(
        brains, sessions, documents, facts, a.extractor, a.jobs, a.blobs, a.clock, erased=erased
    )
    sessions.listeners.append(extraction.on_appended)
    links = LinkRepository(a.records)
    entity_repo = EntityRepository(a.records, links)
    entities = EntityService(entity_repo, a.clock, entity_extractor_for(a.generator))  # rules alone offline
    mention_links = MentionLinks(entities, pending, documents)
    memories = MemoryService(
        documents,
        MemoryClaims(a.records),
        search,
        a.clock,
        access,
        entities=entities,
        mention_links=mention_links,
    )
    documents.when_retired(memories.join_over_deleted)  # whichever surface deletes a memory
    consolidation = ConsolidationService(
        brains,
        documents,
        a.embedder,
        a.jobs,
        a.clock,
        _consolidation_tuning(settings),
        access,
        expire_events=memories.expire_events,
    )
    item_status = ItemStatusLog(a.records, a.clock)
    concepts = ConceptGraph(
        LinkRepository(a.records),
        ConceptRules(entity_extractor_for(a.generator)),
        chunks,
        a.clock,
        documents=doc_repo,
    )
    documents.when_removed(concepts.unlink_removed)  # their links name chunks of every earlier version
    documents.when_shortened(concepts.unlink_dropped)  # any path's rewrite to fewer chunks: their links go
    images = ImageItems(ImageRefs(a.records), documents, brains.repo.get)
    job_log = JobLog(a.records, a.jobs)
    ingest = IngestService(
        documents,
        fetcher,
        max_content_chars=settings.max_content_chars,
        max_file_bytes=settings.max_file_bytes,
        jobs=a.jobs,
        brains=brains,
        queue_above_bytes=settings.ingest_queue_bytes,
        queue_above_chunks=settings.ingest_queue_chunks,
        status=item_status,
        concepts=concepts,
        images=images,
        erased=erased,
        job_log=job_log,
    )
    keys = ApiKeyService(a.records, a.clock, brain_repo.get)
    sign_in = sign_in_for(settings, a)
    authenticator = Authenticator(
        auth_options(settings), keys, known_client=sign_in.registered.knows if sign_in else None
    )
    a.jobs.register(INGEST_JOB, as_starter(ingest.run_job, keys))
    a.jobs.register(EXTRACT_JOB, as_starter(extraction.run, keys))
    a.jobs.register(CONSOLIDATE_JOB, as_starter(consolidation.run, keys))
    if isinstance(a.jobs, SteppedJobRunner):  # Step Functions: one state per step
        staged = StagedIngest(ingest, brains, a.clock, batch_size=settings.ingest_batch_chunks)
        a.jobs.register_steps(INGEST_JOB, steps_as_starter(staged.steps(), keys))
        a.jobs.register_steps(CONSOLIDATE_JOB, steps_as_starter(consolidation.steps(), keys))
    # Rows and listings are kept in process only where the store tells of every commit, another
    # process's too (the embedded store: a data directory has several writers); on DynamoDB, never.
    commit_mark = a.records.commit_mark if isinstance(a.records, CommitWatch) else None
    thoughts = ThoughtMemories(
        documents,
        ThoughtRows(a.records),
        SectorVectors(a.records, a.embedder),
        entities.links,
        chunks,
        questions,
        a.clock,
        calibration=tuning.calibration,
        pending=pending,
        commit_mark=commit_mark,
    )
    pending.finish_with(MENTIONS_PENDING, mention_links.finish)
    pending.finish_with(WAYPOINTS, thoughts.finish_links)
    pending.finish_with(UNLINKS, thoughts.finish_unlinks)
    documents.when_removed(thoughts.unlink_all_removed)  # links, which the removal's transaction cannot take
    repair.also_check(StaleSectors(documents, thoughts.rows, thoughts.sectors))
    libraries = LibraryService(
        brains,
        documents,
        CollectionRecords(a.records),
        chunks,
        item_status,
        a.clock,
        commit_mark=commit_mark,
    )
    events.listen(libraries.forget_listing)
    events.listen(thoughts.forget_removed)
    events.listen(images.follow)
    options = options_from(settings)
    job_status = VisibleJobs(a.jobs, brains)
    if isinstance(a.jobs, AnnouncesStarts):
        a.jobs.on_start(job_log.started)
    zengram = ZengramApi(
        ZengramDeps(
            brains=brains,
            memories=memories,
            entities=entities,
            consolidation=consolidation,
            jobs=a.jobs,
            job_status=job_status,
            runs=ConsolidationRuns(a.records),
            generator=a.generator,
            clock=a.clock,
            options=options.surfaces,
            access=search.access,
        )
    )
    return Container(
        options=options,
        adapters=a,
        events=events,
        brains=brains,
        documents=documents,
        search=search,
        memories=memories,
        entities=entities,
        pages=PageService(brains, documents),
        libraries=libraries,
        concepts=concepts,
        health=HealthService(
            a.records,
            a.blobs,
            a.chunks,
            a.embedder,
            a.reranker,
            on_aws=settings.backend == "aws",
            rebuilding=rebuilding,
            maintenance=BrainMaintenance(
                a.records,
                DeletionsSettling(a.records, a.clock),
                every_brain(brains.repo),
                ReachSweep(a.records, concepts.reach, doc_repo, a.clock).left,
                ImageRefsSweep(a.records, images, brains.repo, a.clock).left,
                clock=a.clock,
                shared=settings.backend == "aws",  # the API function runs no sweep: it reads the record
            ),
        ),
        thoughts=thoughts,
        reasoning=ReasoningService(
            a.generator, ThoughtContext(thoughts, brains, settings.thoughtmcp_brain), clock=a.clock
        ),
        metacognition=MetacognitionService(a.generator, clock=a.clock),
        library_search=LibrarySearch(
            chunks, questions, concepts, documents, a.reranker, calibration=tuning.calibration
        ),
        assertions=PageAssertions(
            a.records, a.generator, model_pages_per_check=settings.assertion_model_pages_per_check
        ),
        graph=GraphService(links, Sequences(a.records), a.clock),
        gaps=GapService(a.records, a.clock),
        raw_data=RawDataService(a.records, a.blobs, a.clock),
        ingest=ingest,
        sessions=sessions,
        ask=AskService(search, a.generator, keys, brains),
        jobs=a.jobs,
        job_status=job_status,
        job_log=job_log,
        extraction=extraction,
        reflection=ReflectionService(sessions, documents, a.reflector, extraction, a.clock),
        consolidation=consolidation,
        keys=keys,
        authenticator=authenticator,
        ui_sessions=UiSessions(a.records, a.clock, authenticator),
        audit=AuditLog(a.records, a.clock, a.audit_spill, secret=a.store_secret),
        repair=repair,
        zengram=zengram,
        pending_links=pending,
        sign_in=sign_in,
    )


def as_starter(handler: JobHandler, keys: ApiKeyService) -> JobHandler:
    """The handler, run as the principal that started the job (auth/access.py), while the key it
    came with (if one) is not revoked."""

    def run(job: Job, ctx: JobContext) -> dict[str, Any]:
        with access.on_behalf_of(job.principal):
            _unrevoked(keys)
            return handler(job, ctx)

    return run


def steps_as_starter(steps: JobSteps, keys: ApiKeyService) -> JobSteps:
    def wrap(step: StepHandler) -> StepHandler:
        def run(job: Job, ctx: JobContext, item: dict[str, Any]) -> dict[str, Any]:
            with access.on_behalf_of(job.principal):
                _unrevoked(keys)
                return step(job, ctx, item)

        return run

    return replace(steps, steps={name: wrap(step) for name, step in steps.steps.items()})


def _unrevoked(keys: ApiKeyService) -> None:
    """Forbidden when the job acts for an API key revoked since it was queued: it does nothing."""
    now = access.current()
    if now is not None and keys.revoked(now.principal.subject):
        raise Forbidden("the API key that started this job has been revoked since: the job does nothing")


def _consolidation_tuning(settings: Settings) -> ConsolidationTuning:
    return ConsolidationTuning(
        merge_min_cosine=settings.merge_min_cosine,
        merge_min_overlap=settings.merge_min_overlap,
        promote_confirmations=settings.promote_confirmations,
        prune_after_days=settings.prune_after_days,
        prune_max_importance=settings.prune_max_importance,
        summary_min_notes=settings.summary_min_notes,
    )


def _questions(settings: Settings, embedder: Embedder) -> Embedder:
    """The embedder of the services that embed questions: the model behind a cache of the latest
    questions' vectors, each kept for the caller that asked it, unless `query_vector_cache` is 0."""
    if not settings.query_vector_cache:
        return embedder
    return VectorCache(embedder, settings.query_vector_cache, partition=_caller)


def _caller() -> tuple[str, str] | None:
    """Who is asking: the current principal's tenant and subject (None outside a request)."""
    now = access.current()
    return (now.principal.tenant, now.principal.subject) if now is not None else None


def _sessions(settings: Settings, a: Adapters, search: SearchService) -> SessionService:
    tuning = RecallTuning(
        window=settings.session_recall_window,
        context_weight=settings.session_context_weight,
        decay=settings.session_context_decay,
        gate_floor=settings.session_gate_floor,
        gate_full=settings.session_gate_full,
        rrf_k=settings.rrf_k,
    )
    recall = SessionRecall(search, search.embedder, tuning)
    return SessionService(SessionRepository(a.records), recall, a.clock)


def _calibration(settings: Settings, model_id: str) -> Calibration:
    """How a cosine of this embedding model becomes relevance (services/search/relevance.py)."""
    calibration = calibration_for(model_id, settings.relevance_midpoint, settings.relevance_slope)
    if calibration is None:
        log.warning(
            "relevance scores are calibrated for the embedded model, not for %s: fit its calibration "
            "with `cairn calibrate` and set CAIRN_RELEVANCE_MIDPOINT and CAIRN_RELEVANCE_SLOPE",
            model_id,
        )
        return EMBEDDED
    return calibration
