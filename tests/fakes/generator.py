"""A generator that plays back a script: events in order, and an exception where one is scripted.

ScriptedGenerator([Delta("Hi"), Done("Hi", "scripted")])           # a normal answer
ScriptedGenerator(GenerationError("generation_timeout", "slow"))     # fails at once
ScriptedGenerator([Delta("Par"), GenerationError("generation_failed", "boom")])  # fails mid-answer
ScriptedGenerator.answer("Alice ran 10k.", cite=passage)            # deltas, one citation, done
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import anyio.lowlevel

from cairn.ports.generator import Answer, Citation, Delta, Done, GenerationEvent, Passage, collect

Step = GenerationEvent | BaseException


class ScriptedGenerator:
    def __init__(self, script: Sequence[Step] | BaseException, *, model_id: str = "scripted") -> None:
        self.script: list[Step] = [script] if isinstance(script, BaseException) else list(script)
        self._model_id = model_id
        self.calls: list[tuple[str, list[Passage]]] = []  # (question, passages) per stream()

    @classmethod
    def answer(
        cls, text: str, *, cite: Passage | None = None, model_id: str = "scripted"
    ) -> ScriptedGenerator:
        """`text` a word per delta, then (with `cite`) one citation spanning all of it, then Done."""
        words = text.split(" ")
        steps: list[Step] = [Delta(w if i == 0 else " " + w) for i, w in enumerate(words)]
        if cite is not None:
            steps.append(Citation(cite.chunk_id, cite.document_id, 0, len(text), cite.text))
        steps.append(Done(text, model_id))
        return cls(steps, model_id=model_id)

    @property
    def model_id(self) -> str:
        return self._model_id

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        self.calls.append((question, list(passages)))
        for step in self.script:
            await anyio.lowlevel.checkpoint()
            if isinstance(step, BaseException):
                raise step
            yield step

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))
