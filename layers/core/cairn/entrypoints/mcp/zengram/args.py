"""The arguments of the 13 `brain_*` tools, as seed 001 lists them (plus the `index` search
format, which the real server has), each described in Cairn's words.

Values are taken loosely, as zengram's wrapper takes them (it forwards what it gets and the API
judges): a type the API would refuse is refused there, with the API's message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from cairn.entrypoints.mcp.kit import ToolArgs


def _required(*names: str) -> ConfigDict:
    """Advertise `names` as required even where a missing value has a default (source_agent)."""

    def extra(schema: dict[str, Any]) -> None:
        schema["required"] = list(dict.fromkeys([*schema.get("required", []), *names]))

    return ConfigDict(populate_by_name=True, extra="ignore", json_schema_extra=extra)


TYPES = "event, fact, decision or status"
IMPORTANCES = "critical, high, medium or low"
KNOWLEDGE = "brand, strategy, meeting, content, technical, relationship or general"


def _text(description: str) -> Any:
    return Field(description=description)


class StoreArgs(ToolArgs):
    model_config = _required("type", "content", "source_agent")

    type: Annotated[str | None, _text(f"The memory's type: {TYPES}")] = None
    content: Annotated[str | None, _text("What to remember, specific and with its context")] = None
    source_agent: Annotated[str | None, _text('Who is storing it; "claude-code" when left out over MCP')] = (
        None
    )
    client_id: Annotated[str | None, _text('The client or project slug; "global" by default')] = None
    category: Annotated[str | None, _text("semantic, episodic (the default) or procedural")] = None
    importance: Annotated[str | None, _text(f"{IMPORTANCES}; medium by default")] = None
    key: Annotated[
        str | None,
        _text("Facts: the key a later fact with the same key supersedes this one by"),
    ] = None
    subject: Annotated[
        str | None,
        _text("Statuses: what the status is of; a later status of the same subject supersedes it"),
    ] = None
    status_value: Annotated[str | None, _text("Statuses: the value the subject is now at")] = None
    knowledge_category: Annotated[str | None, _text(f"{KNOWLEDGE}; general by default")] = None
    valid_from: Annotated[str | None, _text("ISO 8601: since when the fact holds")] = None
    valid_to: Annotated[str | None, _text("ISO 8601: when the fact stopped holding")] = None


class SearchArgs(ToolArgs):
    model_config = _required("query")

    query: Annotated[str | None, _text("What to look for, in natural language")] = None
    type: Annotated[str | None, _text(f"Only memories of this type: {TYPES}")] = None
    source_agent: Annotated[str | None, _text("Only memories this agent stored")] = None
    client_id: Annotated[str | None, _text("Only this client's memories")] = None
    limit: Annotated[float | None, _text("How many results at most (default 10, max 100)")] = None
    format: Annotated[
        Literal["compact", "full", "index"] | None,
        _text(
            "compact (default: short, fewer tokens), full (whole memories and how each was found) or index"
        ),
    ] = None
    include_superseded: Annotated[
        bool | None, _text("Also return memories that were superseded (default false)")
    ] = None
    knowledge_category: Annotated[str | None, _text(f"Only this knowledge category: {KNOWLEDGE}")] = None
    at_time: Annotated[str | None, _text("ISO 8601: what was true at that moment")] = None


class BriefingArgs(ToolArgs):
    model_config = _required("since")

    since: Annotated[str | None, _text("ISO 8601: report what was recorded from then on")] = None
    agent: Annotated[
        str | None, _text('The requesting agent, whose own entries are left out ("claude-code" by default)')
    ] = None
    include: Annotated[str | None, _text('"all" keeps the requesting agent\'s own entries')] = None
    format: Annotated[
        str | None, _text("compact (default), summary (headlines only) or full (every entry)")
    ] = None
    limit: Annotated[float | None, _text("How many memories at most (default 100, max 500)")] = None


class QueryArgs(ToolArgs):
    model_config = _required("type")

    type: Annotated[str | None, _text("events, facts or statuses")] = None
    source_agent: Annotated[str | None, _text("Only this agent's memories")] = None
    category: Annotated[str | None, _text("Only this category")] = None
    client_id: Annotated[str | None, _text("Only this client's memories")] = None
    since: Annotated[str | None, _text("Events: ISO 8601, created then or later")] = None
    key: Annotated[str | None, _text("Facts: keys containing this text")] = None
    subject: Annotated[str | None, _text("Statuses: subjects containing this text")] = None


class NoArgs(ToolArgs):
    pass


class ConsolidateArgs(ToolArgs):
    action: Annotated[str | None, _text("run (the default), status or job")] = None
    job_id: Annotated[str | None, _text("action=job: the run to follow")] = None
    sync: Annotated[bool | None, _text("action=run: wait for the run to finish (default false)")] = None


class EntitiesArgs(ToolArgs):
    model_config = _required("action")

    action: Annotated[str | None, _text("list, get, memories or stats")] = None
    name: Annotated[
        str | None, _text('get and memories: the entity\'s name or an alias (may contain "/")')
    ] = None
    type: Annotated[
        str | None,
        _text("list: only client, person, system, service, domain, technology, workflow or agent"),
    ] = None
    limit: Annotated[
        float | None, _text("How many at most (list: default 50; memories: default 20; max 100)")
    ] = None


class DeleteArgs(ToolArgs):
    model_config = _required("memory_id")

    memory_id: Annotated[str | None, _text("The id of the memory to delete")] = None
    reason: Annotated[str | None, _text("Why it goes, kept for the audit")] = None


class UpdateArgs(ToolArgs):
    model_config = _required("memory_id")

    memory_id: Annotated[str | None, _text("The id of the memory to change")] = None
    content: Annotated[str | None, _text("Its new text (embedded and indexed again)")] = None
    importance: Annotated[str | None, _text(f"Its new importance: {IMPORTANCES}")] = None
    knowledge_category: Annotated[str | None, _text(f"Its new knowledge category: {KNOWLEDGE}")] = None
    metadata: Annotated[dict[str, Any] | None, _text("An object that replaces its metadata")] = None


class ExportArgs(ToolArgs):
    client_id: Annotated[str | None, _text("Only this client's memories")] = None
    type: Annotated[
        Literal["event", "fact", "decision", "status"] | None, _text("Only memories of this type")
    ] = None
    since: Annotated[str | None, _text("ISO 8601: created then or later")] = None
    limit: Annotated[float | None, _text("How many rows at most (default 500)")] = None


class ImportArgs(ToolArgs):
    model_config = _required("data")

    data: Annotated[
        list[Any] | None,
        _text("The memories to restore, as brain_export writes them (at most 500)"),
    ] = None


class ReflectArgs(ToolArgs):
    model_config = _required("topic")

    topic: Annotated[str | None, _text("The subject or question to reflect on")] = None
    client_id: Annotated[str | None, _text("Only this client's memories")] = None
    limit: Annotated[float | None, _text("How many memories to read at most (default 20, max 50)")] = None


class ResearchArgs(ToolArgs):
    model_config = _required("topic")

    topic: Annotated[
        str | None, _text("The whole multi-hop question, phrased as a question rather than keywords")
    ] = None
    client_id: Annotated[str | None, _text("Only this client's memories")] = None
    max_iterations: Annotated[float | None, _text("Retrieval rounds before answering (1-4, default 2)")] = (
        None
    )
