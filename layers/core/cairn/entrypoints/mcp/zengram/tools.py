"""The 13 `brain_*` tools. Each does what zengram's wrapper does: check the arguments it checks,
turn the call into the request it would send, and answer what the API answered. Where the seed
says otherwise the seed wins: brain_briefing's agent defaults to "claude-code", and brain_import
takes only `data` (it never overwrites a memory still present, see services/zengram/transfer.py). The request
goes to the same operations the /zengram HTTP API runs (services/zengram/api.py), in process.

A success is the API body as JSON text (pretty, as zengram 4.3.0 prints it); a failure is
`isError` text `Error: API <METHOD> <path and query>: <status> <body>`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote_plus, urlencode

from mcp_types import CallToolResult, TextContent

from cairn.auth.principal import READ, WRITE
from cairn.domain.echo import safe_echo
from cairn.domain.js_text import js_blank
from cairn.domain.scrub import scrub
from cairn.entrypoints.mcp.kit import AuditTarget, SurfaceDeps, ToolArgs, ToolSpec, request_meta
from cairn.entrypoints.mcp.zengram import args as a
from cairn.entrypoints.mcp.zengram import descriptions as d
from cairn.entrypoints.mcp.zengram.services import ZengramServices
from cairn.services.zengram.api import ZengramApi
from cairn.services.zengram.base import DEFAULT_AGENT
from cairn.services.zengram.reply import Reply, run
from cairn.services.zengram.validate import MEMORY_TYPES

TOPIC_REQUIRED = '"topic" is required (non-empty string)'
BRAIN_META = "cairn.dev/brain"
"""The brain a call used, in the result's _meta, for the audit (zengram's results are text only)."""


def text(body: str, *, error: bool = False, brain: str | None = None) -> CallToolResult:
    result = CallToolResult(content=[TextContent(type="text", text=body)], is_error=error)
    return result.model_copy(update={"meta": {BRAIN_META: brain}}) if brain else result


def local_error(message: str) -> CallToolResult:
    return text(f"Error: {message}", error=True)


def _query(pairs: list[tuple[str, Any]]) -> str:
    """URLSearchParams of the truthy values, in order (spaces as `+`), as the wrapper builds it."""
    kept = [(k, _str(v)) for k, v in pairs if v not in (None, "", False, 0)]
    return f"?{urlencode(kept)}" if kept else ""


def _segment(value: str) -> str:
    """A path segment as the wrapper's encodeURIComponent writes it ("/" as %2F)."""
    return quote(value, safe="!'()*")


def _str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _params(pairs: list[tuple[str, Any]]) -> dict[str, str]:
    return {k: _str(v) for k, v in pairs if v not in (None, "", False, 0)}


def _truthy(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v not in (None, "", False, 0)}


def call(
    deps: SurfaceDeps[ZengramServices], method: str, path: str, op: Callable[[ZengramApi], Reply]
) -> CallToolResult:
    api = deps.services.zengram
    with api.one_call():
        reply = run(lambda: op(api))
        brain = _brain_id(api)
    if 200 <= reply.status < 300:
        return text(json.dumps(reply.body, indent=2, ensure_ascii=False), brain=brain)
    raw = json.dumps(reply.body, separators=(",", ":"), ensure_ascii=False)
    # the path's query and the body's error quote the caller's arguments (domain/echo.py)
    said = safe_echo(f"Error: API {method} {_said(path)}: {reply.status} {raw}")
    return text(said, error=True, brain=brain)


def _said(path: str) -> str:
    """`path` as the error quotes it: percent-encoded as sent, unless that hides a credential from
    the scrub (`Bearer%20cairn_…`, a URL's `user%3Apassword%40`): then decoded, so it is scrubbed."""
    plain = unquote_plus(path)
    return path if scrub(plain) == plain else plain


def _brain_id(api: ZengramApi) -> str | None:
    try:
        return api.brain().id
    except Exception:  # no brain yet, or none the caller may see: nothing to name
        return None


def store(deps: SurfaceDeps[ZengramServices], x: a.StoreArgs) -> CallToolResult:
    if not x.type:
        return local_error(f'"type" is required (one of: {", ".join(MEMORY_TYPES)})')
    if not x.content or js_blank(x.content):
        return local_error('"content" is required (non-empty string)')
    body = _truthy(
        {
            "type": x.type,
            "content": x.content,
            "source_agent": x.source_agent or DEFAULT_AGENT,
            "client_id": x.client_id,
            "category": x.category,
            "importance": x.importance,
            "key": x.key,
            "subject": x.subject,
            "status_value": x.status_value,
            "knowledge_category": x.knowledge_category,
            "valid_from": x.valid_from,
            "valid_to": x.valid_to,
        }
    )
    return call(deps, "POST", "/memory", lambda api: api.store(body))


