"""Fact extraction: what was said becomes memory notes, in a background job.

Two ways in (seed memory_extract): messages appended to a session — extraction is queued when a
message arrives without `skip_extract`, and covers every message since the session's watermark —
or a transcript document (source `extract`), whose messages are kept as JSON beside it.
The job runs the configured FactExtractor, then stores each fact through FactMemory. Steps are
idempotent: the drafts are checkpointed before anything is written (a rerun reuses them, so a
model is not asked twice and never half-answers), fact notes land on deterministic paths, and the
watermark only moves forward.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from cairn.auth import access
from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, DocumentSource, Job, MemoryType, Message, Session
from cairn.domain.moments import utc_moment
from cairn.domain.text import check_actor_id
from cairn.ports.blobs import BlobStore
from cairn.ports.clock import Clock
from cairn.ports.facts import FactDraft, FactExtractor, Utterance
from cairn.ports.jobs import JobContext, JobRunner
from cairn.services.brains import BrainService
from cairn.services.documents.inputs import DocumentInput
from cairn.services.documents.service import DocumentService
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.memory.fact_memory import FactMemory, Provenance
from cairn.services.sessions.service import NewMessage, SessionService

EXTRACT_JOB = "extract"
MAX_MESSAGES = 500
MAX_REPORTED = 50

_queued_here: ContextVar[list[Job] | None] = ContextVar("cairn_extract_queued", default=None)
"""Set while submit_session appends: the append listener reports the job it queued there."""


@dataclass(frozen=True)
class Said:
    """One message handed to memory_extract."""

    role: str
    content: str


class ExtractionService:
    def __init__(
        self,
        brains: BrainService,
        sessions: SessionService,
        documents: DocumentService,
        facts: FactMemory,
        extractor: FactExtractor,
        jobs: JobRunner,
        blobs: BlobStore,
        clock: Clock,
        erased: ErasedSubjects | None = None,
    ) -> None:
        """`erased`: who has been erased since (services/erasure/erased.py); a job drawing on an
        actor erased after it was queued takes back what it stored and stops."""
        self.brains = brains
        self.sessions = sessions
        self.documents = documents
        self.facts = facts
        self.extractor = extractor
        self.jobs = jobs
        self.blobs = blobs
        self.clock = clock
        self.erased = erased

    # -- submitting --------------------------------------------------------------------------

    def submit_session(
        self, brain: Brain, session_id: str, said: Sequence[Said], actor_id: str | None = None
    ) -> tuple[list[Message], Job | None]:
        """Append `said` to the session, `skip_extract` on all but the last, which queues extraction;
        the messages and the job that extracts them."""
        _check_count(said)
        check_actor_id(actor_id)
        last = len(said) - 1
        items = [
            NewMessage(
                s.role,
                s.content,
                metadata={**({"actor_id": actor_id} if actor_id else {}), "skip_extract": i != last},
            )
            for i, s in enumerate(said)
        ]
        queued: list[Job] = []
        token = _queued_here.set(queued)
        try:
            messages = self.sessions.append_many(brain, session_id, items)
        finally:
            _queued_here.reset(token)
        return messages, queued[-1] if queued else None

    def submit_transcript(
        self, brain: Brain, said: Sequence[Said], actor_id: str | None = None
    ) -> tuple[Document, Job]:
        """Store the conversation as a transcript document (source `extract`) and queue extraction;
        the document and the job."""
        _check_count(said)
        check_actor_id(actor_id)
        for s in said:
            if s.role not in ("system", "user", "assistant", "tool") or not s.content:
                raise InvalidInput("each message needs a role (system, user, assistant, tool) and content")
        now = self.clock.now()
        doc_id = new_id("doc")
        raw_key = f"{brain.id}/raw/{doc_id}/extract.json"
        turns = [{"role": s.role, "content": s.content} for s in said]
        self.blobs.put(raw_key, json.dumps({"actor_id": actor_id, "messages": turns}).encode())
        path = f"transcripts/{now:%Y-%m-%d}-{doc_id[-10:]}.md"
        info = DocumentInput(
            title=_transcript_title(said),
            source=DocumentSource.extract,
            content_type="text/markdown",
            metadata={
                "kind": "transcript",
                "messages": len(said),
                **({"actor_id": actor_id} if actor_id else {}),
            },
            doc_id=doc_id,
        )
        body = _transcript_markdown(said, now).encode("utf-8")
        doc = self.documents.write(brain, path, body, info, reason="extract")
        job = self.jobs.start(
            EXTRACT_JOB,
            {"mode": "transcript", "document_id": doc.document.id, "raw_key": raw_key, "actor_id": actor_id},
            brain_id=brain.id,
            principal=access.job_principal(),
            idempotency_key=f"extract:{doc.document.id}",
        )
        return doc.document, job

    def queue_session(self, brain: Brain, session: Session, upto: int) -> Job:
        return self.jobs.start(
            EXTRACT_JOB,
            {"mode": "session", "session_id": session.id, "upto": upto},
            brain_id=brain.id,
            principal=access.job_principal(),
            idempotency_key=f"extract:{session.id}:{upto}",
        )

    def on_appended(self, brain: Brain, session: Session, upto: int, messages: list[Message]) -> None:
        """SessionService listener: a message without `skip_extract` queues extraction up to it."""
        if messages and messages[-1].metadata.get("skip_extract") is not True:
            job = self.queue_session(brain, session, upto)
            queued = _queued_here.get()
            if queued is not None:
                queued.append(job)

    # -- the job -----------------------------------------------------------------------------

    def run(self, job: Job, ctx: JobContext) -> dict[str, Any]:
        brain = self.brains.get(job.brain_id or "")
        if job.input.get("mode") == "transcript":
            return self._run_transcript(brain, job, ctx)
        return self._run_session(brain, job, ctx)

    def _run_session(self, brain: Brain, job: Job, ctx: JobContext) -> dict[str, Any]:
        session_id = str(job.input["session_id"])
        upto = int(job.input["upto"])
        session = self.sessions.session(brain, session_id)
        start = session.extracted_upto
        if start >= upto:
            return {"mode": "session", "session_id": session_id, "messages": 0, "facts": 0, "skipped": True}
        window = self.sessions.messages(brain, session_id, after=start)[: upto - start]
        utterances = [utterance_of(m) for m in window]
        prov = Provenance(session_id, (), self.extractor.name, session.actor_id or _actor(window))
        result = self._extract_and_store(brain, utterances, prov, ctx, job.created_at)

        def advance(s: Session) -> Session | None:
            return s.model_copy(update={"extracted_upto": upto}) if s.extracted_upto < upto else None

        self.sessions.update(brain, session_id, advance)
        return {"mode": "session", "session_id": session_id, "messages": len(window), **result}

    def _run_transcript(self, brain: Brain, job: Job, ctx: JobContext) -> dict[str, Any]:
        doc_id = str(job.input["document_id"])
        try:
            doc = self.documents.get_by_id(brain, doc_id)  # live only: its turns outlive a delete
        except NotFound:
            raise NotFound(f"transcript {doc_id} was deleted before its extraction ran") from None
        raw = json.loads(self.blobs.get(str(job.input["raw_key"])))
        utterances = [
            Utterance(
                id=f"{doc_id}#{n}",
                speaker=m["role"],
                role=m["role"],
                text=m["content"],
                said_at=doc.created_at,
            )
            for n, m in enumerate(raw["messages"], start=1)
        ]
        prov = Provenance(doc_id, (), self.extractor.name, raw.get("actor_id"))
        result = self._extract_and_store(brain, utterances, prov, ctx, job.created_at)
        return {"mode": "transcript", "document_id": doc_id, "messages": len(utterances), **result}

    def _extract_and_store(
        self, brain: Brain, utterances: list[Utterance], prov: Provenance, ctx: JobContext, queued: datetime
    ) -> dict[str, Any]:
        done = ctx.checkpoints()
        if "drafts" in done:
            drafts = [_draft(d) for d in done["drafts"]]
        else:
            ctx.progress(0.05, f"extracting facts from {len(utterances)} messages")
            drafts = self.extractor.extract(utterances)
            ctx.checkpoint("drafts", [_dump(d) for d in drafts])
        counts = {"created": 0, "confirmed": 0, "unchanged": 0, "known": 0}
        paths: list[str] = []
        for i, draft in enumerate(drafts):
            if self._erased_since(brain, prov, queued):
                return self._stopped(ctx, counts)
            stored = self.facts.store(brain, draft, _with_sources(prov, draft.source_ids))
            if stored.outcome in ("created", "confirmed") and self._erased_since(brain, prov, queued):
                with access.as_system():  # erased meanwhile: the erasure's scans may be over
                    self.documents.delete(brain, stored.document.path)
                return self._stopped(ctx, counts)
            counts[stored.outcome] += 1
            if len(paths) < MAX_REPORTED and stored.document.deleted_at is None:
                paths.append(stored.document.path)
            ctx.progress(0.1 + 0.9 * (i + 1) / len(drafts), f"stored {i + 1} of {len(drafts)} facts")
        return {"facts": len(drafts), **counts, "paths": paths, "extracted_by": self.extractor.name}

    def _stopped(self, ctx: JobContext, counts: dict[str, int]) -> dict[str, Any]:
        """The result of a job whose actor was erased under way; its drafts (the actor's words,
        an erasure that ran meanwhile could not take them from a running job) go too."""
        ctx.checkpoint("drafts", [])
        return {"facts": 0, **counts, "paths": [], "extracted_by": self.extractor.name, "erased": True}

    def _erased_since(self, brain: Brain, prov: Provenance, queued: datetime) -> bool:
        erased = self.erased.actor_since(brain.id, prov.actor_id) if self.erased is not None else None
        return erased is not None and erased >= queued


def _with_sources(prov: Provenance, source_ids: tuple[str, ...]) -> Provenance:
    return Provenance(prov.origin, source_ids, prov.extracted_by, prov.actor_id)


def _check_count(said: Sequence[Said]) -> None:
    if not 1 <= len(said) <= MAX_MESSAGES:
        raise InvalidInput(f"messages must have 1..{MAX_MESSAGES} entries")


def utterance_of(m: Message) -> Utterance:
    speaker = m.metadata.get("speaker")
    return Utterance(
        id=m.id,
        speaker=speaker if isinstance(speaker, str) and speaker else m.role.value,
        role=m.role.value,
        text=m.content,
        said_at=_said_at(m),
    )


def _said_at(m: Message) -> datetime:
    """A message may say when it was really said (imported history); else when it was stored. At
    the offset it was said at: "yesterday" is the speaker's yesterday, not UTC's."""
    value = m.metadata.get("said_at")
    if isinstance(value, str):
        try:
            given = datetime.fromisoformat(value)
        except ValueError:
            return m.created_at
        moment = utc_moment(given)
        try:
            return moment.astimezone(given.tzinfo) if given.tzinfo is not None else moment
        except OverflowError:  # held a day inside the calendar's ends: UTC's day is near enough
            return moment
    return m.created_at


def _actor(messages: Sequence[Message]) -> str | None:
    for m in reversed(messages):
        actor = m.metadata.get("actor_id")
        if isinstance(actor, str) and actor:
            return actor
    return None


def _dump(d: FactDraft) -> dict[str, Any]:
    out = asdict(d)
    out["type"] = d.type.value
    return out


def _draft(d: dict[str, Any]) -> FactDraft:
    return FactDraft(
        text=d["text"],
        source_ids=tuple(d["source_ids"]),
        type=MemoryType(d["type"]),
        category=d["category"],
        subject=d.get("subject"),
        entities=tuple(d.get("entities") or ()),
        importance=float(d.get("importance", 0.5)),
    )


def _transcript_title(said: Sequence[Said]) -> str:
    first = next((s.content for s in said if s.role == "user"), said[0].content)
    line = " ".join(first.split())
    return f"Transcript: {line[:80]}" + ("…" if len(line) > 80 else "")


def _transcript_markdown(said: Sequence[Said], when: datetime) -> str:
    parts = [f"# Transcript {when:%Y-%m-%d %H:%M} UTC", ""]
    for s in said:
        parts += [f"**{s.role}**:", "", s.content.strip(), ""]
    return "\n".join(parts)
