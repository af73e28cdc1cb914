"""Reflection: closes the session, writes an episode note when worth it, remembers its outcome."""

from __future__ import annotations

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import NotFound
from cairn.domain.models import Brain, DocumentSource, ReflectionStatus, SessionStatus
from cairn.ports.generator import GenerationError
from cairn.ports.reflection import ReflectionDraft
from cairn.services.memory.reflection import episode_path
from tests.fakes.facts import FakeReflector

DRAFT = ReflectionDraft(
    outcome="failure",
    should_record_episode=True,
    summary="The user tried to deploy and the build failed twice.",
    highlights=("Build fails on Python 3.13", "Pinned numpy"),
    retry_feedback="Pin the runtime to Python 3.12 before building.",
    importance=0.7,
)


def conversation(container: Container, brain: Brain, title: str | None = "Deploy") -> str:
    session = container.sessions.create(brain, title=title, actor_id="ops-bot")
    container.sessions.append(brain, session.id, "user", "Deploy it please.", metadata={"skip_extract": True})
    container.sessions.append(
        brain, session.id, "assistant", "The build failed again.", metadata={"skip_extract": True}
    )
    return session.id


def test_reflect_closes_the_session_and_writes_the_episode(
    container: Container, brain: Brain, reflector: FakeReflector
) -> None:
    reflector.draft = DRAFT
    session_id = conversation(container, brain)

    out = container.reflection.reflect(brain, session_id)

    assert out.attempted and out.session.status is SessionStatus.closed and out.session.ended_at
    r = out.reflection
    assert r.status is ReflectionStatus.completed and r.outcome == "failure" and r.should_record_episode
    assert r.path == episode_path(out.session)
    assert r.path.startswith("memory/agent/ops-bot/episodes/")
    assert r.retry_feedback == DRAFT.retry_feedback
    episode = container.documents.get(brain, r.path)
    assert episode.source is DocumentSource.reflect and episode.id == r.episode_id
    assert episode.memory is not None and episode.memory.sector == "episodic"
    assert episode.metadata["session_id"] == session_id
    body = container.documents.read(brain, r.path).decode()
    for part in (DRAFT.summary, "- Pinned numpy", DRAFT.retry_feedback, "Outcome: failure"):
        assert part in body
    assert reflector.calls == [("Deploy", ["Deploy it please.", "The build failed again."])]
    assert container.sessions.get(brain, session_id)[0].reflection == r


def test_reflecting_again_returns_the_stored_reflection_without_rerunning(
    container: Container, brain: Brain, reflector: FakeReflector
) -> None:
    reflector.draft = DRAFT
    session_id = conversation(container, brain)
    first = container.reflection.reflect(brain, session_id)
    again = container.reflection.reflect(brain, session_id)

    assert not again.attempted and again.reflection == first.reflection
    assert len(reflector.calls) == 1
    assert len(container.documents.documents(brain, "memory/")) == 1


def test_no_episode_when_not_worth_recording(
    container: Container, brain: Brain, reflector: FakeReflector
) -> None:
    reflector.draft = ReflectionDraft(outcome="informational", should_record_episode=False, summary="Hi.")
    out = container.reflection.reflect(brain, conversation(container, brain))

    assert out.reflection.status is ReflectionStatus.completed and not out.reflection.should_record_episode
    assert out.reflection.path and not container.documents.exists(brain, out.reflection.path)


def test_an_empty_session_has_no_result(container: Container, brain: Brain, reflector: FakeReflector) -> None:
    reflector.draft = DRAFT
    session = container.sessions.create(brain)
    out = container.reflection.reflect(brain, session.id)

    assert out.reflection.status is ReflectionStatus.no_result and out.attempted
    assert out.session.status is SessionStatus.closed
    assert container.documents.documents(brain) == []


def test_a_failed_reflection_writes_nothing_and_runs_again_next_time(
    container: Container, brain: Brain, reflector: FakeReflector
) -> None:
    reflector.fail_with = GenerationError("generation_timeout", "the model did not answer within 5 s")
    session_id = conversation(container, brain)

    out = container.reflection.reflect(brain, session_id)
    assert out.reflection.status is ReflectionStatus.failed and out.retryable
    assert out.reflection.error_code == "generation_timeout"
    assert out.session.status is SessionStatus.closed
    assert container.documents.documents(brain, "memory/") == []

    reflector.fail_with, reflector.draft = None, DRAFT
    retried = container.reflection.reflect(brain, session_id)
    assert retried.attempted and retried.reflection.status is ReflectionStatus.completed
    assert container.documents.exists(brain, retried.reflection.path or "")


def test_reflect_queues_extraction_of_messages_not_yet_covered(
    container: Container, brain: Brain, reflector: FakeReflector
) -> None:
    reflector.draft = DRAFT
    session = container.sessions.create(brain)
    container.sessions.append(brain, session.id, "user", "I use vim daily.", metadata={"skip_extract": True})
    container.reflection.reflect(brain, session.id)
    container.jobs.run_pending()

    facts = [d for d in container.documents.documents(brain, "memory/") if d.metadata.get("kind") == "fact"]
    assert [d.title for d in facts] == ["user said: I use vim daily."]


def test_an_unknown_session_is_not_found(container: Container, brain: Brain) -> None:
    with pytest.raises(NotFound):
        container.reflection.reflect(brain, "ses_missing")