def search(deps: SurfaceDeps[ZengramServices], x: a.SearchArgs) -> CallToolResult:
    if not x.query or js_blank(x.query):
        return local_error('"query" is required (non-empty string)')
    pairs: list[tuple[str, Any]] = [
        ("q", x.query),
        ("type", x.type),
        ("source_agent", x.source_agent),
        ("client_id", x.client_id),
        ("limit", x.limit),
        ("format", x.format or "compact"),
        ("include_superseded", "true" if x.include_superseded else None),
        ("knowledge_category", x.knowledge_category),
        ("at_time", x.at_time),
        ("read_only", "true" if request_meta.flag(request_meta.READ_ONLY) else None),
    ]
    return call(deps, "GET", f"/memory/search{_query(pairs)}", lambda api: api.search(_params(pairs)))


def briefing(deps: SurfaceDeps[ZengramServices], x: a.BriefingArgs) -> CallToolResult:
    pairs: list[tuple[str, Any]] = [
        ("since", x.since),
        ("agent", x.agent or DEFAULT_AGENT),
        ("include", x.include),
        ("format", x.format or "compact"),
        ("limit", x.limit),
    ]
    return call(deps, "GET", f"/briefing{_query(pairs)}", lambda api: api.briefing(_params(pairs)))


def query(deps: SurfaceDeps[ZengramServices], x: a.QueryArgs) -> CallToolResult:
    pairs: list[tuple[str, Any]] = [
        ("type", x.type),
        ("source_agent", x.source_agent),
        ("category", x.category),
        ("client_id", x.client_id),
        ("since", x.since),
        ("key", x.key),
        ("subject", x.subject),
    ]
    return call(deps, "GET", f"/memory/query{_query(pairs)}", lambda api: api.query(_params(pairs)))


def stats(deps: SurfaceDeps[ZengramServices], _: a.NoArgs) -> CallToolResult:
    return call(deps, "GET", "/stats", lambda api: api.stats())


def consolidate(deps: SurfaceDeps[ZengramServices], x: a.ConsolidateArgs) -> CallToolResult:
    # The wrapper runs a consolidation for anything but status or a job to poll; a caller that
    # meant to poll, or misspelt the action, is told so and nothing starts.
    if x.action not in (None, "", "run", "status", "job"):
        return local_error('"action" must be one of: run, status, job')
    if x.action == "job" and not x.job_id:
        return local_error('"job_id" is required for action "job"')
    if x.action == "status":
        return call(deps, "GET", "/consolidate/status", lambda api: api.consolidation_status())
    if x.action == "job" and x.job_id:
        job_id = x.job_id
        path = f"/consolidate/job/{_segment(job_id)}"
        return call(deps, "GET", path, lambda api: api.consolidation_job(job_id))
    query_string = "?sync=true" if x.sync else ""
    params = {"sync": "true"} if x.sync else {}
    return call(deps, "POST", f"/consolidate{query_string}", lambda api: api.consolidate(params))


def delete(deps: SurfaceDeps[ZengramServices], x: a.DeleteArgs) -> CallToolResult:
    if not x.memory_id:
        return local_error("memory_id is required")
    memory_id = x.memory_id
    body = _truthy({"reason": x.reason})
    return call(deps, "DELETE", f"/memory/{_segment(memory_id)}", lambda api: api.delete(memory_id, body))


def update(deps: SurfaceDeps[ZengramServices], x: a.UpdateArgs) -> CallToolResult:
    if not x.memory_id:
        return local_error("memory_id is required")
    body = _truthy(
        {
            "content": x.content,
            "importance": x.importance,
            "knowledge_category": x.knowledge_category,
            "metadata": x.metadata,
        }
    )
    if not body:
        return local_error(
            "must provide at least one field to update (content, importance, knowledge_category, metadata)"
        )
    memory_id = x.memory_id
    return call(deps, "PATCH", f"/memory/{_segment(memory_id)}", lambda api: api.update(memory_id, body))


def entities(deps: SurfaceDeps[ZengramServices], x: a.EntitiesArgs) -> CallToolResult:
    if x.action in ("get", "memories") and not x.name:
        return local_error("name is required for get/memories actions")
    if x.action == "stats":
        return call(deps, "GET", "/entities/stats", lambda api: api.entity_stats())
    if x.action in ("get", "memories"):
        name = x.name or ""
        path = f"/entities/{_segment(name)}"
        if x.action == "get":
            return call(deps, "GET", path, lambda api: api.entity(name))
        pairs: list[tuple[str, Any]] = [("limit", x.limit)]
        return call(
            deps,
            "GET",
            f"{path}/memories{_query(pairs)}",
            lambda api: api.entity_memories(name, _params(pairs)),
        )
    pairs = [("type", x.type), ("limit", x.limit)]
    return call(deps, "GET", f"/entities{_query(pairs)}", lambda api: api.entities(_params(pairs)))


