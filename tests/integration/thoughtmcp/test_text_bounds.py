"""The reasoning and metacognitive tools read at most 100,000 characters of each text argument (as
remember's content): a longer one is refused in ThoughtMCP's envelope, success false with an error
and a suggestion, before anything reads it; a text at the bound is answered."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import data, refused, thought

pytestmark = pytest.mark.anyio
BOUND = 100_000
LONG = ("We should migrate the database because everyone knows it is always faster. " * 1400)[: BOUND + 1]


def _calls(text: str) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, the argument the refusal names)."""
    goals = [text[:60_000], text[60_000:]]
    background = {"background": text}
    return [
        ("think", {"problem": text, "mode": "analytical"}, "problem"),
        ("analyze", {"problem": text}, "problem"),
        ("ponder", {"problem": text, "timeout": 5000}, "problem"),
        ("breakdown", {"problem": text}, "problem"),
        ("think", {"problem": "Migrate?", "mode": "critical", "context": background}, "context.background"),
        ("analyze", {"problem": "Migrate?", "context": {"goals": goals}}, "context.goals"),
        ("assess_confidence", {"reasoning": text}, "reasoning"),
        ("assess_confidence", {"reasoning": "It is faster.", "evidence": [text]}, "evidence"),
        ("detect_bias", {"reasoning": text}, "reasoning"),
        ("detect_bias", {"reasoning": "It is faster.", "context": text}, "context"),
        ("detect_emotion", {"text": text}, "text"),
        ("evaluate", {"reasoning": text, "includeEmotion": True}, "reasoning"),
        ("evaluate", {"reasoning": "It is faster.", "context": text}, "context"),
    ]  # fmt: skip


async def test_a_text_over_the_bound_is_refused_in_the_envelope_and_changes_nothing(live: LiveServer) -> None:
    before = live.snapshot()
    async with thought(live) as client:
        for tool, args, name in _calls(LONG):
            answer = refused(await client.call_tool(tool, args))
            assert answer == {
                "success": False,
                "error": f"{name} must be at most {BOUND} characters (received {BOUND + 1})",
                "suggestion": f"Shorten {name} to at most {BOUND} characters",
            }, tool
    assert live.snapshot() == before


async def test_a_text_at_the_bound_is_answered(live: LiveServer) -> None:
    async with thought(live) as client:
        emotion = data(await client.call_tool("detect_emotion", {"text": LONG[:BOUND]}))
        bias = data(await client.call_tool("detect_bias", {"reasoning": LONG[:BOUND]}))
    assert emotion["method"] == bias["method"] == "rule-based"
