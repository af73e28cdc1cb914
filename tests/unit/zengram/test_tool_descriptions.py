"""Each `brain_*` tool tells an agent what seed 001 tells it: what the tool does, its parameters and
their defaults, and the formulas it follows; each parameter the seed describes is described."""

from __future__ import annotations

import pytest

from cairn.entrypoints.mcp.zengram import ZENGRAM_TOOLS

TOOLS = {spec.name: spec for spec in ZENGRAM_TOOLS}

MENTIONS: dict[str, tuple[str, ...]] = {
    "brain_store": (
        "event", "fact", "decision", "status", "key", "subject", "supersede", "30 days",
        "source_agent", '"claude-code"', "client_id", '"global"', "importance", "medium",
        "knowledge_category", "category", "valid_from", "valid_to", "status_value", "same text",
    ),
    "brain_search": (
        "semantic", "keyword", "BM25", "fused", "query", "limit", "default 10", "max 100", "format",
        "compact", "full", "index", "include_superseded", "at_time", "client_id", "source_agent",
        "knowledge_category", "effective_score", "0.85 + 0.15", "0.9 + 0.1", "critical 1.0",
        "low 0.5", "2%",
    ),
    "brain_briefing": (
        "since", "agent", '"claude-code"', "own entries", 'include="all"', "format", "compact",
        "summary", "full", "limit", "default 100", "max 500",
    ),
    "brain_query": (
        "type", "events", "facts", "statuses", "no semantic", "key", "subject", "since",
        "source_agent", "category", "client_id",
    ),
    "brain_stats": ("no parameters", "superseded", "consolidated", "2%"),
    "brain_consolidate": (
        "action", "run", "status", "job", "job_id", "sync", "default false", "started",
        "memories_processed",
    ),
    "brain_entities": (
        "action", "list", "get", "memories", "stats", "name", "alias", "type", "client", "person",
        "system", "service", "domain", "technology", "workflow", "agent", "limit", "default 50",
        "default 20", '"/"',
    ),
    "brain_delete": ("Soft-delete", "memory_id", "reason", "audit"),
    "brain_update": (
        "in place", "memory_id", "content", "importance", "knowledge_category", "metadata",
        "replaces", "at least one", "brain_store",
    ),
    "brain_export": ("JSON", "client_id", "type", "since", "limit", "default 500", "backup"),
    "brain_import": (
        "data", "500", "content hash", "embedded again", "skipped", "never overwritten",
        "imported", "errors",
    ),
    "brain_reflect": (
        "topic", "patterns", "timeline", "contradictions", "gaps", "[mem:<id>]", "client_id",
        "limit", "default 20", "max 50", "relevant", "memories_analyzed 0",
    ),
    "brain_research": (
        "topic", "max_iterations", "1-4", "default 2", "client_id", "[mem:<id>]", "partial",
        "key_findings", "unresolved", "cited_memory_ids", "iterations", "query_trace", "off",
    ),
}  # fmt: skip


def test_every_tool_is_checked() -> None:
    assert set(MENTIONS) == set(TOOLS)


@pytest.mark.parametrize("name", sorted(MENTIONS))
def test_a_tools_description_names_its_parameters_defaults_and_rules(name: str) -> None:
    description = TOOLS[name].description

    missing = [phrase for phrase in MENTIONS[name] if phrase not in description]

    assert not missing, f"{name} does not mention {missing}"


@pytest.mark.parametrize("name", sorted(MENTIONS))
def test_every_parameter_is_described(name: str) -> None:
    schema = TOOLS[name].args.model_json_schema()

    undescribed = [p for p, field in schema.get("properties", {}).items() if not field.get("description")]

    assert not undescribed, f"{name}: {undescribed}"


@pytest.mark.parametrize(
    ("name", "parameter", "phrase"),
    [
        ("brain_search", "limit", "default 10"),
        ("brain_briefing", "agent", '"claude-code"'),
        ("brain_briefing", "limit", "default 100, max 500"),
        ("brain_store", "source_agent", '"claude-code"'),
        ("brain_store", "importance", "medium by default"),
        ("brain_consolidate", "sync", "default false"),
        ("brain_entities", "limit", "default 50"),
        ("brain_export", "limit", "default 500"),
        ("brain_reflect", "limit", "default 20, max 50"),
        ("brain_research", "max_iterations", "1-4, default 2"),
    ],
)
def test_a_parameters_description_gives_its_default(name: str, parameter: str, phrase: str) -> None:
    field = TOOLS[name].args.model_json_schema()["properties"][parameter]

    assert phrase in field["description"]