def export(deps: SurfaceDeps[ZengramServices], x: a.ExportArgs) -> CallToolResult:
    pairs: list[tuple[str, Any]] = [
        ("client_id", x.client_id),
        ("type", x.type),
        ("since", x.since),
        ("limit", x.limit or 500),
    ]
    return call(deps, "GET", f"/export{_query(pairs)}", lambda api: api.export(_params(pairs)))


def import_(deps: SurfaceDeps[ZengramServices], x: a.ImportArgs) -> CallToolResult:
    body = {"data": x.data}
    return call(deps, "POST", "/export/import", lambda api: api.import_new(body))


def reflect(deps: SurfaceDeps[ZengramServices], x: a.ReflectArgs) -> CallToolResult:
    if not x.topic or js_blank(x.topic):
        return local_error(TOPIC_REQUIRED)
    body = _given({"topic": x.topic, "client_id": x.client_id, "limit": _number(x.limit)})
    return call(deps, "POST", "/reflect", lambda api: api.reflect(body))


def research(deps: SurfaceDeps[ZengramServices], x: a.ResearchArgs) -> CallToolResult:
    if not x.topic or js_blank(x.topic):
        return local_error(TOPIC_REQUIRED)
    if x.max_iterations is not None and not float(x.max_iterations).is_integer():
        return local_error('"max_iterations" must be an integer (1-4)')
    body = _given({"topic": x.topic, "client_id": x.client_id, "max_iterations": _number(x.max_iterations)})
    return call(deps, "POST", "/research", lambda api: api.research(body))


def _given(body: dict[str, Any]) -> dict[str, Any]:
    """What JSON.stringify sends: every value but the undefined ones."""
    return {k: v for k, v in body.items() if v is not None}


def _number(value: float | None) -> float | int | None:
    return int(value) if value is not None and float(value).is_integer() else value


def _memory(x: a.DeleteArgs | a.UpdateArgs, result: CallToolResult) -> AuditTarget:
    return AuditTarget(brain_id=(result.meta or {}).get(BRAIN_META), target=x.memory_id)


def _brain(_: ToolArgs, result: CallToolResult) -> AuditTarget:
    return AuditTarget(brain_id=(result.meta or {}).get(BRAIN_META))


def _consolidated(x: a.ConsolidateArgs) -> str:
    """Reporting on consolidation reads (as `GET /consolidate/status` and `/consolidate/job/{id}`
    do over HTTP); anything else runs one."""
    return READ if x.action in ("status", "job") else WRITE


def spec(
    name: str,
    description: str,
    args: type[Any],
    scope: str,
    handler: Any,
    audit: Any = None,
    scope_of: Any = None,
) -> ToolSpec[Any]:
    return ToolSpec(
        name=name,
        description=description,
        args=args,
        output=None,
        scope=scope,
        handler=handler,
        audit=audit or (_brain if scope != READ or scope_of else None),
        scope_of=scope_of,
    )


ZENGRAM_TOOLS: tuple[ToolSpec[Any], ...] = (
    spec("brain_store", d.STORE, a.StoreArgs, WRITE, store),
    spec("brain_search", d.SEARCH, a.SearchArgs, READ, search),
    spec("brain_briefing", d.BRIEFING, a.BriefingArgs, READ, briefing),
    spec("brain_query", d.QUERY, a.QueryArgs, READ, query),
    spec("brain_stats", d.STATS, a.NoArgs, READ, stats),
    spec("brain_consolidate", d.CONSOLIDATE, a.ConsolidateArgs, READ, consolidate, scope_of=_consolidated),
    spec("brain_entities", d.ENTITIES, a.EntitiesArgs, READ, entities),
    spec("brain_delete", d.DELETE, a.DeleteArgs, WRITE, delete, _memory),
    spec("brain_update", d.UPDATE, a.UpdateArgs, WRITE, update, _memory),
    spec("brain_export", d.EXPORT, a.ExportArgs, READ, export),
    spec("brain_import", d.IMPORT, a.ImportArgs, WRITE, import_),
    spec("brain_reflect", d.REFLECT, a.ReflectArgs, READ, reflect),
    spec("brain_research", d.RESEARCH, a.ResearchArgs, READ, research),
)
