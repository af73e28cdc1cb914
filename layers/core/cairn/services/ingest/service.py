"""Ingest: files, URLs and remembered notes become indexed documents (inputs.py: what it takes
and answers)."""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Sequence
from typing import Any

from cairn import faults
from cairn.auth import access
from cairn.domain.errors import CairnError, FileTooLarge, Forbidden, InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, DocumentSource, Job
from cairn.domain.paths import normalize_user_path
from cairn.domain.text import excerpt
from cairn.ingest.extract import Extracted, extract_text, infer_kind
from cairn.ingest.fetch import SafeFetcher
from cairn.ingest.files import LocalFile, read_local_file
from cairn.ports.jobs import JobContext, JobRunner
from cairn.ports.uploads import PresignedUpload, UploadSigner
from cairn.services.brains import BrainService
from cairn.services.documents.inputs import DeferredWrite, DocumentInput, WriteOutcome
from cairn.services.documents.service import DocumentService
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.ingest.inputs import (
    KIND_TYPE,
    UPLOAD_TTL_S,
    IngestResult,
    LocalFilePolicy,
    checked_tags,
    checked_title,
    note_path,
    safe_name,
    upload_key,
    uploads_prefix,
    url_path,
)
from cairn.services.ingest.queue import IngestQueue, drop_upload
from cairn.services.jobs.job_log import JobLog
from cairn.services.mnemosyne.concepts import ConceptGraph
from cairn.services.mnemosyne.image_items import ImageItems, Prepared
from cairn.services.mnemosyne.item_status import PROCESSING, ItemStatusLog, failure_text

UPLOAD_GONE = "the uploaded file is gone (uploads expire); ingest it again"
PLAIN_KINDS = ("markdown", "text", "json")  # kinds whose text is the file's own, read cheaply
ERASED_SCOPE = "the path is in an agent scope erased after this ingest was queued: nothing was stored"


