"""tools/list is seed 004's 13 tools plus the three batch tools ThoughtMCP registers: names, required
fields, property types, enums and advertised ranges."""

from __future__ import annotations

import pytest

from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import thought

pytestmark = pytest.mark.anyio
SECTORS = ["episodic", "semantic", "procedural", "emotional", "reflective"]
FILTERS = dict.fromkeys(("userId", "primarySector", "text"), "string") | {
    "sectors": "array",
    "minStrength": "number",
    "minSalience": "number",
    "dateRange": "object",
    "metadata": "object",
    "limit": "number",
    "offset": "number",
}
SEED: dict[str, tuple[list[str], dict[str, str]]] = {
    "remember": (
        ["content", "userId", "sessionId", "primarySector"],
        {
            "content": "string",
            "userId": "string",
            "sessionId": "string",
            "primarySector": "string",
            "metadata": "object",
        },
    ),
    "recall": (["userId"], {**FILTERS, "minSimilarity": "number"}),
    "update_memory": (
        ["memoryId", "userId"],
        {
            "memoryId": "string",
            "userId": "string",
            "content": "string",
            "strength": "number",
            "salience": "number",
            "metadata": "object",
        },
    ),
    "forget": (["memoryId", "userId"], {"memoryId": "string", "userId": "string", "soft": "boolean"}),
    "search": (["userId"], FILTERS),
    "think": (
        ["problem", "mode"],
        {"problem": "string", "mode": "string", "context": "object", "userId": "string"},
    ),
    "analyze": (
        ["problem"],
        {"problem": "string", "preferredFramework": "string", "context": "object", "userId": "string"},
    ),
    "ponder": (
        ["problem"],
        {"problem": "string", "timeout": "number", "context": "object", "userId": "string"},
    ),
    "breakdown": (
        ["problem"],
        {"problem": "string", "maxDepth": "number", "context": "object", "userId": "string"},
    ),
    "assess_confidence": (["reasoning"], {"reasoning": "string", "evidence": "array", "context": "string"}),
    "detect_bias": (
        ["reasoning"],
        {"reasoning": "string", "context": "string", "monitorContinuously": "boolean"},
    ),
    "detect_emotion": (["text"], {"text": "string", "includeDiscrete": "boolean", "context": "string"}),
    "evaluate": (
        ["reasoning"],
        {
            "reasoning": "string",
            "context": "string",
            "includeConfidence": "boolean",
            "includeBias": "boolean",
            "includeEmotion": "boolean",
        },
    ),
    "batch_remember": (
        ["userId", "sessionId", "memories"],
        {"userId": "string", "sessionId": "string", "memories": "array"},
    ),
    "batch_recall": (
        ["userId", "memoryIds"],
        {"userId": "string", "memoryIds": "array", "includeDeleted": "boolean"},
    ),
    "batch_forget": (["memoryIds"], {"memoryIds": "array", "soft": "boolean"}),
}


async def test_tools_list_matches_the_seed(live: LiveServer) -> None:
    async with thought(live) as t:
        tools = {tool.name: tool for tool in (await t.list_tools()).tools}
        info = t.server_info
    assert sorted(tools) == sorted(SEED) and info is not None and info.name == "thoughtmcp"
    for name, (required, props) in SEED.items():
        schema = tools[name].input_schema
        assert sorted(schema.get("required", [])) == sorted(required), name
        assert {k: v.get("type") for k, v in schema["properties"].items()} == props, name
    remember = tools["remember"].input_schema["properties"]
    assert remember["primarySector"]["enum"] == SECTORS
    assert remember["metadata"]["properties"]["importance"] == {
        "type": "number", "minimum": 0, "maximum": 1, "description": "Importance score (0-1, default 0.5)",
    }  # fmt: skip
    recall = tools["recall"].input_schema["properties"]
    assert recall["sectors"]["items"]["enum"] == SECTORS
    assert (recall["limit"]["minimum"], recall["limit"]["maximum"]) == (1, 100)
    assert recall["dateRange"]["properties"]["start"] == {"type": "string", "format": "date-time"}
    assert tools["think"].input_schema["properties"]["mode"]["enum"] == [
        "analytical", "creative", "critical", "synthetic", "parallel",
    ]  # fmt: skip
    assert len(tools["analyze"].input_schema["properties"]["preferredFramework"]["enum"]) == 8
    ponder = tools["ponder"].input_schema["properties"]["timeout"]
    assert (ponder["minimum"], ponder["maximum"]) == (1000, 60000)


MENTIONS = {
    "remember": ["userId", "primarySector", "10 to 100,000", "embeddingsGenerated: 5", "importance", "0.5"],
    "recall": ["0.6*similarity + 0.2*salience + 0.1*recency + 0.1*linkWeight", "minSimilarity", "default 10"],
    "update_memory": ["embeddingsRegenerated", "connectionsUpdated", "strength", "metadata"],
    "forget": ["soft", "default false", "strength", "cascades"],
    "search": ["AND", "OR", "NOT", "BM25", "highlight", "default 10"],
    "batch_remember": ["failures", "processingTime", "on its own"],
    "batch_recall": ["includeDeleted", "notFound"],
    "batch_forget": ["soft", "at least one"],
    "think": ["analytical", "creative", "critical", "synthetic", "parallel", "userId", "rule-based"],
    "analyze": ["root-cause-analysis", "first-principles", "scenario-planning", "preferredFramework"],
    "ponder": ["timeout", "30000", "60000", "concurrently"],
    "breakdown": ["maxDepth", "default 3", "executionOrder", "dependencies"],
    "assess_confidence": ["evidence", "biasFreedom", "overallConfidence", "0.3*evidence"],
    "detect_bias": ["confirmation", "anchoring", "sunk_cost", "attribution", "severity"],
    "detect_emotion": ["valence", "arousal", "dominance", "includeDiscrete", "gratitude", "awe"],
    "evaluate": ["includeConfidence", "includeBias", "includeEmotion", "default false", "logical validity"],
}


async def test_each_tool_describes_its_behaviour_parameters_and_defaults(live: LiveServer) -> None:
    async with thought(live) as t:
        tools = {tool.name: tool.description or "" for tool in (await t.list_tools()).tools}
    assert sorted(tools) == sorted(MENTIONS)
    for name, words in MENTIONS.items():
        assert len(tools[name]) >= 190, name
        assert [w for w in words if w not in tools[name]] == [], name
