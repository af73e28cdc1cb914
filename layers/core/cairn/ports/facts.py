"""FactExtractor: memorable facts out of what people said, each traced to what it came from.

Adapters: rule-based (offline, the embedded default), any OpenAI-compatible chat model, Bedrock
(AWS). Extraction is synchronous: it runs inside a job's worker thread, never on a request path.

A fact is a short, self-contained statement in the third person ("Caroline moved from Sweden
four years ago"), so it still reads right when found on its own months later. Every fact names
the utterances it came from (`source_ids`, a non-empty subset of the input ids) and says nothing
its sources do not say. A model failure raises GenerationError (ports/generator.py); nothing is
returned half-done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from cairn.domain.models import MemoryType


@dataclass(frozen=True)
class Utterance:
    """One message or transcript turn offered to an extractor or reflector."""

    id: str
    speaker: str  # who said it: a person's name, or the role ("user", "assistant")
    role: str  # system | user | assistant | tool
    text: str
    said_at: datetime | None = None  # anchors relative dates ("yesterday", "next month")


@dataclass(frozen=True)
class FactDraft:
    text: str
    source_ids: tuple[str, ...]
    type: MemoryType = MemoryType.fact
    category: str = "fact"  # preference | plan | event | fact | relationship | ...
    subject: str | None = None  # whom the fact is about, when known
    entities: tuple[str, ...] = ()  # named people and places it mentions
    importance: float = 0.5  # 0..1


class FactExtractor(Protocol):
    @property
    def name(self) -> str:
        """Recorded as each fact's `extracted_by` ("rules", "openai:<model>", ...)."""
        ...

    def extract(self, utterances: Sequence[Utterance]) -> list[FactDraft]:
        """The memorable facts in `utterances` (possibly none). Raises GenerationError."""
        ...
