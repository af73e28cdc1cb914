"""A file too big to ingest in the request: its bytes kept as an upload blob and its ingest queued
as a job (IngestService.run_job, or the ingest state machine's steps, does it)."""

from __future__ import annotations

import time

from cairn.auth import access
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, Job, JobStatus
from cairn.ports.blobs import BlobStore
from cairn.ports.jobs import JobRunner
from cairn.services.documents.inputs import checksum
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.ingest.inputs import INGEST_JOB, IngestResult, uploads_prefix
from cairn.services.mnemosyne.item_status import QUEUED, ItemStatusLog
from cairn.services.repositories import DocumentRepository


class IngestQueue:
    def __init__(
        self,
        jobs: JobRunner,
        repo: DocumentRepository,
        blobs: BlobStore,
        *,
        status: ItemStatusLog | None = None,
        erased: ErasedSubjects | None = None,
    ) -> None:
        self.jobs = jobs
        self.repo = repo
        self.blobs = blobs
        self.status = status
        self.erased = erased

    def queue(
        self, brain: Brain, data: bytes, name: str, kind: str, path: str, started: float
    ) -> IngestResult:
        """Keep the bytes as an upload blob and queue the ingest. The same bytes to the same path
        return the job already queued for them (idempotency key) and its promised id; once that
        job completed, only while the document still holds what it stored (otherwise they are
        ingested again, keyed on the version they replace)."""
        digest = checksum(data)
        # One prefix: the bucket expires leftovers. A key of its own for each request: the same
        # bytes queued for two paths are two jobs, and the first to finish drops its bytes; a
        # retry's bytes are new to an expiry sweep that listed the failed one's (upload_expiry.py).
        upload_key = f"{uploads_prefix(brain)}{digest}.{new_id('q')}"
        self.blobs.put(upload_key, data)
        live = self.repo.get(brain.id, path)
        payload = {
            "upload_key": upload_key,
            "name": name,
            "kind": kind,
            "path": path,
            "document_id": live.id if live else new_id("doc"),
        }
        key = f"ingest:{brain.id}:{path}:{digest}"
        erased = self.erased.scope_since(brain.id, path) if self.erased is not None else None
        if erased is not None:  # a job queued before the scope's erasure is not this one
            key = f"{key}:{erased.isoformat()}"
        by = access.job_principal()
        job = self.jobs.start(INGEST_JOB, payload, brain_id=brain.id, principal=by, idempotency_key=key)
        if _replaced(job, live):  # deleted or overwritten since: this version's own ingest
            key = f"{key}:{live.id}@{live.version}" if live is not None else f"{key}:none"
            job = self.jobs.start(INGEST_JOB, payload, brain_id=brain.id, principal=by, idempotency_key=key)
        earlier: Job | None = None
        if job.status is JobStatus.failed or _replaced(job, live):
            retry = f"{key}:{new_id('r')}"  # asking again is a retry, not a replay of the failure
            earlier = job
            job = self.jobs.start(INGEST_JOB, payload, brain_id=brain.id, principal=by, idempotency_key=retry)
        kept = str(job.input.get("upload_key", ""))
        if kept != upload_key:  # a replay: the job queued before keeps its own bytes
            drop_upload(self.blobs, upload_key)
        if earlier is not None and str(earlier.input.get("upload_key", "")) not in ("", kept):
            drop_upload(self.blobs, str(earlier.input["upload_key"]))  # kept for a retry, which has its own
        if job.status is JobStatus.completed and live is not None:  # and live holds what it stored
            return IngestResult(
                document_id=live.id,
                path=live.path,
                hash=digest,
                chunk_count=live.chunk_count,
                embedded_count=0,
                duration_ms=int((time.perf_counter() - started) * 1000),
                reused=True,
                job_id=job.id,
            )
        if self.status is not None:
            self.status.mark(brain.id, str(job.input["document_id"]), path, QUEUED, job_id=job.id)
        return IngestResult(
            document_id=str(job.input["document_id"]),
            path=path,
            hash=digest,
            chunk_count=0,
            embedded_count=0,
            duration_ms=int((time.perf_counter() - started) * 1000),
            reused=False,
            status="queued",
            job_id=job.id,
        )


def drop_upload(blobs: BlobStore, key: str) -> None:
    if blobs.exists(key):
        blobs.delete(key)


def _replaced(job: Job, live: Document | None) -> bool:
    """The job completed, but the document at its path no longer holds the bytes it stored."""
    if job.status is not JobStatus.completed:
        return False
    stored = (job.result or {}).get("hash")
    return live is None or live.deleted_at is not None or live.checksum_sha256 != stored
