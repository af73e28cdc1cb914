"""Where seed 004 shows a reply or names an error, ThoughtMCP's surface answers that, to the letter:
recall's `memories[].score` is the total (a number, equal to `scores[id]`); remember's success
carries `metadata {timestamp, processingTime, componentsUsed}`; an unknown sector is the seed's
`Invalid sector` with its solution; blank content names remember's required fields."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import data, envelope, refused, thought

pytestmark = pytest.mark.anyio
SECTORS = "episodic, semantic, procedural, emotional, reflective"


def _memory(content: str, sector: Any = "semantic") -> dict[str, Any]:
    return {"content": content, "userId": "ada", "sessionId": "s1", "primarySector": sector}


async def test_recall_scores_are_numbers_and_remember_reports_its_components(live: LiveServer) -> None:
    async with thought(live) as client:
        stored = await client.call_tool("remember", _memory("Ada prefers dark mode in every editor"))
        recalled = data(await client.call_tool("recall", {"userId": "ada", "text": "dark mode editor"}))
        listed = data(await client.call_tool("search", {"userId": "ada"}))

    reply = envelope(stored)
    assert reply["success"] is True
    assert reply["metadata"]["componentsUsed"] == ["memoryRepository", "embeddingEngine", "graphBuilder"]
    assert reply["metadata"]["timestamp"].endswith("Z") and isinstance(
        reply["metadata"]["processingTime"], int
    )
    for answer in (recalled, listed):
        top = answer["memories"][0]
        assert top["id"] == reply["data"]["memoryId"]
        assert isinstance(top["score"], float) and top["score"] == answer["scores"][top["id"]]
        assert top["scoreComponents"]["total"] == top["score"]
    assert recalled["memories"][0]["scoreComponents"]["similarity"] > 0.5


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("remember", _memory("Ada prefers dark mode in every editor", "bogus")),
        ("recall", {"userId": "ada", "text": "dark mode", "sectors": ["semantic", "bogus"]}),
        ("recall", {"userId": "ada", "primarySector": "Semantic"}),
        (
            "batch_remember",
            {
                "userId": "ada",
                "sessionId": "s1",
                "memories": [{"content": "x" * 20, "primarySector": "bogus"}],
            },
        ),
    ],
)
async def test_an_unknown_sector_is_the_seeds_invalid_sector(live: LiveServer, tool: str, args: Any) -> None:
    async with thought(live) as client:
        result = await client.call_tool(tool, args)
        left = data(await client.call_tool("search", {"userId": "ada"}))

    if tool == "batch_remember":  # one bad item is a failure of the batch, the others stored
        failures = data(result)["failures"]
        assert [f["error"] for f in failures] == ["Invalid memory: Invalid sector"]
    else:
        assert refused(result) == {
            "success": False,
            "error": "Invalid sector",
            "suggestion": f"Use: {SECTORS}",
        }
    assert left["memories"] == []  # nothing stored


async def test_a_sector_error_beside_another_field_error_keeps_the_detail(live: LiveServer) -> None:
    async with thought(live) as client:
        result = await client.call_tool(
            "recall", {"userId": "ada", "primarySector": "bogus", "limit": "five"}
        )

    error = refused(result)["error"]
    assert error.startswith("Invalid parameters:") and "limit" in error and "primarySector" in error


async def test_blank_content_names_remembers_required_fields(live: LiveServer) -> None:
    async with thought(live) as client:
        remembered = await client.call_tool("remember", _memory(" " * 12))
        first = data(await client.call_tool("remember", _memory("Ada prefers dark mode in every editor")))
        updated = await client.call_tool(
            "update_memory", {"memoryId": first["memoryId"], "userId": "ada", "content": " " * 12}
        )

    assert refused(remembered) == {
        "success": False,
        "error": "Content cannot be empty",
        "suggestion": "Check that all required fields are provided and content is non-empty. "
        f"Ensure primarySector is one of: {SECTORS}",
    }
    assert refused(updated) == {
        "success": False,
        "error": "Content cannot be empty",
        "suggestion": "Provide non-empty content",
    }
