"""The FactExtractor and Reflector contract, on every adapter: rules, OpenAI-compatible (over a
scripted chat server that also cites an id it was never shown), and the fakes the unit tests use."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

from cairn.adapters.local.openai_chat import OpenAIChat
from cairn.adapters.local.openai_facts import OpenAIFactExtractor
from cairn.adapters.local.openai_reflect import OpenAIReflector
from cairn.adapters.local.rule_facts import RuleFactExtractor
from cairn.adapters.local.rule_reflect import RuleReflector
from cairn.domain.models import MemoryType
from cairn.ports.facts import FactExtractor, Utterance
from cairn.ports.reflection import ReflectionDraft, Reflector
from tests.fakes.facts import FakeFactExtractor, FakeReflector

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TALK = [
    Utterance("m1", "Caroline", "user", "I moved here from Sweden four years ago.", SAID),
    Utterance("m2", "Melanie", "assistant", "Wow! Do you miss it?", SAID),
    Utterance("m3", "Caroline", "user", "I went to a support group yesterday. I love painting.", SAID),
]
OUTCOMES = {"success", "failure", "partial", "informational"}


def _chat(reply: dict) -> OpenAIChat:
    def answer(_: httpx.Request) -> httpx.Response:
        body = {"choices": [{"message": {"content": json.dumps(reply)}, "finish_reason": "stop"}]}
        return httpx.Response(200, json=body)

    return OpenAIChat("http://model.test/v1", "m", transport=httpx.MockTransport(answer), max_retries=0)


FACTS_REPLY = {
    "facts": [
        {
            "text": "Caroline moved from Sweden four years before May 2023.",
            "source_ids": ["m1"],
            "type": "event",
        },
        {"text": "Caroline loves painting.", "source_ids": ["m3", "m9"], "importance": 3},
        {"text": "Someone invented this.", "source_ids": ["m9"]},
    ]
}
REFLECT_REPLY = {
    "outcome": "informational",
    "should_record_episode": True,
    "summary": "Caroline talked about moving from Sweden and a support group.",
    "highlights": ["Moved from Sweden"],
    "importance": 0.6,
}

EXTRACTORS: dict[str, Callable[[], FactExtractor]] = {
    "rules": RuleFactExtractor,
    "openai": lambda: OpenAIFactExtractor(_chat(FACTS_REPLY)),
    "fake": FakeFactExtractor,
}
REFLECTORS: dict[str, Callable[[], Reflector]] = {
    "rules": RuleReflector,
    "openai": lambda: OpenAIReflector(_chat(REFLECT_REPLY)),
    "fake": lambda: FakeReflector(ReflectionDraft("informational", True, "Caroline talked about Sweden.")),
}


@pytest.fixture(params=sorted(EXTRACTORS))
def extractor(request: pytest.FixtureRequest) -> FactExtractor:
    return EXTRACTORS[request.param]()


@pytest.fixture(params=sorted(REFLECTORS))
def reflector(request: pytest.FixtureRequest) -> Reflector:
    return REFLECTORS[request.param]()


def test_every_fact_is_traced_to_utterances_it_was_given(extractor: FactExtractor) -> None:
    drafts = extractor.extract(TALK)
    assert drafts, "a first-person statement of fact yields at least one fact"
    ids = {u.id for u in TALK}
    for d in drafts:
        assert d.text.strip() and d.source_ids and set(d.source_ids) <= ids, d
        assert isinstance(d.type, MemoryType) and 0.0 <= d.importance <= 1.0, d
    assert extractor.name


def test_facts_are_not_repeated_within_one_call(extractor: FactExtractor) -> None:
    texts = [d.text for d in extractor.extract(TALK)]
    assert len(texts) == len(set(texts))


def test_the_rule_extractor_finds_nothing_in_nothing() -> None:
    assert RuleFactExtractor().extract([]) == []
    assert FakeFactExtractor().extract([]) == []


def test_a_reflection_is_one_of_the_outcomes_with_a_summary(reflector: Reflector) -> None:
    draft = reflector.reflect("Catch-up", TALK)
    assert draft is not None and draft.outcome in OUTCOMES
    assert draft.summary.strip() and 0.0 <= draft.importance <= 1.0
    assert reflector.name


def test_nothing_to_reflect_on_is_none(reflector: Reflector) -> None:
    assert reflector.reflect(None, []) is None
