"""Reflection: close a session, look back over it, and keep an episode note when it matters.

memory_reflect is synchronous (seed): the session is closed first — that always sticks — then
the Reflector reads every message. When the reflection says the session is worth recording, an
episode note (source `reflect`, sector `episodic`) is written at the reflection's path, which is
deterministic per session, so reflecting twice never writes two notes. The outcome is kept on the
session: reflecting an already reflected session returns it without running again
(`reflection_attempted: false`), while a failed reflection (the model errored; nothing written)
runs again on the next call. Messages not yet covered by extraction are queued for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn.domain.models import (
    Brain,
    DocumentSource,
    MemoryFacet,
    MemoryType,
    Message,
    Reflection,
    ReflectionStatus,
    Session,
)
from cairn.ports.clock import Clock
from cairn.ports.generator import GenerationError
from cairn.ports.reflection import ReflectionDraft, Reflector
from cairn.services.documents.inputs import DocumentInput
from cairn.services.documents.service import DocumentService
from cairn.services.memory.extraction import ExtractionService, utterance_of
from cairn.services.memory.fact_memory import namespace
from cairn.services.sessions.service import SessionService


@dataclass(frozen=True)
class ReflectOutcome:
    session: Session
    reflection: Reflection
    attempted: bool
    retryable: bool = False


def episode_path(session: Session) -> str:
    day = session.created_at.strftime("%Y-%m-%d")
    return f"{namespace(session.actor_id)}episodes/{day}-{session.id}.md"


class ReflectionService:
    def __init__(
        self,
        sessions: SessionService,
        documents: DocumentService,
        reflector: Reflector,
        extraction: ExtractionService,
        clock: Clock,
    ) -> None:
        self.sessions = sessions
        self.documents = documents
        self.reflector = reflector
        self.extraction = extraction
        self.clock = clock

    def reflect(self, brain: Brain, session_id: str) -> ReflectOutcome:
        session = self.sessions.close(brain, session_id)
        done = session.reflection
        if done is not None and done.status is not ReflectionStatus.failed:
            return ReflectOutcome(session, done, attempted=False)
        messages = self.sessions.messages(brain, session_id)
        if session.extracted_upto < len(messages):
            self.extraction.queue_session(brain, session, len(messages))
        path = episode_path(session)
        retryable = False
        try:
            draft = self.reflector.reflect(session.title, [utterance_of(m) for m in messages])
        except GenerationError as exc:
            retryable = exc.retryable
            reflection = self._failed(path, exc)
        else:
            if draft is None:
                reflection = Reflection(
                    status=ReflectionStatus.no_result,
                    path=path,
                    reflected_by=self.reflector.name,
                    reflected_at=self.clock.now(),
                )
            else:
                reflection = self._completed(brain, session, messages, draft, path)
        stored = self.sessions.update(
            brain, session_id, lambda s: s.model_copy(update={"reflection": reflection})
        )
        return ReflectOutcome(stored, reflection, attempted=True, retryable=retryable)

    def _failed(self, path: str, exc: GenerationError) -> Reflection:
        return Reflection(
            status=ReflectionStatus.failed,
            path=path,
            error_code=exc.code,
            error_message=exc.message,
            reflected_by=self.reflector.name,
            reflected_at=self.clock.now(),
        )

    def _completed(
        self, brain: Brain, session: Session, messages: list[Message], draft: ReflectionDraft, path: str
    ) -> Reflection:
        episode_id = None
        if draft.should_record_episode:
            info = DocumentInput(
                title=_episode_title(session, draft),
                source=DocumentSource.reflect,
                content_type="text/markdown",
                metadata={
                    "kind": "episode",
                    "session_id": session.id,
                    "outcome": draft.outcome,
                    "messages": len(messages),
                    **({"actor_id": session.actor_id} if session.actor_id else {}),
                },
                memory=MemoryFacet(
                    type=MemoryType.event,
                    importance=min(1.0, max(0.0, draft.importance)),
                    category="episode",
                    sector="episodic",
                    source_agent=session.actor_id,
                    valid_from=session.created_at,
                ),
            )
            body = _episode_markdown(session, messages, draft).encode("utf-8")
            episode_id = self.documents.write(brain, path, body, info, reason="reflect").document.id
        return Reflection(
            status=ReflectionStatus.completed,
            outcome=draft.outcome,
            should_record_episode=draft.should_record_episode,
            path=path,
            retry_feedback=draft.retry_feedback,
            summary=draft.summary,
            episode_id=episode_id,
            reflected_by=self.reflector.name,
            reflected_at=self.clock.now(),
        )


def _episode_title(session: Session, draft: ReflectionDraft) -> str:
    label = session.title or re.sub(r"\s+", " ", draft.summary)[:80] or session.id
    return f"Episode {session.created_at:%Y-%m-%d}: {label}"[:200]


def _episode_markdown(session: Session, messages: list[Message], draft: ReflectionDraft) -> str:
    ended = session.ended_at.isoformat() if session.ended_at else "open"
    lines = [
        f"# {_episode_title(session, draft)}",
        "",
        f"Outcome: {draft.outcome}",
        f"Session: {session.id} ({len(messages)} messages, {session.created_at.isoformat()} to {ended})",
        "",
        draft.summary.strip(),
    ]
    if draft.highlights:
        lines += ["", "## Highlights", "", *(f"- {h}" for h in draft.highlights)]
    if draft.retry_feedback:
        lines += ["", "## Next time", "", draft.retry_feedback.strip()]
    return "\n".join(lines) + "\n"
