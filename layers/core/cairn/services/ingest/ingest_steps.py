"""A queued ingest as separate steps, for the ingest state machine (infra/statemachines/ingest.asl.json):
validate -> extract -> chunk -> index (one call per batch, run concurrently) -> finalize, and
`discard` after a failure. The embedded runner runs the same work as one job (IngestService.run_job).

Working files sit under the upload's prefix (`uploads/<brain>/staging/<job>/`), which the bucket
expires: the bytes to store and their text (extract), one JSON file of chunks per batch (chunk).
Batches upsert their chunks inactive, under ids apart from the live version's (staged_chunk_id),
so search keeps finding the live version, and nothing of the new one, until finalize commits the
record and activates exactly those chunks. A failure discards them; a document whose record was
already committed by this job is finished instead, so nothing committed is left without chunks.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from cairn import faults
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.models import Brain, Chunk, Document, DocumentSource, Job
from cairn.domain.paths import normalize_user_path
from cairn.ingest.extract import KINDS
from cairn.ports.clock import Clock
from cairn.ports.jobs import JobContext, JobSteps
from cairn.services.brains import BrainService
from cairn.services.documents.blob_keys import uploads_folder
from cairn.services.documents.chunk_ids import staged_chunk_id
from cairn.services.documents.document_text import title_for
from cairn.services.documents.inputs import DocumentInput, checksum
from cairn.services.ingest.service import UPLOAD_GONE, IngestService
from cairn.services.mnemosyne.image_items import Prepared
from cairn.services.mnemosyne.item_status import PROCESSING

INGEST_JOB_MARK = "ingest_job"  # metadata naming the job that committed a version


class QueuedIngest(BaseModel):
    """The ingest job's payload (IngestQueue.queue)."""

    model_config = ConfigDict(extra="ignore")
    upload_key: str
    name: str
    kind: str
    path: str
    document_id: str


