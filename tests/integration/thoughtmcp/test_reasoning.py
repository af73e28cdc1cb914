"""The reasoning and metacognitive tools through the official MCP client: offline (rule-based and
saying so), with a user's memories as context, and against a loopback OpenAI-compatible server that
answers well, answers malformed JSON (repaired once, then a clear error) or fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cairn.bootstrap import build_container
from cairn.bootstrap.models import generator_for
from cairn.config import Settings
from tests.fakes.container import fake_adapters
from tests.integration.mcp.conftest import LiveServer, serving
from tests.integration.thoughtmcp.conftest import data, envelope, thought
from tests.support.loopback import Loopback

pytestmark = pytest.mark.anyio
PROBLEM = "Design the schema, then build the API and write tests"


async def test_every_reasoning_tool_offline_says_it_is_rule_based(live: LiveServer) -> None:
    calls: dict[str, dict[str, Any]] = {
        "think": {"problem": PROBLEM, "mode": "analytical", "context": {"goals": ["ship by Friday"]}},
        "think-parallel": {"problem": PROBLEM, "mode": "parallel"},
        "analyze": {"problem": "Why did the payments API fail every night after the deploy?"},
        "ponder": {"problem": PROBLEM, "timeout": 5000},
        "breakdown": {"problem": PROBLEM, "maxDepth": 2},
        "assess_confidence": {"reasoning": "Latency might drop 40% because the cache hit rate rose to 90%."},
        "detect_bias": {"reasoning": "We already spent $2M on this, so we can't stop now."},
        "detect_emotion": {"text": "I'm thrilled and so grateful the release went well!"},
        "evaluate": {"reasoning": "The cache helps because reads dominate.", "includeEmotion": True},
    }
    out: dict[str, Any] = {}
    async with thought(live) as t:
        for name, arguments in calls.items():
            result = await t.call_tool(name.split("-")[0], arguments)
            out[name] = envelope(result)
    for name, body in out.items():
        assert body["success"] is True, (name, body)
        assert body["data"]["method"] == "rule-based" and body["data"]["model"] is None, name
    think = out["think"]["data"]
    assert think["status"] == "completed" and all(isinstance(i, str) for i in think["insights"])
    assert think["memoriesUsed"] == []
    parallel = out["think-parallel"]["data"]
    assert {s for i in parallel["insights"] for s in i["sources"]} <= {
        "analytical",
        "creative",
        "critical",
        "synthetic",
    }
    assert isinstance(parallel["quality"], float) and all(
        isinstance(r["rationale"], str) for r in parallel["recommendations"]
    )
    assert out["analyze"]["data"]["framework"]["id"] == "root-cause-analysis"
    breakdown = out["breakdown"]["data"]
    assert [s["description"] for s in breakdown["subProblems"][1:]][:3] == [
        "Design the schema",
        "Build the API",
        "Write tests",
    ]
    assert breakdown["executionOrder"][0] == breakdown["subProblems"][0]["id"]
    confidence = out["assess_confidence"]
    assert set(confidence["data"]["dimensions"]) == {
        "evidenceQuality", "reasoningCoherence", "completeness", "uncertaintyLevel", "biasFreedom",
    }  # fmt: skip
    assert confidence["metadata"]["evidenceSource"] == "extracted"
    biases = out["detect_bias"]["data"]["biases"]
    assert biases[0]["type"] == "sunk_cost" and isinstance(biases[0]["correction"], str)
    discrete = out["detect_emotion"]["data"]["discrete"]
    assert (
        discrete["primary"] in ("joy", "gratitude")
        and out["detect_emotion"]["data"]["circumplex"]["valence"] > 0
    )
    assert {
        "quality",
        "strengths",
        "weaknesses",
        "recommendations",
        "confidence",
        "biases",
        "emotion",
    } <= set(out["evaluate"]["data"])


async def test_a_users_memories_inform_the_reasoning(live: LiveServer) -> None:
    async with thought(live) as t:
        data(
            await t.call_tool(
                "remember",
                {"content": "The API schema must keep backwards compatibility for mobile clients",
                 "userId": "alice", "sessionId": "s", "primarySector": "semantic"},
            )
        )  # fmt: skip
        with_memories = data(
            await t.call_tool("think", {"problem": PROBLEM, "mode": "critical", "userId": "alice"})
        )
        nobody = data(await t.call_tool("think", {"problem": PROBLEM, "mode": "critical", "userId": "bob"}))
    used = with_memories["memoriesUsed"]
    assert [m["content"] for m in used] == [
        "The API schema must keep backwards compatibility for mobile clients"
    ]
    assert (
        set(used[0]) == {"id", "content", "primarySector", "relevanceScore"} and nobody["memoriesUsed"] == []
    )


# -- a model behind an OpenAI-compatible API ----------------------------------------------------


class ChatModel(BaseHTTPRequestHandler):
    """/v1/chat/completions answering the next scripted reply (text, or an HTTP status)."""

    replies: ClassVar[list[str | int]] = []
    prompts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).prompts.append(json.dumps(sent["messages"]))
        reply = type(self).replies.pop(0) if type(self).replies else 500
        if isinstance(reply, int):
            self.send_response(reply)
            self.end_headers()
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
        body = json.dumps(
            {"id": "c", "object": "chat.completion", "model": "llama-test", "choices": [choice]}
        )
        body_bytes = body.encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body_bytes)))
        self.end_headers()
        self.wfile.write(body_bytes)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def model_live(tmp_path: Path) -> Iterator[LiveServer]:
    server = Loopback(ChatModel)
    server.start()
    ChatModel.replies, ChatModel.prompts = [], []
    settings = Settings(
        data_dir=tmp_path / "data",
        generator="openai",
        generator_base_url=f"{server.base}/v1",
        generator_model="llama-test",
        generator_max_retries=0,
        generator_timeout_s=10,
    )
    container = build_container(settings, replace(fake_adapters(), generator=generator_for(settings)))
    try:
        yield from serving(container, tmp_path, tmp_path / "data")
    finally:
        server.stop()


GOOD_THINK = json.dumps(
    {
        "conclusion": "Start with the schema",
        "reasoning": ["The API depends on it"],
        "insights": ["Schema first"],
        "confidence": 0.8,
    }
)


async def test_model_answers_are_validated_repaired_once_and_failures_are_clear(
    model_live: LiveServer,
) -> None:
    ChatModel.replies = [GOOD_THINK, "not json at all", GOOD_THINK, "{}", "[1,2]", 500]
    async with thought(model_live) as t:
        good = data(await t.call_tool("think", {"problem": PROBLEM, "mode": "analytical"}))
        repaired = data(await t.call_tool("think", {"problem": PROBLEM, "mode": "analytical"}))
        twice = await t.call_tool("think", {"problem": PROBLEM, "mode": "analytical"})
        down = await t.call_tool("think", {"problem": PROBLEM, "mode": "analytical"})
    assert good["method"] == "language-model" and good["model"] == "llama-test"
    assert good["conclusion"] == "Start with the schema"
    assert repaired["conclusion"] == "Start with the schema"
    assert "not json at all" in ChatModel.prompts[2]  # the repair shows the model its bad reply
    for failed in (twice, down):
        body = envelope(failed)
        assert failed.is_error and body["success"] is False and PROBLEM not in body["error"]


GOOD_EMOTION = json.dumps(
    {
        "circumplex": {"valence": 0.8, "arousal": 0.7, "dominance": 0.4, "confidence": 0.9},
        "discrete": {
            "primary": "joy",
            "emotions": [
                {
                    "emotion": "joy",
                    "score": 0.9,
                    "intensity": "high",
                    "confidence": 0.9,
                    "evidence": ["thrilled"],
                }
            ],
            "confidence": 0.9,
        },
    }
)
EVERY_TOOL: dict[str, dict[str, Any]] = {
    "think": {"problem": PROBLEM, "mode": "synthetic"},
    "analyze": {"problem": PROBLEM},
    "ponder": {"problem": PROBLEM, "timeout": 5000},
    "breakdown": {"problem": PROBLEM},
    "assess_confidence": {"reasoning": "It works because the benchmark says so."},
    "detect_bias": {"reasoning": "We already spent a lot, so we continue."},
    "detect_emotion": {"text": "I'm thrilled!"},
    "evaluate": {"reasoning": "It works because the benchmark says so."},
}


async def test_every_tool_with_a_model_that_fails_or_keeps_answering_malformed_json(
    model_live: LiveServer,
) -> None:
    outcomes = {}
    async with thought(model_live) as t:
        for name, arguments in EVERY_TOOL.items():
            ChatModel.replies = ["not json", "still not json"] * 4  # every stream and its repair
            malformed = await t.call_tool(name, arguments)
            ChatModel.replies = [500] * 8
            failing = await t.call_tool(name, arguments)
            outcomes[name] = (malformed, failing)
        ChatModel.replies = [GOOD_EMOTION]
        good = data(await t.call_tool("detect_emotion", {"text": "I'm thrilled!"}))
    for name, results in outcomes.items():
        for result in results:
            body = envelope(result)
            assert result.is_error and body["success"] is False, (name, body)
            assert name.split("_")[0] in body["error"] or "model" in body["error"].lower(), (
                name,
                body["error"],
            )
    assert good["method"] == "language-model" and good["discrete"]["primary"] == "joy"
