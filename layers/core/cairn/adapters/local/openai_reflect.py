"""Reflector over any OpenAI-compatible chat model (JSON mode, see openai_chat.py).

The model reads the session (its title, then one line per utterance) and returns the outcome, a
summary, highlights and what to do differently. Its reply is checked: an outcome outside
success|failure|partial|informational becomes informational, importance is clamped to 0..1, and
a reply without a summary is a bad_response. A session too long for one prompt keeps its
opening (where the task is usually stated) and as much of its end as fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from cairn.adapters.json_chat import JsonChat
from cairn.adapters.local.openai_facts import utterance_line
from cairn.ports.facts import Utterance
from cairn.ports.generator import GenerationError
from cairn.ports.reflection import ReflectionDraft

SYSTEM_PROMPT = """\
You look back over a finished session between a user and an AI agent and say how it went and
what is worth keeping. Return a JSON object with:
- outcome: "success" (what was set out to do got done), "failure" (it did not), "partial"
  (some of it), or "informational" (no task: a chat, questions and answers, an exchange of news).
- should_record_episode: true if the session has substance worth remembering later (a result,
  a decision, a lesson, a personal fact); false for small talk or a trivial exchange.
- summary: two to four sentences in the past tense, faithful to the session; invent nothing.
- highlights: up to five short key points, decisions or open questions.
- retry_feedback: when it failed or partly failed, what to do differently next time; else null.
- importance: from 0 (trivial) to 1 (essential to remember)."""

OUTCOMES = frozenset({"success", "failure", "partial", "informational"})
MAX_CHARS = 24_000
MAX_HIGHLIGHTS = 10


class _Reflection(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str
    outcome: str = "informational"
    should_record_episode: bool = False
    highlights: list[str] = []
    retry_feedback: str | None = None
    importance: float = 0.5

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, value: Any) -> Any:
        word = value.strip().lower() if isinstance(value, str) else ""
        return word if word in OUTCOMES else "informational"

    @field_validator("should_record_episode", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower() in ("true", "yes", "1")
        return value is True or value == 1

    @field_validator("highlights", mode="before")
    @classmethod
    def _highlights(cls, value: Any) -> Any:
        items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
        return [" ".join(h.split()) for h in items if isinstance(h, str) and h.strip()]

    @field_validator("retry_feedback", mode="before")
    @classmethod
    def _feedback(cls, value: Any) -> Any:
        return value.strip() or None if isinstance(value, str) else None

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: Any) -> Any:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return 0.5
        return 0.5 if math.isnan(number) else min(1.0, max(0.0, number))


class OpenAIReflector:
    def __init__(self, chat: JsonChat, *, max_chars: int = MAX_CHARS) -> None:
        self.chat = chat
        self.max_chars = max_chars

    @property
    def name(self) -> str:
        return f"{self.chat.provider}:{self.chat.model}"

    def reflect(self, title: str | None, utterances: Sequence[Utterance]) -> ReflectionDraft | None:
        spoken = [u for u in utterances if u.text.strip()]
        if not spoken:
            return None
        reply = self.chat.complete_json(SYSTEM_PROMPT, user_prompt(title, spoken, self.max_chars))
        try:
            parsed = _Reflection.model_validate(reply)
        except ValidationError:
            parsed = None
        if parsed is None or not parsed.summary.strip():
            raise GenerationError("bad_response", "the model's reflection does not follow the schema")
        return ReflectionDraft(
            outcome=parsed.outcome,
            should_record_episode=parsed.should_record_episode,
            summary=parsed.summary.strip(),
            highlights=tuple(parsed.highlights[:MAX_HIGHLIGHTS]),
            retry_feedback=parsed.retry_feedback,
            importance=parsed.importance,
        )


def user_prompt(title: str | None, utterances: Sequence[Utterance], max_chars: int) -> str:
    lines = [utterance_line(u, max_chars // 4) for u in utterances]
    kept = _fit(lines, max_chars)
    heading = f"Session: {title.strip()}\n\n" if title and title.strip() else ""
    return f"{heading}Transcript:\n" + "\n".join(kept)


def _fit(lines: list[str], max_chars: int) -> list[str]:
    """All lines if they fit; else the opening (up to a quarter of the budget) and the newest."""
    if sum(len(line) + 1 for line in lines) <= max_chars:
        return lines
    head: list[str] = []
    used = 0
    for line in lines:
        if head and used + len(line) > max_chars // 4:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if tail and used + len(line) > max_chars:
            break
        tail.append(line)
        used += len(line) + 1
    tail.reverse()
    omitted = len(lines) - len(head) - len(tail)
    return [*head, f"[… {omitted} messages omitted …]", *tail] if omitted else [*head, *tail]
