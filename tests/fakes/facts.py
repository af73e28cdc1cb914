"""Fakes of FactExtractor and Reflector: predictable output, scripted failures, call counts."""

from __future__ import annotations

from collections.abc import Sequence

from cairn.domain.models import MemoryType
from cairn.ports.facts import FactDraft, Utterance
from cairn.ports.generator import GenerationError
from cairn.ports.reflection import ReflectionDraft


class FakeFactExtractor:
    """Every user/assistant sentence that starts with "I " becomes "<speaker> said: <sentence>"."""

    def __init__(self, fail_with: GenerationError | None = None) -> None:
        self.fail_with = fail_with
        self.calls: list[list[str]] = []

    @property
    def name(self) -> str:
        return "fake"

    def extract(self, utterances: Sequence[Utterance]) -> list[FactDraft]:
        self.calls.append([u.id for u in utterances])
        if self.fail_with is not None:
            raise self.fail_with
        out = []
        for u in utterances:
            if u.role not in ("user", "assistant"):
                continue
            for sentence in u.text.replace("!", ".").split("."):
                sentence = sentence.strip()
                if sentence.startswith("I "):
                    out.append(
                        FactDraft(
                            text=f"{u.speaker} said: {sentence}.",
                            source_ids=(u.id,),
                            type=MemoryType.fact,
                            category="personal",
                            subject=u.speaker,
                        )
                    )
        return out


class FakeReflector:
    """Returns `draft` (None: nothing to reflect on) or raises `fail_with`; records each call."""

    def __init__(
        self, draft: ReflectionDraft | None = None, fail_with: GenerationError | None = None
    ) -> None:
        self.draft = draft
        self.fail_with = fail_with
        self.calls: list[tuple[str | None, list[str]]] = []

    @property
    def name(self) -> str:
        return "fake"

    def reflect(self, title: str | None, utterances: Sequence[Utterance]) -> ReflectionDraft | None:
        self.calls.append((title, [u.text for u in utterances]))
        if self.fail_with is not None:
            raise self.fail_with
        return self.draft if utterances else None