class StagedIngest:
    def __init__(
        self, ingest: IngestService, brains: BrainService, clock: Clock, *, batch_size: int = 32
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.ingest, self.documents, self.brains, self.clock = ingest, ingest.documents, brains, clock
        self.blobs, self.indexer = ingest.documents.blobs, ingest.documents.indexer
        self.batch_size = batch_size

    def steps(self) -> JobSteps:
        return JobSteps(
            {
                "validate": self.validate,
                "extract": self.extract,
                "chunk": self.chunk,
                "index": self.index_batch,
                "finalize": self.finalize,
            },
            finish="finalize",
            cleanup=self.discard,
        )

    # -- steps ---------------------------------------------------------------------------------

    def validate(self, job: Job, ctx: JobContext, item: dict[str, Any]) -> dict[str, Any]:
        p = _payload(job)
        self._brain(job)
        if p.kind not in KINDS:
            raise InvalidInput(f"unknown content kind {p.kind!r}")
        if normalize_user_path(p.path) != p.path:
            raise InvalidInput(f"not a normalized document path: {p.path!r}")
        if not self.blobs.exists(p.upload_key):
            raise NotFound(UPLOAD_GONE)
        self.ingest.refuse_if_erased(job, self._brain(job), p.path, p.upload_key)
        if self.ingest.status is not None:
            self.ingest.status.mark(job.brain_id or "", p.document_id, p.path, PROCESSING, job_id=job.id)
        ctx.progress(0.05, f"validated {p.name}")
        return {}

    def extract(self, job: Job, ctx: JobContext, item: dict[str, Any]) -> dict[str, Any]:
        if "extracted" in ctx.checkpoints():
            return {}
        p = _payload(job)
        data = self.ingest.uploaded(p.upload_key)
        stored, info = self.ingest.extracted(data, name=p.name, kind=p.kind, path=p.path)
        images = self.ingest.images
        prepared = images.prepare(self._brain(job), p.path, p.kind, data, info) if images else None
        if prepared is not None:
            info = prepared.info  # an image's captions in its text, image_count in the metadata
        self.blobs.put(self._key(job, "content"), stored)
        self.blobs.put(self._key(job, "text"), (info.text or "").encode("utf-8"))
        described = {
            "title": info.title,
            "content_type": info.content_type,
            "metadata": dict(info.metadata),
            "shown": prepared.shown if prepared is not None else None,
        }
        ctx.checkpoint("extracted", described)
        ctx.progress(0.15, f"extracted {p.name}")
        return {}

    def chunk(self, job: Job, ctx: JobContext, item: dict[str, Any]) -> dict[str, Any]:
        done = ctx.checkpoints().get("chunked")
        if done is None:
            done = self._chunk(job, ctx.checkpoints()["extracted"])
            ctx.checkpoint("chunked", done)
            ctx.progress(0.25, f"{done['count']} chunks in {done['batches']} batches")
        return {"batches": list(range(int(done["batches"]))), "chunk_count": int(done["count"])}

    def index_batch(self, job: Job, ctx: JobContext, item: dict[str, Any]) -> dict[str, Any]:
        """Embed one batch and upsert it inactive; redoing it overwrites the same ids."""
        batch = item.get("batch")
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 0:
            raise InvalidInput("an index step needs a batch number")
        rows = json.loads(self.blobs.get(self._key(job, f"batch-{batch:05d}.json")))
        chunks = [Chunk.model_validate(row["chunk"]) for row in rows]
        vectors = self.indexer.embed([str(row["embed"]) for row in rows])
        self.indexer.index.upsert(chunks, vectors)
        faults.reached("ingest.staged")
        batches = int(ctx.checkpoints()["chunked"]["batches"])
        try:  # also asks whether the job still runs: a failed job has discarded its staged chunks
            ctx.progress(
                0.25 + 0.7 * (batch + 1) / max(batches, 1), f"indexed batch {batch + 1} of {batches}"
            )
        except Conflict:
            # The job failed (another batch ran out of retries) while this one was writing, and
            # its discard may have run before this upsert: take these chunks back out.
            self.indexer.index.delete_chunks(job.brain_id or "", [c.id for c in chunks])
            raise
        return {"batch": batch, "indexed": len(chunks)}

    def finalize(self, job: Job, ctx: JobContext, item: dict[str, Any]) -> dict[str, Any]:
        done = ctx.checkpoints()
        if "finalized" in done:
            return dict(done["finalized"])
        p, brain, chunked = _payload(job), self._brain(job), done["chunked"]
        content = self.blobs.get(self._key(job, "content"))
        if chunked["reused"]:
            doc = self.documents.get(brain, p.path)
        else:
            doc = self._commit(job, brain, p, chunked, done["extracted"], content)
            text = self.blobs.get(self._key(job, "text")).decode("utf-8", "replace")
            self.ingest.link_concepts(brain.id, doc.id, text)
            shown = done["extracted"].get("shown")
            faults.reached("ingest.written")
            if shown is not None and self.ingest.images is not None:  # the images this document shows
                self.ingest.images.record(brain, p.path, Prepared(DocumentInput(), shown), written=doc)
        result = {
            "status": "completed",
            "document_id": doc.id,
            "path": doc.path,
            "hash": checksum(content),
            "chunk_count": doc.chunk_count,
            "embedded_count": 0 if chunked["reused"] else int(chunked["count"]),
            "reused": bool(chunked["reused"]),
        }
        self.ingest.refuse_if_erased(job, brain, p.path, p.upload_key, written=not chunked["reused"])
        ctx.checkpoint("finalized", result)
        if self.ingest.status is not None:
            self.ingest.status.completed(brain.id, p.document_id)
        ctx.progress(1.0, "done")
        self._tidy(job, int(chunked.get("batches", 0)), drop_upload=True)
        return result

    def discard(self, job: Job, checkpoints: dict[str, Any]) -> None:
        """After a failure: drop the staged chunks and working files. If this job already
        committed the document's record, its chunks go live instead (the record counts on them)."""
        p = _payload(job)
        erased = self.ingest.scope_erased(job, p.path)
        if self.ingest.status is not None and "finalized" not in checkpoints and not erased:
            error = job.error or "ingest failed"
            self.ingest.status.failed(job.brain_id or "", p.document_id, p.path, job_id=job.id, error=error)
        chunked = checkpoints.get("chunked")
        if chunked and not chunked["reused"]:
            ids = _staged_ids(job, chunked)
            live = self.documents.repo.get(job.brain_id or "", _payload(job).path)
            if live is not None and live.metadata.get(INGEST_JOB_MARK) == job.id and live.deleted_at is None:
                self.documents.reconcile(live.brain_id, live.id)  # from its record, staged vectors reused
            else:
                self.indexer.index.delete_chunks(job.brain_id or "", ids)
        self._tidy(job, int(chunked["batches"]) if chunked else 0, drop_upload=erased)

    # -- internals -----------------------------------------------------------------------------

    def _chunk(self, job: Job, extracted: dict[str, Any]) -> dict[str, Any]:
        p, brain = _payload(job), self._brain(job)
        content = self.blobs.get(self._key(job, "content"))
        text = self.blobs.get(self._key(job, "text")).decode("utf-8")
        existing = self.documents.repo.get(brain.id, p.path)
        live = existing if existing and existing.deleted_at is None else None
        if live and live.checksum_sha256 == checksum(content):
            return {"reused": True, "document_id": live.id, "count": 0, "batches": 0}
        now = self.clock.now()
        doc = Document(
            id=existing.id if existing else p.document_id,
            brain_id=brain.id,
            path=p.path,
            title=extracted["title"] or title_for(p.path, text),
            content_type=extracted["content_type"],
            source=DocumentSource.ingest,
            checksum_sha256=checksum(content),
            byte_size=len(content),
            blob_key="",
            commit_sha="",
            created_at=live.created_at if live else now,
            updated_at=now,
        )
        pairs = self.indexer.chunks_of(doc, text)
        stage = _stage(job)
        batches = 0
        for start in range(0, len(pairs), self.batch_size):
            rows = [
                {
                    "chunk": c.model_copy(
                        update={"id": staged_chunk_id(doc.id, stage, c.ordinal), "active": False}
                    ).model_dump(mode="json"),
                    "embed": embed,
                }
                for c, embed in pairs[start : start + self.batch_size]
            ]
            self.blobs.put(self._key(job, f"batch-{batches:05d}.json"), json.dumps(rows).encode())
            batches += 1
        return {"reused": False, "document_id": doc.id, "count": len(pairs), "batches": batches}

    def _commit(
        self,
        job: Job,
        brain: Brain,
        p: QueuedIngest,
        chunked: dict[str, Any],
        extracted: dict[str, Any],
        content: bytes,
    ) -> Document:
        ids = _staged_ids(job, chunked)
        existing = self.documents.repo.get(brain.id, p.path)
        if existing is not None and existing.id != chunked["document_id"]:
            raise InvalidInput(f"{p.path} was replaced while it was being ingested; ingest it again")
        if existing and existing.deleted_at is None and existing.metadata.get(INGEST_JOB_MARK) == job.id:
            self.documents.reconcile(brain.id, existing.id)  # committed before a crash
            return existing
        present = {c.id for c in self.indexer.index.get_chunks(brain.id, chunked["document_id"])}
        if missing := [i for i in ids if i not in present]:
            raise InvalidInput(f"{len(missing)} staged chunks of {p.path} are gone; ingest it again")
        text = self.blobs.get(self._key(job, "text")).decode("utf-8")
        info = DocumentInput(
            source=DocumentSource.ingest,
            title=extracted["title"],
            content_type=extracted["content_type"],
            text=text,
            doc_id=chunked["document_id"],
            metadata={**extracted["metadata"], INGEST_JOB_MARK: job.id},
            staged_chunks=ids,
        )
        return self.documents.write(brain, p.path, content, info, reason="ingest").document

    def _tidy(self, job: Job, batches: int, *, drop_upload: bool) -> None:
        keys = [self._key(job, "content"), self._key(job, "text")]
        keys += [self._key(job, f"batch-{b:05d}.json") for b in range(batches)]
        if drop_upload:
            keys.append(_payload(job).upload_key)
        for key in keys:
            if self.blobs.exists(key):
                self.blobs.delete(key)

    def _brain(self, job: Job) -> Brain:
        return self.brains.get(job.brain_id or "")

    def _key(self, job: Job, name: str) -> str:
        return f"{uploads_folder(job.brain_id or '')}staging/{job.id}/{name}"


def _payload(job: Job) -> QueuedIngest:
    try:
        return QueuedIngest.model_validate(job.input)
    except ValueError:
        raise InvalidInput("not an ingest job payload") from None


def _stage(job: Job) -> str:
    return job.id.removeprefix("job_")


def _staged_ids(job: Job, chunked: dict[str, Any]) -> list[str]:
    return [staged_chunk_id(chunked["document_id"], _stage(job), i) for i in range(int(chunked["count"]))]