class IngestService:
    def __init__(
        self,
        documents: DocumentService,
        fetcher: SafeFetcher,
        *,
        max_content_chars: int = 5_000_000,
        max_file_bytes: int = 25 * 1024 * 1024,
        jobs: JobRunner | None = None,
        brains: BrainService | None = None,
        queue_above_bytes: int | None = None,
        queue_above_chunks: int | None = None,
        status: ItemStatusLog | None = None,
        concepts: ConceptGraph | None = None,
        images: ImageItems | None = None,
        erased: ErasedSubjects | None = None,
        job_log: JobLog | None = None,
    ) -> None:
        """With `jobs` (and `brains`), files above `queue_above_bytes` are ingested by a job,
        whose progress `status` records (queued, processing, failed) until it commits. With
        `images`, images become image items captioned by the documents that show them. With
        `erased`, a job into an agent scope erased after it was queued writes nothing there (and,
        with `job_log`, the sweep forgets the job once it has failed)."""
        self.documents = documents
        self.fetcher = fetcher
        self.max_content_chars = max_content_chars
        self.max_file_bytes = max_file_bytes
        self.queued = (
            IngestQueue(jobs, documents.repo, documents.blobs, status=status, erased=erased)
            if jobs is not None
            else None
        )
        self.brains = brains
        self.queue_above_bytes = queue_above_bytes
        self.queue_above_chunks = queue_above_chunks
        self.status = status
        self.concepts = concepts
        self.images = images
        self.erased = erased
        self.job_log = job_log
        self.take_back: Callable[[Brain, str], None] | None = None  # the erasure's, when composed

    def remember(
        self,
        brain: Brain,
        content: str,
        *,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        path: str | None = None,
        source: DocumentSource = DocumentSource.ingest,
    ) -> Document:
        """Store a markdown note; the title defaults to the first heading."""
        if not content:
            raise InvalidInput("content must not be empty")
        if len(content) > self.max_content_chars:
            raise InvalidInput(f"content exceeds {self.max_content_chars} characters")
        checked_title(title)
        clean_tags = checked_tags(tags or [])
        target = normalize_user_path(path) if path else note_path(title or content)
        info = DocumentInput(title=title, tags=clean_tags, source=source, content_type="text/markdown")
        return self.documents.write(brain, target, content.encode("utf-8"), info, reason="remember").document

    def ingest_bytes(
        self,
        brain: Brain,
        data: bytes,
        *,
        name: str,
        kind: str | None = None,
        content_type: str | None = None,
        path: str | None = None,
        doc_id: str | None = None,
        queue: bool = True,
    ) -> IngestResult:
        """Store a file's text as a document at `path` (default `ingest/<file name>`); a file
        above the queueing threshold is handed to a job instead (`status: "queued"`)."""
        started = time.perf_counter()
        self._check_size(len(data))
        kind = kind or infer_kind(name, content_type, data)
        path = normalize_user_path(path or f"ingest/{safe_name(name)}")
        # A plain file's text is read once, here: too long is said now, not after a 202.
        plain = self._extract(data, kind, name) if kind in PLAIN_KINDS else None
        threshold = self.queue_above_bytes
        if queue and self.queued is not None and threshold is not None and len(data) > threshold:
            return self.queued.queue(brain, data, name, kind, path, started)
        if queue and self.queued is not None and self._many_chunks(plain):
            return self.queued.queue(brain, data, name, kind, path, started)
        stored, info = self.extracted(data, name=name, kind=kind, doc_id=doc_id, path=path, text=plain)
        shown = self.images.prepare(brain, path, kind, data, info) if self.images is not None else None
        if shown is not None:
            info = shown.info
        outcome = self.documents.write(brain, path, stored, info, reason="ingest")
        # A queued ingest (or its retry) has committed: its job marks the status.
        return self._written(brain, path, outcome, stored, info, shown, started, completed=not queue)

    def _many_chunks(self, plain: Extracted | None) -> bool:
        """Whether a small plain file's text makes more chunks than `queue_above_chunks` (cut as
        the default profile cuts; the cut is cheap beside embedding it)."""
        limit = self.queue_above_chunks
        if limit is None or plain is None:
            return False
        return self.documents.indexer.default_chunk_count(plain.text) > limit

    def _written(
        self,
        brain: Brain,
        path: str,
        outcome: WriteOutcome,
        stored: bytes,
        info: DocumentInput,
        shown: Prepared | None,
        started: float,
        *,
        completed: bool,
    ) -> IngestResult:
        """What follows an ingest's write: the image record, the completed status, the concept
        links of a changed version, and the result."""
        doc = outcome.document
        faults.reached("ingest.written")
        if shown is not None and self.images is not None:
            self.images.record(brain, path, shown, written=doc)
        if self.status is not None and completed:
            self.status.completed(brain.id, doc.id)
        if outcome.changed:
            self.link_concepts(
                brain.id,
                doc.id,
                info.text if info.text is not None else stored.decode("utf-8", "replace"),
                fresh=outcome.created,
            )
        return IngestResult(
            document_id=doc.id,
            path=doc.path,
            document=doc,
            hash=doc.checksum_sha256,  # the stored bytes, hashed once by the write
            chunk_count=doc.chunk_count,
            embedded_count=doc.chunk_count if outcome.changed else 0,
            duration_ms=int((time.perf_counter() - started) * 1000),
            reused=not outcome.changed,
        )

    def link_concepts(self, brain_id: str, document_id: str, text: str, *, fresh: bool = False) -> None:
        """The concept graph's links of a newly ingested version's chunks (services/mnemosyne/concepts.py);
        `fresh`: the document was just created, so its chunks have no links to compare with."""
        if self.concepts is not None:
            self.concepts.index_document(brain_id, document_id, text, fresh=fresh)

    def _extract(self, data: bytes, kind: str, filename: str) -> Extracted:
        return extract_text(data, kind, filename, max_chars=self.max_content_chars)

    def extracted(
        self,
        data: bytes,
        *,
        name: str,
        kind: str,
        doc_id: str | None = None,
        path: str | None = None,
        text: Extracted | None = None,
    ) -> tuple[bytes, DocumentInput]:
        """The bytes to store for a file (its text, for PDF and HTML; an image itself) and what to
        say about them (`text`: the file's, when already extracted). An image's text names the base
        name of `path` (else `name`), as re-indexing it from its blob will."""
        extracted = text if text is not None else self._extract(data, kind, posixpath.basename(path or name))
        stored = data if kind in ("markdown", "text", "json", "image") else extracted.text.encode("utf-8")
        info = DocumentInput(
            title=extracted.title,
            source=DocumentSource.ingest,
            content_type=extracted.content_type if kind == "image" else KIND_TYPE[kind],
            text=extracted.text,
            doc_id=doc_id,
            metadata={
                "original_name": posixpath.basename(name)[:256],
                "original_type": extracted.content_type,
            },
        )
        return stored, info

    def ingest_file(
        self,
        brain: Brain,
        path: str,
        policy: LocalFilePolicy,
        kind: str | None = None,
        target: str | None = None,
        queue: bool = True,
        uploads: UploadSigner | None = None,
    ) -> IngestResult:
        """memory_ingest_file's `path`: where uploads go to the blob store (`uploads`: S3, whose
        server's disk the caller cannot reach), the key of a presigned upload, ingested as
        ingest_upload does; otherwise a local file read under `policy`. Without a root (stdio, the
        CLI) the process runs as the caller, so a local path means what it says on every backend."""
        if uploads is not None and policy.root is not None:
            return self.ingest_upload(brain, uploads, path, kind=kind, path=target)
        local = read_local_file(path, root=policy.root, max_bytes=min(policy.max_bytes, self.max_file_bytes))
        return self.ingest_bytes(brain, local.data, name=local.name, kind=kind, path=target, queue=queue)

    def ingest_files(
        self,
        brain: Brain,
        files: Sequence[tuple[str, str]],
        policy: LocalFilePolicy,
        progress: Callable[[int, IngestResult | CairnError], None] | None = None,
    ) -> list[IngestResult | CairnError]:
        """`ingest_file` of each (local path, document path), never queued, through
        DocumentService.write_many's pipeline: a file's text is extracted when it is staged, the
        new chunks of many documents are embedded together while the documents before them are
        committed and linked to their concepts. The same documents, chunks and links as ingesting
        them one by one; a file that fails gets its CairnError in its place. `progress(n, result)`
        is called as each file's result is settled (not in file order)."""
        started = time.perf_counter()
        results: list[IngestResult | CairnError | None] = [None] * len(files)

        def settle(n: int, result: IngestResult | CairnError) -> None:
            results[n] = result
            if progress is not None:
                progress(n, result)

        run: list[tuple[int, str, LocalFile, str]] = []  # documents since the last image
        for n, (file, target) in enumerate(files):
            try:
                local = read_local_file(
                    file, root=policy.root, max_bytes=min(policy.max_bytes, self.max_file_bytes)
                )
                kind = infer_kind(local.name, None, local.data)
                if kind == "image":  # its captions come from documents written before it
                    self._write_run(brain, run, settle, started)
                    settle(n, self.ingest_bytes(brain, local.data, name=local.name, path=target, queue=False))
                    continue
                self._check_size(len(local.data))
                run.append((n, target, local, kind))  # the write validates it
            except CairnError as exc:
                settle(n, exc)
        self._write_run(brain, run, settle, started)
        return [r for r in results if r is not None]

    def _write_run(
        self,
        brain: Brain,
        run: list[tuple[int, str, LocalFile, str]],
        settle: Callable[[int, IngestResult | CairnError], None],
        started: float,
    ) -> None:
        """Write the run's files together; after each commit, what `ingest_bytes` does after its
        write (while the next documents are embedded)."""
        made: dict[int, tuple[bytes, DocumentInput, Prepared | None]] = {}

        def deferred(k: int, path: str, local: LocalFile, kind: str) -> DeferredWrite:
            def make() -> tuple[bytes, DocumentInput]:
                stored, info = self.extracted(local.data, name=local.name, kind=kind, path=path)
                shown = self.images.prepare(brain, path, kind, local.data, info) if self.images else None
                info = shown.info if shown else info
                made[k] = (stored, info, shown)
                return stored, info

            return DeferredWrite(path, make)

        def done(k: int, outcome: WriteOutcome | CairnError) -> None:
            n, path = run[k][0], run[k][1]
            if isinstance(outcome, CairnError):
                settle(n, outcome)
                made.pop(k, None)
                return
            stored, info, shown = made.pop(k)
            settle(n, self._written(brain, path, outcome, stored, info, shown, started, completed=True))

        items = [deferred(k, path, local, kind) for k, (_, path, local, kind) in enumerate(run)]
        self.documents.write_many(brain, items, reason="ingest", done=done)
        run.clear()

    def presign_upload(
        self, brain: Brain, signer: UploadSigner, file_name: str, content_type: str | None, size: int | None
    ) -> tuple[str, PresignedUpload]:
        """A fresh key under the brain's uploads and a POST that may store at most 25 MiB there."""
        if size is not None:
            self._check_size(size)
        key = f"{uploads_prefix(brain)}{new_id('upl')}/{safe_name(file_name)}"
        post = signer.presign_upload(
            key, max_bytes=self.max_file_bytes, content_type=content_type, expires_in=UPLOAD_TTL_S
        )
        return key, post

    def ingest_upload(
        self,
        brain: Brain,
        signer: UploadSigner,
        key: str,
        *,
        kind: str | None = None,
        path: str | None = None,
    ) -> IngestResult:
        """Ingest a presigned upload by key (or the store's URL of it): only this brain's, sized
        (HEAD) before it is read; the object is dropped once ingested or queued. A queued ingest
        keeps a copy of its own, as every queued ingest does: the same upload queued for two paths
        is two jobs, and the first to finish must not take the second's bytes."""
        key = upload_key(signer, key)
        parts = key.split("/")
        # Only presigned keys: the queue's and the staged ingest's blobs share the prefix.
        presigned = key.startswith(uploads_prefix(brain)) and len(parts) == 4 and parts[2].startswith("upl_")
        size = signer.size(key) if presigned else None
        if size is None:
            raise NotFound(f"no upload {excerpt(key)} in this brain")
        self._check_size(size)
        data = self.documents.blobs.get(key)
        result = self.ingest_bytes(brain, data, name=parts[-1], kind=kind, path=path)
        self.documents.blobs.delete(key)
        return result

    def uploaded(self, key: str) -> bytes:
        """The bytes a queued ingest kept under `key`; NotFound in words a caller can act on (the
        store's own names the internal key)."""
        try:
            return self.documents.blobs.get(key)
        except NotFound:
            raise NotFound(UPLOAD_GONE) from None

    def _check_size(self, size: int) -> None:
        if size > self.max_file_bytes:
            raise FileTooLarge(f"file exceeds {self.max_file_bytes // (1024 * 1024)} MiB")

    def run_job(self, job: Job, ctx: JobContext) -> dict[str, Any]:
        """The queued ingest: the same path as a small file, then the upload blob is dropped."""
        assert self.brains is not None
        brain = self.brains.get(job.brain_id or "")
        p = job.input
        upload_key = str(p["upload_key"])
        done = ctx.checkpoints().get("ingested")
        if done is None:
            ctx.progress(0.1, f"extracting and indexing {p['name']}")
            doc_id, path = str(p["document_id"]), str(p["path"])
            self.refuse_if_erased(job, brain, path, upload_key)
            if self.status is not None:
                self.status.mark(brain.id, doc_id, path, PROCESSING, job_id=job.id)
            try:
                result = self.ingest_bytes(
                    brain,
                    self.uploaded(upload_key),
                    name=str(p["name"]),
                    kind=str(p["kind"]),
                    path=path,
                    doc_id=doc_id,
                    queue=False,
                )
            except Exception as exc:
                if self.scope_erased(job, path):  # its scope erased meanwhile: nothing of it is kept
                    self._forget_queued(brain, job, upload_key)
                elif self.status is not None:
                    self.status.failed(brain.id, doc_id, path, job_id=job.id, error=failure_text(exc))
                raise
            done = {
                "status": "completed",
                "document_id": result.document_id,
                "path": result.path,
                "hash": result.hash,
                "chunk_count": result.chunk_count,
                "embedded_count": result.embedded_count,
                "reused": result.reused,
            }
            ctx.checkpoint("ingested", done)
        self.refuse_if_erased(job, brain, str(done["path"]), upload_key, written=True)
        drop_upload(self.documents.blobs, upload_key)
        return dict(done)

    def refuse_if_erased(
        self, job: Job, brain: Brain, path: str, upload_key: str, *, written: bool = False
    ) -> None:
        """Forbidden when the agent scope holding `path` was erased after `job` was queued: the
        upload's bytes and the path's ingest status go, and what the job wrote there (`written`)
        is erased too, since the erasure's scans may be over (services/erasure/erased.py). The
        error names no path; the job's own record still does (the erasure forgot finished jobs
        only, and this one finishes after it), so the sweep forgets it once it has failed."""
        if not self.scope_erased(job, path):
            return
        if written:
            with access.as_system():
                if self.take_back is not None:
                    self.take_back(brain, path)
                else:
                    self.documents.erase(brain, path, reason="erasure")
        self._forget_queued(brain, job, upload_key)
        if self.job_log is not None:  # its record names the path: it goes once it has failed
            self.job_log.forget_once_finished(job)
        raise Forbidden(ERASED_SCOPE)

    def _forget_queued(self, brain: Brain, job: Job, upload_key: str) -> None:
        """A job into an erased scope: its queued bytes and its item status (which names the path) go."""
        drop_upload(self.documents.blobs, upload_key)
        if self.status is not None:
            self.status.completed(brain.id, str(job.input.get("document_id", "")))

    def scope_erased(self, job: Job, path: str) -> bool:
        """Whether the agent scope holding `path` was erased after `job` was queued."""
        since = self.erased.scope_since(job.brain_id or "", path) if self.erased is not None else None
        return since is not None and since >= job.created_at

    def ingest_url(self, brain: Brain, url: str) -> IngestResult:
        fetched = self.fetcher.fetch(url)
        name = posixpath.basename(fetched.final_url.split("?", 1)[0].rstrip("/")) or "index.html"
        path = url_path(fetched.final_url)
        return self.ingest_bytes(brain, fetched.body, name=name, content_type=fetched.content_type, path=path)
