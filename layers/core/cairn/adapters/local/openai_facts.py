"""FactExtractor over any OpenAI-compatible chat model (JSON mode, see openai_chat.py).

The model sees the utterances one per line, each under its id, with speaker, role and date, and
returns {"facts": [...]}. Its reply is checked, not trusted: a fact keeps only the source ids that
were offered (a fact left with none is dropped), importance is clamped to 0..1 and an unknown
type becomes "fact". A reply that is not JSON, or not this schema at all, is a bad_response.
Long inputs go in batches; each batch after the first is preceded by the few utterances before
it, for context only (so "she" and "that trip" still resolve).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from cairn.adapters.json_chat import JsonChat
from cairn.domain.models import MemoryType
from cairn.ports.facts import FactDraft, Utterance
from cairn.ports.generator import GenerationError

SYSTEM_PROMPT = """\
You extract memorable facts from a conversation, for a long-term memory.

Each utterance is one line: [id] date, speaker (role): text. Return a JSON object
{"facts": [{"text": ..., "source_ids": [...], "type": ..., "category": ..., "subject": ...,
"entities": [...], "importance": ...}]} with:
- text: one short, self-contained statement in the third person that names who it is about
  ("Caroline moved from Sweden four years ago"). Turn relative dates ("yesterday", "next
  month") into dates, using the date of the utterance. Say nothing the utterances do not say.
- source_ids: the ids of the utterances that state it, exactly as shown in brackets.
- type: "fact", "event", "decision", "status" or "note".
- category: one word such as preference, plan, event, fact, relationship, goal, skill, health.
- subject: the person or thing it is about, or null.
- entities: the named people, places and organisations it mentions.
- importance: from 0 (trivia) to 1 (essential to remember).
Keep facts about people, their lives, preferences, plans, decisions and relationships; skip
greetings, small talk and questions. Lines under "Earlier" are context only: take no facts
from them. If nothing is worth remembering, return {"facts": []}."""

MAX_BATCH_UTTERANCES = 60
MAX_BATCH_CHARS = 24_000
CONTEXT_UTTERANCES = 3


class _Fact(BaseModel):
    """One fact as a model writes it: lenient about form, strict about meaning."""

    model_config = ConfigDict(extra="ignore")

    text: str
    source_ids: list[str]
    type: str = "fact"
    category: str | None = None
    subject: str | None = None
    entities: list[str] = []
    importance: float = 0.5

    @field_validator("source_ids", "entities", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        return [str(v).strip().strip("[]").strip() if isinstance(v, str | int) else v for v in items]

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> Any:
        return value if isinstance(value, str) else "fact"

    @field_validator("category", "subject", mode="before")
    @classmethod
    def _optional_text(cls, value: Any) -> Any:
        return value if isinstance(value, str) else None

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: Any) -> Any:
        try:
            return float(value)
        except (TypeError, ValueError):
            return 0.5


class OpenAIFactExtractor:
    def __init__(
        self,
        chat: JsonChat,
        *,
        max_batch_utterances: int = MAX_BATCH_UTTERANCES,
        max_batch_chars: int = MAX_BATCH_CHARS,
    ) -> None:
        self.chat = chat
        self.max_batch_utterances = max_batch_utterances
        self.max_batch_chars = max_batch_chars

    @property
    def name(self) -> str:
        return f"{self.chat.provider}:{self.chat.model}"

    def extract(self, utterances: Sequence[Utterance]) -> list[FactDraft]:
        facts: list[FactDraft] = []
        seen: set[str] = set()
        start = 0
        for batch in batches(utterances, self.max_batch_utterances, self.max_batch_chars):
            context = utterances[max(0, start - CONTEXT_UTTERANCES) : start]
            start += len(batch)
            for fact in self._extract_batch(context, batch):
                if fact.text.casefold() not in seen:
                    seen.add(fact.text.casefold())
                    facts.append(fact)
        return facts

    def _extract_batch(self, context: Sequence[Utterance], batch: Sequence[Utterance]) -> list[FactDraft]:
        if not any(u.text.strip() for u in batch):
            return []
        reply = self.chat.complete_json(SYSTEM_PROMPT, user_prompt(context, batch, self.max_batch_chars))
        raw = reply.get("facts")
        if not isinstance(raw, list):
            raise GenerationError("bad_response", 'the model\'s reply has no "facts" list')
        parsed = [_parse(item) for item in raw]
        if raw and all(p is None for p in parsed):
            raise GenerationError("bad_response", "none of the model's facts follow the schema")
        offered = [u.id for u in batch]
        drafts = (_draft(p, offered) for p in parsed if p is not None)
        return [d for d in drafts if d is not None]


def user_prompt(context: Sequence[Utterance], batch: Sequence[Utterance], max_chars: int) -> str:
    parts = []
    if context:
        earlier = "\n".join(utterance_line(u, max_chars, with_id=False) for u in context)
        parts.append(f"Earlier (context only):\n{earlier}\n")
    lines = "\n".join(utterance_line(u, max_chars) for u in batch)
    parts.append(f"Conversation:\n{lines}")
    return "\n".join(parts)


def utterance_line(u: Utterance, max_chars: int, *, with_id: bool = True) -> str:
    """`[id] 2024-05-07 14:03 UTC, Caroline (user): text`, whitespace collapsed, text capped."""
    text = " ".join(u.text.split())
    if len(text) > max_chars:
        text = text[:max_chars] + " …"
    who = u.speaker if u.speaker == u.role else f"{u.speaker} ({u.role})"
    when = f"{u.said_at:%Y-%m-%d %H:%M %Z}".strip() + ", " if u.said_at else ""
    return (f"[{u.id}] " if with_id else "") + f"{when}{who}: {text}"


def batches(utterances: Sequence[Utterance], max_count: int, max_chars: int) -> Iterator[list[Utterance]]:
    """Consecutive runs of at most `max_count` utterances and about `max_chars` of text (never empty)."""
    batch: list[Utterance] = []
    size = 0
    for u in utterances:
        if batch and (len(batch) >= max_count or size + len(u.text) > max_chars):
            yield batch
            batch, size = [], 0
        batch.append(u)
        size += len(u.text)
    if batch:
        yield batch


def _parse(item: Any) -> _Fact | None:
    try:
        return _Fact.model_validate(item)
    except ValidationError:
        return None


def _draft(fact: _Fact, offered: Sequence[str]) -> FactDraft | None:
    text = " ".join(fact.text.split())
    known = set(offered)
    sources = tuple(dict.fromkeys(s for s in fact.source_ids if s in known))
    if not text or not sources:
        return None
    kind = fact.type.strip().lower()
    memory_type = MemoryType(kind) if kind in MemoryType.__members__ else MemoryType.fact
    entities = tuple(dict.fromkeys(e for e in (e.strip() for e in fact.entities) if e))
    return FactDraft(
        text=text,
        source_ids=sources,
        type=memory_type,
        category=(fact.category or "").strip().lower() or "fact",
        subject=(fact.subject or "").strip() or None,
        entities=entities,
        importance=_clamp(fact.importance),
    )


def _clamp(value: float) -> float:
    return 0.5 if math.isnan(value) else min(1.0, max(0.0, value))
