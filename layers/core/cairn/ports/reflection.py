"""Reflector: looks back over a finished session and says how it went and what to keep.

Adapters: rule-based (offline), any OpenAI-compatible chat model, Bedrock (AWS). Synchronous,
like FactExtractor. A model failure raises GenerationError (ports/generator.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cairn.ports.facts import Utterance


@dataclass(frozen=True)
class ReflectionDraft:
    outcome: str  # success | failure | partial | informational
    should_record_episode: bool  # worth an episode note (substance, a decision, a lesson)
    summary: str  # a few sentences, faithful to the session
    highlights: tuple[str, ...] = ()  # key points, decisions, open questions
    retry_feedback: str | None = None  # what to do differently next time, when something failed
    importance: float = 0.5  # 0..1


class Reflector(Protocol):
    @property
    def name(self) -> str: ...

    def reflect(self, title: str | None, utterances: Sequence[Utterance]) -> ReflectionDraft | None:
        """A reflection on the session, or None when there is nothing to reflect on."""
        ...
