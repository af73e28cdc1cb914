"""Generator contract: what every adapter's stream promises the ask service.

Adapters: the extractive generator, and the OpenAI-compatible one talking (through
httpx.MockTransport) to a scripted model that quotes the passages it is given and cites them [n].
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass

import httpx
import pytest

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.adapters.local.openai_compat import OpenAICompatGenerator
from cairn.ports.generator import Citation, Delta, Done, GenerationEvent, Generator, Passage, collect
from tests.contract.aws_bedrock import bedrock_generator

pytestmark = pytest.mark.anyio

PASSAGES = [
    Passage(
        "chk_run", "doc_run", "## Saturday\n\nI finished the 10k route in under 55 minutes. It rained.", 0.9
    ),
    Passage("chk_tea", "doc_tea", "Bob prefers green tea in the morning. He drinks coffee at night.", 0.5),
    Passage("chk_car", "doc_car", "The car needs new tyres before the trip to Lyon in June.", 0.2),
]
QUESTION = "How long did the 10k route take to finish?"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def scripted_model(request: httpx.Request) -> httpx.Response:
    """An OpenAI-compatible server: quotes the first sentence of the first two passages, cites them."""
    prompt = json.loads(request.content)["messages"][-1]["content"]
    passages = re.findall(r"^\[(\d+)\] (.+?)(?:\n\n|\Z)", prompt, re.M | re.S)
    answer = " ".join(
        f"{text.strip().splitlines()[-1].split('. ')[0].rstrip('.')} [{n}]." for n, text in passages[:2]
    )
    pieces = [answer[i : i + 7] for i in range(0, len(answer), 7)]
    body = _frame({"role": "assistant"}) + "".join(_frame({"content": p}) for p in pieces)
    body += _frame({}, "stop") + "data: [DONE]\n\n"
    return httpx.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})


def _frame(delta: dict[str, str], finish: str | None = None) -> str:
    return "data: " + json.dumps({"choices": [{"delta": delta, "finish_reason": finish}]}) + "\n\n"


@dataclass
class Subject:
    generator: Generator
    quotes_are_answer_spans: bool  # extractive answers are their quotes


@contextmanager
def _bedrock(request: pytest.FixtureRequest) -> Iterator[Subject]:
    with bedrock_generator(request) as generator:
        yield Subject(generator, False)


ADAPTERS: dict[str, Callable[[pytest.FixtureRequest], AbstractContextManager[Subject]]] = {
    "extractive": lambda _: nullcontext(Subject(ExtractiveGenerator(), True)),
    "openai": lambda _: nullcontext(
        Subject(
            OpenAICompatGenerator(
                "http://model.test/v1", "scripted-model", transport=httpx.MockTransport(scripted_model)
            ),
            False,
        )
    ),
    "bedrock": _bedrock,
}


@pytest.fixture(params=list(ADAPTERS))
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    with ADAPTERS[request.param](request) as made:
        yield made


async def run(generator: Generator, passages: list[Passage]) -> list[tuple[GenerationEvent, str]]:
    """Every event with the answer accumulated when it arrived."""
    seen, answer = [], ""
    async for event in generator.stream(QUESTION, passages):
        if isinstance(event, Delta):
            answer += event.text
        seen.append((event, answer))
    return seen


async def test_deltas_concatenate_to_the_answer_and_done_comes_once_last(subject: Subject) -> None:
    events = await run(subject.generator, PASSAGES)
    kinds = [type(e) for e, _ in events]
    assert kinds.count(Done) == 1 and kinds[-1] is Done
    done = events[-1][0]
    assert isinstance(done, Done)
    assert done.answer == events[-1][1] != ""
    assert done.model == subject.generator.model_id
    assert sum(isinstance(e, Delta) for e, _ in events) >= 2  # really streamed


async def test_citations_point_inside_the_answer_already_streamed(subject: Subject) -> None:
    events = await run(subject.generator, PASSAGES)
    citations = [(e, seen) for e, seen in events if isinstance(e, Citation)]
    assert citations
    for citation, seen in citations:
        assert 0 <= citation.answer_start < citation.answer_end <= len(seen)
        assert seen[citation.answer_start : citation.answer_end].strip()
        if subject.quotes_are_answer_spans:
            assert seen[citation.answer_start : citation.answer_end] == citation.quote


async def test_citations_reference_only_given_passages_and_quote_them(subject: Subject) -> None:
    answer = await subject.generator.complete(QUESTION, PASSAGES)
    given = {(p.chunk_id, p.document_id): p.text for p in PASSAGES}
    assert answer.citations
    for citation in answer.citations:
        assert (citation.chunk_id, citation.document_id) in given
        assert citation.quote and citation.quote in given[(citation.chunk_id, citation.document_id)]
    assert "chk_run" in {c.chunk_id for c in answer.citations}


async def test_no_passages_gives_an_answer_without_citations(subject: Subject) -> None:
    events = await run(subject.generator, [])
    assert not any(isinstance(e, Citation) for e, _ in events)
    done = events[-1][0]
    assert isinstance(done, Done) and done.answer == events[-1][1]
    assert "no supporting memory" in done.answer.lower()


async def test_complete_is_the_collected_stream(subject: Subject) -> None:
    streamed = await collect(subject.generator.stream(QUESTION, PASSAGES))
    completed = await subject.generator.complete(QUESTION, PASSAGES)
    assert completed == streamed
    assert completed.model == subject.generator.model_id
