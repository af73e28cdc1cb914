"""Wire types of extraction, reflection and consolidation, shared by REST and the canonical MCP surface.

Seed shapes: memory_extract returns `{mode: 'session', messages}` or `{mode: 'transcript',
document}`; memory_reflect returns reflection_status, reflection {outcome, should_record_episode,
path, retry_feedback?}, reflection_attempted and ended_at (optional keys appear only when set; a
failed reflection adds `error: {code, message, retryable}`); memory_consolidate returns
`{result}`, here the queued job.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.domain.models import Document, Job, Message
from cairn.entrypoints.wire import DocumentRecord, Timestamp, Wire, rfc3339
from cairn.entrypoints.wire_sessions import Role, SessionMessageRecord
from cairn.services.memory.reflection import ReflectOutcome


def _absent(value: object) -> bool:
    return value is None


class ExtractMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    content: Annotated[str, Field(min_length=1, max_length=1_000_000)]


ExtractMessages = Annotated[list[ExtractMessage], Field(min_length=1, max_length=500)]


class ExtractSessionResult(Wire):
    mode: Literal["session"] = "session"
    messages: list[SessionMessageRecord]
    job_id: str | None = Field(default=None, exclude_if=_absent)
    """The extraction job to poll (`GET /v1/jobs/{job_id}`); absent over MCP."""

    @classmethod
    def of(cls, messages: list[Message], job: Job | None = None) -> ExtractSessionResult:
        return cls(
            messages=[SessionMessageRecord.model_validate(m) for m in messages],
            job_id=job.id if job else None,
        )


class ExtractTranscriptResult(Wire):
    mode: Literal["transcript"] = "transcript"
    document: DocumentRecord
    job_id: str | None = Field(default=None, exclude_if=_absent)
    """The extraction job to poll (`GET /v1/jobs/{job_id}`); absent over MCP."""

    @classmethod
    def of(cls, doc: Document, job: Job | None = None) -> ExtractTranscriptResult:
        return cls(document=DocumentRecord.model_validate(doc), job_id=job.id if job else None)


class ReflectionRecord(Wire):
    outcome: str
    should_record_episode: bool
    path: str
    retry_feedback: str | None = Field(default=None, exclude_if=_absent)


class ReflectError(Wire):
    code: str
    message: str
    retryable: bool


class ReflectResponse(Wire):
    reflection_status: Literal["completed", "no_result", "failed"]
    reflection: ReflectionRecord | None = Field(default=None, exclude_if=_absent)
    reflection_attempted: bool
    ended_at: Timestamp | None = Field(default=None, exclude_if=_absent)
    error: ReflectError | None = Field(default=None, exclude_if=_absent)

    @classmethod
    def of(cls, r: ReflectOutcome) -> ReflectResponse:
        ref = r.reflection
        record = None
        if ref.outcome is not None and ref.path is not None:
            record = ReflectionRecord(
                outcome=ref.outcome,
                should_record_episode=ref.should_record_episode,
                path=ref.path,
                retry_feedback=ref.retry_feedback,
            )
        error = None
        if ref.error_code is not None:
            error = ReflectError(
                code=ref.error_code, message=ref.error_message or "reflection failed", retryable=r.retryable
            )
        return cls(
            reflection_status=ref.status.value,
            reflection=record,
            reflection_attempted=r.attempted,
            ended_at=r.session.ended_at,
            error=error,
        )

    def summary(self) -> str:
        """The seed's scan line: outcome, record-episode flag, path and ended-at."""
        r = self.reflection
        parts = [f"Reflection {self.reflection_status}"]
        if r is not None:
            parts.append(f"outcome={r.outcome} record_episode={str(r.should_record_episode).lower()}")
            parts.append(f"path={r.path}")
        if self.ended_at is not None:
            parts.append(f"ended_at={rfc3339(self.ended_at)}")
        if self.error is not None:
            parts.append(f"error={self.error.code}: {self.error.message}")
        if not self.reflection_attempted:
            parts.append("(already reflected)")
        return " ".join(parts)


class JobStarted(Wire):
    job_id: str
    kind: str
    status: Literal["queued", "running", "completed", "failed"]
    brain_id: str | None

    @classmethod
    def of(cls, job: Job) -> JobStarted:
        return cls(job_id=job.id, kind=job.kind, status=job.status.value, brain_id=job.brain_id)


class ConsolidateResponse(Wire):
    result: JobStarted
