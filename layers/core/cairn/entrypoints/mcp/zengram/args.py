"""The arguments of the 13 `brain_*` tools, as seed 001 lists them (plus `operator_approved` on
brain_import and the `index` search format, which the real server has).

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


class StoreArgs(ToolArgs):
    model_config = _required("type", "content", "source_agent")

    type: Annotated[str | None, Field(description="event, fact, decision, status")] = None
    content: Annotated[str | None, Field(description="Memory text. Be specific and include context.")] = None
    source_agent: Annotated[
        str | None, Field(description='Agent identifier (default: "claude-code" if omitted via MCP)')
    ] = None
    client_id: Annotated[str | None, Field(description='Client slug or "global"')] = None
    category: Annotated[str | None, Field(description="semantic, episodic, procedural")] = None
    importance: Annotated[str | None, Field(description="critical, high, medium, low")] = None
    key: Annotated[
        str | None,
        Field(description="Facts only: unique key for upsert. Existing fact with same key is superseded."),
    ] = None
    subject: Annotated[
        str | None,
        Field(
            description=(
                "Status only: what this status is about. Existing status with same subject is superseded."
            )
        ),
    ] = None
    status_value: Annotated[str | None, Field(description="Status only: the current value")] = None
    knowledge_category: Annotated[
        str | None,
        Field(description="brand, strategy, meeting, content, technical, relationship, general"),
    ] = None
    valid_from: Annotated[str | None, Field(description="ISO 8601 -- when this fact became true")] = None
    valid_to: Annotated[str | None, Field(description="ISO 8601 -- when this fact stopped being true")] = None


class SearchArgs(ToolArgs):
    model_config = _required("query")

    query: Annotated[str | None, Field(description="Natural language search query")] = None
    type: Annotated[str | None, Field(description="Filter by memory type")] = None
    source_agent: Annotated[str | None, Field(description="Filter by agent")] = None
    client_id: Annotated[str | None, Field(description="Filter by client")] = None
    limit: Annotated[float | None, Field(description="Max results (default 10)")] = None
    format: Annotated[
        Literal["compact", "full", "index"] | None,
        Field(description="compact (default, saves tokens), full (shows retrieval sources) or index"),
    ] = None
    include_superseded: Annotated[bool | None, Field(description="Include inactive memories")] = None
    knowledge_category: Annotated[str | None, Field(description="Filter by knowledge domain")] = None
    at_time: Annotated[str | None, Field(description='ISO 8601 -- "what was true at this time?"')] = None


class BriefingArgs(ToolArgs):
    model_config = _required("since")

    since: Annotated[str | None, Field(description="ISO 8601 timestamp")] = None
    agent: Annotated[str | None, Field(description='Requesting agent (default: "claude-code")')] = None
    include: Annotated[str | None, Field(description='"all" to include own entries')] = None
    format: Annotated[str | None, Field(description="compact (default), summary (minimal), full")] = None
    limit: Annotated[float | None, Field(description="Max memories (default 100, max 500)")] = None


class QueryArgs(ToolArgs):
    model_config = _required("type")

    type: Annotated[str | None, Field(description="events, facts, statuses")] = None
    source_agent: Annotated[str | None, Field(description="Filter by agent")] = None
    category: Annotated[str | None, Field(description="Filter by category")] = None
    client_id: Annotated[str | None, Field(description="Filter by client")] = None
    since: Annotated[str | None, Field(description="For events: ISO timestamp")] = None
    key: Annotated[str | None, Field(description="For facts: search by key")] = None
    subject: Annotated[str | None, Field(description="For statuses: search by subject")] = None


class NoArgs(ToolArgs):
    pass


class ConsolidateArgs(ToolArgs):
    action: Annotated[str | None, Field(description="run (default), status, job")] = None
    job_id: Annotated[str | None, Field(description="For action=job: poll a running job")] = None
    sync: Annotated[
        bool | None, Field(description="For action=run: block until complete (default: false)")
    ] = None


class EntitiesArgs(ToolArgs):
    model_config = _required("action")

    action: Annotated[str | None, Field(description="list, get, memories, stats")] = None
    name: Annotated[str | None, Field(description="Entity name (canonical or alias)")] = None
    type: Annotated[
        str | None,
        Field(description="Filter: client, person, system, service, domain, technology, workflow, agent"),
    ] = None
    limit: Annotated[float | None, Field(description="Max results (default 50)")] = None


class DeleteArgs(ToolArgs):
    model_config = _required("memory_id")

    memory_id: Annotated[str | None, Field(description="UUID of the memory")] = None
    reason: Annotated[str | None, Field(description="Reason for deletion (logged for audit)")] = None


class UpdateArgs(ToolArgs):
    model_config = _required("memory_id")

    memory_id: Annotated[str | None, Field(description="UUID of the memory")] = None
    content: Annotated[str | None, Field(description="New content (triggers re-embed + re-index)")] = None
    importance: Annotated[str | None, Field(description="New importance level")] = None
    knowledge_category: Annotated[str | None, Field(description="New knowledge category")] = None
    metadata: Annotated[dict[str, Any] | None, Field(description="Updated metadata (replaces existing)")] = (
        None
    )


class ExportArgs(ToolArgs):
    client_id: Annotated[str | None, Field(description="Filter by client")] = None
    type: Annotated[
        Literal["event", "fact", "decision", "status"] | None, Field(description="Filter by type")
    ] = None
    since: Annotated[str | None, Field(description="ISO timestamp")] = None
    limit: Annotated[float | None, Field(description="Max records (default 500)")] = None


class ImportArgs(ToolArgs):
    model_config = _required("data", "operator_approved")

    data: Annotated[
        list[Any] | None, Field(description="Array of memory objects (same format as export output)")
    ] = None
    operator_approved: Annotated[
        bool | None,
        Field(
            description=(
                "Must be true: import overwrites live memories and needs explicit operator authorization"
            )
        ),
    ] = None


class ReflectArgs(ToolArgs):
    model_config = _required("topic")

    topic: Annotated[str | None, Field(description="Topic or question to reflect on")] = None
    client_id: Annotated[str | None, Field(description="Scope to a specific client")] = None
    limit: Annotated[float | None, Field(description="Max memories to analyze (default 20, max 50)")] = None


class ResearchArgs(ToolArgs):
    model_config = _required("topic")

    topic: Annotated[
        str | None,
        Field(description="The full multi-hop question (phrase it as a question, not a keyword)"),
    ] = None
    client_id: Annotated[str | None, Field(description="Scope to a specific client")] = None
    max_iterations: Annotated[
        float | None, Field(description="Retrieval rounds before synthesis (1-4, default 2)")
    ] = None
