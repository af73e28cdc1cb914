"""OpenAIReflector against a scripted chat server: prompt, validation of the reply, long sessions."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from cairn.adapters.local.openai_chat import OpenAIChat
from cairn.adapters.local.openai_reflect import SYSTEM_PROMPT, OpenAIReflector
from cairn.ports.facts import Utterance
from cairn.ports.generator import GenerationError
from cairn.ports.reflection import ReflectionDraft
from tests.unit.generation.helpers import SECRET, Server

SESSION = [
    Utterance("m1", "user", "user", "Deploy the billing service to staging."),
    Utterance("m2", "assistant", "assistant", "The deploy failed: the migration lock was held."),
    Utterance("m3", "user", "user", "Release the lock first next time."),
]
SUMMARY = "The agent tried to deploy billing to staging; the migration lock blocked it."
GOOD = {
    "outcome": "failure",
    "should_record_episode": True,
    "summary": SUMMARY,
    "highlights": ["Deploy blocked by a held migration lock"],
    "retry_feedback": "Release the migration lock before deploying.",
    "importance": 0.7,
}


def replying(payload: Any) -> httpx.Response:
    content = payload if isinstance(payload, str) else json.dumps(payload)
    return httpx.Response(200, json={"choices": [{"message": {"content": content}, "finish_reason": "stop"}]})


def reflector(server: Server, **kwargs: Any) -> OpenAIReflector:
    chat = OpenAIChat(
        "http://model.test/v1",
        "test-model",
        api_key=SECRET,
        transport=httpx.MockTransport(server),
        max_retries=0,
        sleep=lambda _: None,
    )
    return OpenAIReflector(chat, **kwargs)


def user_prompt(server: Server) -> str:
    system, user = server.body()["messages"]
    assert system["content"] == SYSTEM_PROMPT
    content: str = user["content"]
    return content


def test_turns_the_reply_into_a_reflection() -> None:
    server = Server(replying(GOOD))
    r = reflector(server)
    draft = r.reflect("Billing deploy", SESSION)
    assert r.name == "openai:test-model"
    assert draft == ReflectionDraft(
        outcome="failure",
        should_record_episode=True,
        summary=SUMMARY,
        highlights=("Deploy blocked by a held migration lock",),
        retry_feedback="Release the migration lock before deploying.",
        importance=0.7,
    )
    prompt = user_prompt(server)
    assert prompt.startswith("Session: Billing deploy\n\nTranscript:\n[m1] user: Deploy the billing")
    assert "[m2] assistant: The deploy failed" in prompt


def test_a_fenced_reply_is_read_too() -> None:
    server = Server(replying("```json\n" + json.dumps(GOOD) + "\n```"))
    draft = reflector(server).reflect(None, SESSION)
    assert draft is not None and draft.outcome == "failure"
    assert user_prompt(server).startswith("Transcript:\n")


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [("SUCCESS", "success"), (" partial ", "partial"), ("mixed", "informational"), (None, "informational")],
)
def test_outcome_is_limited_to_the_four_known_ones(outcome: Any, expected: str) -> None:
    draft = reflector(Server(replying({**GOOD, "outcome": outcome}))).reflect(None, SESSION)
    assert draft is not None and draft.outcome == expected


def test_loose_fields_are_normalised() -> None:
    reply = {
        "summary": "  A chat about tea.  ",
        "should_record_episode": "yes",
        "highlights": "Bob likes green tea",
        "retry_feedback": "   ",
        "importance": 3,
    }
    draft = reflector(Server(replying(reply))).reflect(None, SESSION)
    assert draft == ReflectionDraft(
        outcome="informational",
        should_record_episode=True,
        summary="A chat about tea.",
        highlights=("Bob likes green tea",),
        retry_feedback=None,
        importance=1.0,
    )


def test_no_utterances_means_no_reflection_and_no_request() -> None:
    server = Server(replying(GOOD))
    assert reflector(server).reflect("t", []) is None
    assert reflector(server).reflect("t", [Utterance("m1", "user", "user", "  \n")]) is None
    assert server.requests == []


@pytest.mark.parametrize(
    "payload",
    [
        "The session went fine.",
        {"outcome": "success"},
        {**GOOD, "summary": "   "},
        {**GOOD, "summary": ["a", "list"]},
    ],
)
def test_a_reply_off_the_schema_is_a_bad_response(payload: Any) -> None:
    with pytest.raises(GenerationError) as caught:
        reflector(Server(replying(payload))).reflect(None, SESSION)
    assert caught.value.code == "bad_response"


def test_rate_limits_propagate_as_generation_errors() -> None:
    server = Server(httpx.Response(429, json={"error": {"message": "quota"}}))
    with pytest.raises(GenerationError) as caught:
        reflector(server).reflect(None, SESSION)
    assert (caught.value.code, caught.value.retryable) == ("rate_limited", True)


def test_a_long_session_keeps_its_opening_and_its_end() -> None:
    # Given 400 turns of about 100 characters, four times the prompt budget
    turns = [Utterance(f"m{i}", "user", "user", f"turn {i:03d} " + "z" * 90) for i in range(400)]
    server = Server(replying(GOOD))
    reflector(server, max_chars=10_000).reflect("Long", turns)
    prompt = user_prompt(server)
    assert len(prompt) <= 10_500
    assert "[m0] user: turn 000" in prompt and "[m399] user: turn 399" in prompt
    assert "[m200]" not in prompt and "messages omitted" in prompt
    kept = prompt.count("\n[m")
    assert f"[… {400 - kept} messages omitted …]" in prompt
