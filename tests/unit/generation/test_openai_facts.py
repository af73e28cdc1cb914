"""OpenAIFactExtractor against a scripted chat server: prompt, validation of the reply, batching."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from cairn.adapters.local.openai_chat import OpenAIChat
from cairn.adapters.local.openai_facts import SYSTEM_PROMPT, OpenAIFactExtractor
from cairn.domain.models import MemoryType
from cairn.ports.facts import FactDraft, Utterance
from cairn.ports.generator import GenerationError
from tests.unit.generation.helpers import SECRET, Server

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TALK = [
    Utterance("D1:1", "Caroline", "user", "I moved here from Sweden four years ago.", MAY_8),
    Utterance("D1:2", "Melanie", "assistant", "Wow! Do you miss it?", MAY_8),
    Utterance("D1:3", "Caroline", "user", "Yesterday I went to an LGBTQ support group.", MAY_8),
]


def replying(payload: Any) -> httpx.Response:
    content = payload if isinstance(payload, str) else json.dumps(payload)
    return httpx.Response(200, json={"choices": [{"message": {"content": content}, "finish_reason": "stop"}]})


def extractor(
    server: Server | Callable[[httpx.Request], httpx.Response], **kwargs: Any
) -> OpenAIFactExtractor:
    chat = OpenAIChat(
        "http://model.test/v1",
        "test-model",
        api_key=SECRET,
        transport=httpx.MockTransport(server),
        max_retries=0,
        sleep=lambda _: None,
    )
    return OpenAIFactExtractor(chat, **kwargs)


def user_prompt(server: Server, i: int = -1) -> str:
    system, user = server.body(i)["messages"]
    assert system["content"] == SYSTEM_PROMPT
    content: str = user["content"]
    return content


def fact(text: str, *sources: Any, **fields: Any) -> dict[str, Any]:
    return {"text": text, "source_ids": list(sources), **fields}


def test_turns_the_reply_into_fact_drafts_named_after_the_model() -> None:
    server = Server(
        replying(
            {
                "facts": [
                    fact(
                        "Caroline moved from Sweden four years before May 2023.",
                        "D1:1",
                        type="event",
                        category="Relationship ",
                        subject="Caroline",
                        entities=["Caroline", "Sweden", " ", "Sweden"],
                        importance=0.8,
                    ),
                    fact("Caroline went to an LGBTQ support group on 7 May 2023.", "D1:3"),
                ]
            }
        )
    )
    ex = extractor(server)
    facts = ex.extract(TALK)
    assert ex.name == "openai:test-model"
    assert facts == [
        FactDraft(
            text="Caroline moved from Sweden four years before May 2023.",
            source_ids=("D1:1",),
            type=MemoryType.event,
            category="relationship",
            subject="Caroline",
            entities=("Caroline", "Sweden"),
            importance=0.8,
        ),
        FactDraft(text="Caroline went to an LGBTQ support group on 7 May 2023.", source_ids=("D1:3",)),
    ]


def test_the_prompt_gives_each_utterance_its_id_speaker_role_and_date() -> None:
    server = Server(replying({"facts": []}))
    assert extractor(server).extract(TALK) == []
    prompt = user_prompt(server)
    assert "[D1:1] 2023-05-08 13:56 UTC, Caroline (user): I moved here from Sweden four years ago." in prompt
    assert "[D1:2] 2023-05-08 13:56 UTC, Melanie (assistant): Wow! Do you miss it?" in prompt
    assert "Earlier" not in prompt


def test_a_speaker_who_is_only_a_role_and_an_undated_turn_read_plainly() -> None:
    server = Server(replying({"facts": []}))
    extractor(server).extract([Utterance("m1", "user", "user", "I prefer\n\n  dark   roast.")])
    assert user_prompt(server).endswith("[m1] user: I prefer dark roast.")


def test_source_ids_are_checked_against_the_input() -> None:
    server = Server(
        replying(
            {
                "facts": [
                    fact("Invented from nowhere.", "D9:9"),
                    fact("Caroline is from Sweden.", "D9:9", "[D1:1]", "D1:1"),
                    fact("No sources at all."),
                    {"text": "A single id as a string.", "source_ids": "D1:3"},
                ]
            }
        )
    )
    facts = extractor(server).extract(TALK)
    assert [(f.text, f.source_ids) for f in facts] == [
        ("Caroline is from Sweden.", ("D1:1",)),
        ("A single id as a string.", ("D1:3",)),
    ]


def test_importance_is_clamped_and_unknown_types_become_fact() -> None:
    server = Server(
        replying(
            {
                "facts": [
                    fact("A.", "D1:1", importance=1.7, type="Decision"),
                    fact("B.", "D1:1", importance=-2, type="opinion"),
                    fact("C.", "D1:1", importance="high", type=None, category=["x"]),
                    fact("D.", "D1:1", importance="0.3", type="STATUS", subject=""),
                ]
            }
        )
    )
    facts = extractor(server).extract(TALK)
    assert [(f.importance, f.type, f.category, f.subject) for f in facts] == [
        (1.0, MemoryType.decision, "fact", None),
        (0.0, MemoryType.fact, "fact", None),
        (0.5, MemoryType.fact, "fact", None),
        (0.3, MemoryType.status, "fact", None),
    ]


def test_malformed_facts_are_dropped_when_others_are_fine() -> None:
    server = Server(replying({"facts": ["just a string", {"source_ids": ["D1:1"]}, fact("Kept.", "D1:1")]}))
    assert [f.text for f in extractor(server).extract(TALK)] == ["Kept."]


@pytest.mark.parametrize(
    "payload",
    [
        "Caroline is from Sweden.",
        {"memories": [fact("Caroline is from Sweden.", "D1:1")]},
        {"facts": "none"},
        {"facts": ["Caroline is from Sweden.", {"text": 5}]},
    ],
)
def test_a_reply_off_the_schema_is_a_bad_response(payload: Any) -> None:
    with pytest.raises(GenerationError) as caught:
        extractor(Server(replying(payload))).extract(TALK)
    assert caught.value.code == "bad_response"


def test_model_failures_propagate() -> None:
    server = Server(httpx.Response(503, text="loading model"))
    with pytest.raises(GenerationError) as caught:
        extractor(server).extract(TALK)
    assert (caught.value.code, caught.value.retryable) == ("generation_failed", True)


def test_nothing_to_read_means_no_request() -> None:
    server = Server(replying({"facts": []}))
    assert extractor(server).extract([]) == []
    assert extractor(server).extract([Utterance("m1", "user", "user", "   ")]) == []
    assert server.requests == []


def test_long_conversations_go_in_batches_with_context_and_their_facts_are_concatenated() -> None:
    # Given 130 utterances and a model that cites each batch's first id and the line before it
    talk = [Utterance(f"m{i}", "Ann", "user", f"Note number {i}.") for i in range(130)]
    prompts: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        user = json.loads(request.content)["messages"][1]["content"]
        prompts.append(user)
        first = user.split("Conversation:\n[", 1)[1].split("]", 1)[0]
        before = f"m{int(first[1:]) - 1}"
        facts = [fact(f"Ann wrote {first}.", first), fact("Ann keeps notes.", first), fact("Ctx.", before)]
        return replying({"facts": facts})

    facts = extractor(model).extract(talk)
    # Then batches of 60, 60 and 10; a repeated fact is kept once; a context line is no source
    assert [f.text for f in facts] == [
        "Ann wrote m0.",
        "Ann keeps notes.",
        "Ann wrote m60.",
        "Ann wrote m120.",
    ]
    assert [p.count("\n[m") for p in prompts] == [60, 60, 10]
    assert "Earlier" not in prompts[0]
    assert "Earlier (context only):\nAnn (user): Note number 57." in prompts[1]
    assert "[m59]" not in prompts[1] and "Ann (user): Note number 59." in prompts[1]


def test_batches_also_respect_a_character_budget() -> None:
    talk = [Utterance(f"m{i}", "Ann", "user", "x" * 10_000) for i in range(5)]
    server = Server(replying({"facts": []}))
    extractor(server, max_batch_chars=24_000).extract(talk)
    assert [user_prompt(server, i).count("\n[m") for i in range(len(server.requests))] == [2, 2, 1]


def test_an_oversized_utterance_is_truncated_in_the_prompt() -> None:
    server = Server(replying({"facts": []}))
    extractor(server, max_batch_chars=1_000).extract([Utterance("big", "Ann", "user", "y" * 50_000)])
    assert len(user_prompt(server)) < 1_200
