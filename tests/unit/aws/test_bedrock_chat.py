"""BedrockChat through botocore's Stubber, and the OpenAI fact extractor and reflector running on it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from cairn.adapters.aws.bedrock_chat import BedrockChat
from cairn.adapters.local.openai_facts import SYSTEM_PROMPT as FACTS_PROMPT
from cairn.adapters.local.openai_facts import OpenAIFactExtractor
from cairn.adapters.local.openai_reflect import OpenAIReflector
from cairn.adapters.retrying import RetryPolicy
from cairn.ports.facts import Utterance
from cairn.ports.generator import GenerationError
from tests.contract.aws_bedrock import ACCESS_KEY, SECRET_KEY, bedrock_client

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


class Sleeps:
    def __init__(self) -> None:
        self.seen: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


@pytest.fixture
def client() -> Any:
    return bedrock_client()


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def chat(client: Any, sleeps: Sleeps) -> BedrockChat:
    return BedrockChat(client, MODEL, retry=RetryPolicy(max_retries=2, sleep=sleeps))


def reply(text: str | Any, stop: str = "end_turn", *blocks: dict[str, Any]) -> dict[str, Any]:
    content = [*blocks, {"text": text if isinstance(text, str) else json.dumps(text)}]
    usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": usage,
        "metrics": {"latencyMs": 12},
    }


def test_asks_at_temperature_zero_and_parses_a_fenced_reply(chat: BedrockChat, stubber: Stubber) -> None:
    expected = {
        "modelId": MODEL,
        "system": [{"text": "Reply in JSON."}],
        "messages": [{"role": "user", "content": [{"text": "Say ok."}]}],
        "inferenceConfig": {"temperature": 0, "maxTokens": 4096},
    }
    stubber.add_response("converse", reply('Sure!\n```json\n{"ok": true}\n```'), expected)
    assert chat.complete_json("Reply in JSON.", "Say ok.") == {"ok": True}
    assert chat.model == chat.model_id == MODEL


def test_reads_only_the_text_blocks(chat: BedrockChat, stubber: Stubber) -> None:
    thinking = {"reasoningContent": {"reasoningText": {"text": "{not this}"}}}
    stubber.add_response("converse", reply({"a": 1}, "end_turn", thinking))
    assert chat.complete_json("s", "u") == {"a": 1}


def test_a_reply_that_is_not_json_is_a_bad_response(chat: BedrockChat, stubber: Stubber) -> None:
    stubber.add_response("converse", reply("I would rather not."))
    with pytest.raises(GenerationError, match="not a JSON object") as caught:
        chat.complete_json("s", "u")
    assert (caught.value.code, caught.value.retryable) == ("bad_response", False)


def test_a_reply_cut_at_the_token_limit_says_so(chat: BedrockChat, stubber: Stubber) -> None:
    stubber.add_response("converse", reply('{"facts": [{"text": "Caro', "max_tokens"))
    with pytest.raises(GenerationError, match="cut off at the token limit"):
        chat.complete_json("s", "u")


def test_a_reply_without_text_is_a_bad_response(chat: BedrockChat, stubber: Stubber) -> None:
    empty = reply("")
    empty["output"]["message"]["content"] = [{"reasoningContent": {"reasoningText": {"text": "hmm"}}}]
    stubber.add_response("converse", empty)
    with pytest.raises(GenerationError, match="without text"):
        chat.complete_json("s", "u")


def test_throttling_is_retried_then_answers(chat: BedrockChat, stubber: Stubber, sleeps: Sleeps) -> None:
    stubber.add_client_error("converse", "ThrottlingException", "slow down", 429)
    stubber.add_client_error("converse", "ServiceUnavailableException", "busy", 503)
    stubber.add_response("converse", reply({"ok": 1}))
    assert chat.complete_json("s", "u") == {"ok": 1}
    assert len(sleeps.seen) == 2


@pytest.mark.parametrize(
    ("code", "expected", "retryable"),
    [
        ("ModelTimeoutException", "generation_timeout", True),
        ("ValidationException", "generation_failed", False),
        ("AccessDeniedException", "generation_failed", False),
    ],
)
def test_other_errors_are_not_retried(
    chat: BedrockChat, stubber: Stubber, sleeps: Sleeps, code: str, expected: str, retryable: bool
) -> None:
    stubber.add_client_error("converse", code, "no", 400)
    with pytest.raises(GenerationError) as caught:
        chat.complete_json("s", "u")
    assert (caught.value.code, caught.value.retryable) == (expected, retryable) and sleeps.seen == []


def test_retries_run_out_as_a_rate_limit(chat: BedrockChat, stubber: Stubber, sleeps: Sleeps) -> None:
    for _ in range(3):
        stubber.add_client_error("converse", "ThrottlingException", "slow down", 429)
    with pytest.raises(GenerationError) as caught:
        chat.complete_json("s", "u")
    assert (caught.value.code, caught.value.retryable) == ("rate_limited", True) and len(sleeps.seen) == 2


def test_errors_carry_no_secrets_prompt_or_botocore_chain(chat: BedrockChat, stubber: Stubber) -> None:
    stubber.add_client_error("converse", "UnrecognizedClientException", f"Bad key {ACCESS_KEY}", 403)
    with pytest.raises(GenerationError) as caught:
        chat.complete_json("s", "my private transcript")
    for leak in (ACCESS_KEY, SECRET_KEY, "private transcript"):
        assert leak not in str(caught.value) and leak not in repr(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None


# -- the distillers written for OpenAIChat, on Bedrock -------------------------------------------

TALK = [
    Utterance("D1:1", "Caroline", "user", "I moved here from Sweden four years ago."),
    Utterance("D1:2", "Melanie", "assistant", "Wow! Do you miss it?"),
]


def test_the_fact_extractor_runs_on_bedrock(chat: BedrockChat, stubber: Stubber) -> None:
    facts = {"facts": [{"text": "Caroline moved from Sweden.", "source_ids": ["D1:1"], "importance": 0.8}]}
    stubber.add_response("converse", reply(f"```json\n{json.dumps(facts)}\n```"))
    extractor = OpenAIFactExtractor(chat)  # type: ignore[arg-type]  # typed as OpenAIChat today
    drafts = extractor.extract(TALK)
    assert [(d.text, d.source_ids) for d in drafts] == [("Caroline moved from Sweden.", ("D1:1",))]
    assert extractor.name == f"bedrock:{MODEL}"


def test_the_fact_extractor_sends_its_own_prompt(client: Any, stubber: Stubber, chat: BedrockChat) -> None:
    def check(params: dict[str, Any]) -> None:
        assert params["system"] == [{"text": FACTS_PROMPT}]
        assert "[D1:1]" in params["messages"][0]["content"][0]["text"]

    client.meta.events.register(
        "before-parameter-build.bedrock-runtime.Converse", lambda params, **_: check(params)
    )
    stubber.add_response("converse", reply({"facts": []}))
    assert OpenAIFactExtractor(chat).extract(TALK) == []  # type: ignore[arg-type]


def test_the_reflector_runs_on_bedrock(chat: BedrockChat, stubber: Stubber) -> None:
    good = {
        "outcome": "success",
        "should_record_episode": True,
        "summary": "Caroline told Melanie she moved from Sweden.",
        "highlights": ["Moved from Sweden"],
        "retry_feedback": None,
        "importance": 0.4,
    }
    stubber.add_response("converse", reply(good))
    draft = OpenAIReflector(chat).reflect("Catch-up", TALK)  # type: ignore[arg-type]
    assert draft is not None and draft.summary == good["summary"] and draft.outcome == "success"
