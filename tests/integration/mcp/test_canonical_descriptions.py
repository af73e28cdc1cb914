"""The canonical `memory_*` tools describe themselves in full over tools/list: an agent's model picks
a tool, and fills in its arguments, from what it reads there. Each description carries the tool's
behaviour, arguments, defaults, limits, formulas, answer and errors as Cairn implements them; a
description cut back to a one-liner, or one that loses a parameter, a default or a limit, fails
here."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp_types import Tool

from cairn.entrypoints.mcp.canonical import CANONICAL_TOOLS
from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio

MIN_CHARS = 200
MAX_CHARS = 1600  # focused: the whole of a tool, not an essay

# What each tool's description must say: its parameters, defaults, limits, formulas, answer, errors.
MENTIONS: dict[str, list[str]] = {
    "memory_search": [
        "`query`",
        "1-4096 characters",
        "`top_k`",
        "1-100, default 10",
        "`scope`",
        "memory/global/",
        "memory/project/",
        "memory/agent/",
        "`all` or omitted",
        "`sort`",
        "`relevance` (default)",
        "`recency`",
        "`relevance_then_recency`",
        "0.6 x cosine",
        "0.4 x BM25",
        "a later note restating one above it (cosine >= 0.70",
        "1 / (1 + exp(-12 x (cosine - 0.40)))",
        "at or above 0.5",
        "One hit per document",
        "component_scores",
        "took_ms",
        "`#N score=S path`",
        "320 characters",
        "validation_error",
        "no_brain",
    ],
    "memory_recall": [
        "`session_id`",
        "memory_search",
        "POST /v1/brains/{brainId}/sessions",
        "6 newest",
        "0.5 x 0.7^i",
        "weight / (60 + rank)",
        "{chunks: [hits]}",
        "query_rank",
        "echo",
        "`query`: 1-4096 characters",
        "`top_k`: 1-50, default 10",
        "`scope`",
        "omitted = the whole brain",
        "not_found",
    ],
    "memory_remember": [
        "`content`",
        "1-5,000,000 characters",
        "`title`",
        "1-512 characters",
        "first heading",
        "`tags`",
        "up to 64",
        "metadata.tags",
        "`path`",
        "1-1024 characters",
        "memory/global/",
        "is replaced",
        "checksum_sha256",
        "`Remembered <id> at <path>`",
        "validation_error",
    ],
    "memory_ingest_file": [
        "`path`",
        "ingest root",
        "CAIRN_INGEST_ROOT",
        "over stdio",
        "uploads/",
        "`as`",
        "markdown, text, pdf, json or html",
        "extension decides",
        "25 MiB",
        "file_too_large",
        "`completed`",
        "`queued`",
        "8 MiB",
        "job_id",
        "reused",
        "ingest/<file name>",
    ],
    "memory_ingest_url": [
        "`url`",
        "http(s)",
        "no client-side fallback",
        "5 redirects",
        "20 seconds",
        "5 MiB",
        "private",
        'path: "server"',
        "result:",
        "url_refused",
        "fetch_failed",
        "payload_too_large",
    ],
    "memory_create_brain": [
        "`name`",
        "1-128 characters",
        "`slug`",
        "1-64 characters",
        "^[a-z0-9][a-z0-9-]*$",
        "-2, -3",
        "`visibility`",
        "default private",
        "tenant",
        "public",
        "brains:admin",
        "conflict",
        "embedding_model",
    ],
    "memory_list_brains": [
        "No arguments",
        "oldest first",
        "public",
        "{items:",
        "`<n> brain(s)`",
        "JBMCP_DEFAULT_BRAIN",
    ],
    "memory_ask": [
        "`query`",
        "1-8192 characters",
        "`top_k`",
        "1-50, default 8",
        "_meta.progressToken",
        "notifications/progress",
        "from 0",
        "citations",
        "answer_start",
        "retrieved",
        "512 characters",
        "calibrated 0-1 scale",
        "retryable",
        "No supporting memory was found for this question.",
    ],
    "memory_extract": [
        "`messages`",
        "1-500",
        "system, user, assistant or tool",
        "1-1,000,000 characters",
        "`session_id`",
        "skip_extract",
        'mode: "session"',
        'mode: "transcript"',
        "transcripts/",
        "`actor_id`",
        "1-256 characters",
        "memory/agent/<actor>/",
        "memory/global/",
        "in the background",
        "conflict",
        "not_found",
    ],
    "memory_reflect": [
        "`session_id`",
        "synchronously",
        "ended_at",
        "success, failure, partial or informational",
        "episodes/<date>-<session id>.md",
        "reflection_status",
        "completed",
        "no_result",
        "failed",
        "should_record_episode",
        "retry_feedback",
        "reflection_attempted false",
        "not_found",
    ],
    "memory_consolidate": [
        "`brain`",
        "background",
        "merge",
        "cosine at least 0.9",
        "promote",
        "prune",
        "older than 30 days",
        "_archive-YYYY-MM.md",
        "_summary.md",
        "replaced_by",
        "job_id",
        "GET /v1/jobs/{job_id}",
        "no_brain",
    ],
}

# What a parameter's own description must say (beyond the tool's), where a model reads it alone.
PARAM_MENTIONS: dict[tuple[str, str], list[str]] = {
    ("memory_search", "top_k"): ["1-100", "default 10"],
    ("memory_search", "scope"): ["memory/global/", "the whole brain"],
    ("memory_search", "sort"): ["relevance (the default)", "recency", "relevance_then_recency"],
    ("memory_recall", "top_k"): ["1-50", "default 10"],
    ("memory_recall", "session_id"): ["memory_search"],
    ("memory_ask", "top_k"): ["1-50", "default 8"],
    ("memory_remember", "title"): ["first heading"],
    ("memory_remember", "tags"): ["metadata.tags"],
    ("memory_remember", "path"): ["memory/global/"],
    ("memory_ingest_file", "path"): ["ingest root", "stdio", "uploads/"],
    ("memory_ingest_file", "as"): ["extension"],
    ("memory_ingest_url", "url"): ["5 MiB"],
    ("memory_create_brain", "slug"): ["from the name"],
    ("memory_create_brain", "visibility"): ["private (the default)", "tenant", "public"],
    ("memory_extract", "actor_id"): ["memory/agent/<actor>/"],
    ("memory_extract", "session_id"): ["transcript"],
}


async def _tools(live: LiveServer) -> dict[str, Tool]:
    async with Client(live.url) as client:
        return {t.name: t for t in (await client.list_tools()).tools}


def _limit_text(n: int) -> str:
    """A limit as the descriptions write it: 4096, 5,000,000."""
    return f"{n:,}" if n >= 10_000 else str(n)


async def test_every_canonical_tool_is_covered(live: LiveServer) -> None:
    tools = await _tools(live)
    assert set(tools) == set(MENTIONS) == {spec.name for spec in CANONICAL_TOOLS}


async def test_descriptions_are_substantive_and_name_what_matters(live: LiveServer) -> None:
    tools = await _tools(live)
    for name, needed in MENTIONS.items():
        description = tools[name].description or ""
        assert MIN_CHARS <= len(description) <= MAX_CHARS, (name, len(description))
        missing = [m for m in needed if m not in description]
        assert not missing, (name, missing)


async def test_every_argument_is_named_and_its_default_and_limits_stated(live: LiveServer) -> None:
    """Every argument but `brain` is named in its tool's description; a schema default is stated
    there (`default 10`); each upper limit is stated in the tool's or the argument's description."""
    tools = await _tools(live)
    for name, tool in tools.items():
        description = tool.description or ""
        props: dict[str, Any] = tool.input_schema.get("properties", {})
        for pname, prop in props.items():
            if pname != "brain":
                assert f"`{pname}`" in description, (name, pname)
            if "default" in prop:
                assert f"default {prop['default']}" in description, (name, pname, prop["default"])
            for bound in ("maximum", "maxLength", "maxItems"):
                if bound in prop:
                    limit = _limit_text(prop[bound])
                    said = description + " " + str(prop.get("description", ""))
                    assert limit in said, (name, pname, bound, limit)


async def test_argument_descriptions_carry_defaults_and_scopes(live: LiveServer) -> None:
    tools = await _tools(live)
    for name, tool in tools.items():
        brain = tool.input_schema.get("properties", {}).get("brain")
        if brain is not None:
            assert "JBMCP_DEFAULT_BRAIN" in brain["description"], name
            assert "no_brain" in brain["description"], name
    for (name, pname), needed in PARAM_MENTIONS.items():
        said = tools[name].input_schema["properties"][pname].get("description", "")
        missing = [m for m in needed if m not in said]
        assert not missing, (name, pname, missing)
