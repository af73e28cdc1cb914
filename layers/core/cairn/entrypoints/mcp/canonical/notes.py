"""memory_search, memory_recall, memory_remember, memory_ingest_file, memory_ingest_url,
memory_create_brain and memory_list_brains: each resolves the brain, calls one service and shapes
the seed's output (a short summary in content[0].text, the payload as structuredContent)."""

from __future__ import annotations

from mcp_types import CallToolResult

from cairn.auth.principal import ADMIN, READ, WRITE
from cairn.entrypoints.mcp.canonical import descriptions
from cairn.entrypoints.mcp.canonical.args import (
    CreateBrainArgs,
    IngestFileArgs,
    IngestUrlArgs,
    NoArgs,
    RecallArgs,
    RememberArgs,
    SearchArgs,
)
from cairn.entrypoints.mcp.canonical.outputs import IngestUrlServer, RecallOutput
from cairn.entrypoints.mcp.canonical.services import CanonicalServices
from cairn.entrypoints.mcp.kit import AuditTarget, SurfaceDeps, ToolSpec, ok_result
from cairn.entrypoints.wire import (
    BrainList,
    BrainRecord,
    DocumentRecord,
    IngestResponse,
    SearchResponse,
    forwarded_tags,
)
from cairn.entrypoints.wire_sessions import SessionRecallResponse
from cairn.ingest.fetch import redact_url
from cairn.services.search.service import SearchHit, SearchResult

SUMMARY_HITS = 5
SUMMARY_CHARS = 320


def _hit_lines(hits: list[SearchHit]) -> str:
    """`#N score=S path` then the hit's first 320 characters, for the top five hits."""
    return "\n\n".join(
        f"#{n} score={hit.score:.4f} {hit.path}\n{hit.content[:SUMMARY_CHARS]}"
        for n, hit in enumerate(hits[:SUMMARY_HITS], start=1)
    )


def search_summary(result: SearchResult) -> str:
    return _hit_lines(result.hits) if result.hits else f"No memory notes match {result.query!r}."


def recall_summary(query: str, chunks: list[SearchHit]) -> str:
    """Session mode of memory_recall: the same lines as search_summary."""
    return _hit_lines(chunks) if chunks else f"No memories match {query!r}."


def _ingest_summary(source: str, r: IngestResponse) -> str:
    reused = ", unchanged" if r.reused else ""
    return (
        f"Ingested {source} as {r.path} ({r.document_id}, {r.chunk_count} chunks{reused}); status {r.status}"
    )


def search(deps: SurfaceDeps[CanonicalServices], a: SearchArgs) -> CallToolResult:
    c = deps.services
    brain = c.brains.resolve(a.brain)
    result = c.search.search(brain, a.query, top_k=a.top_k, scope=a.scope, sort=a.sort or "relevance")
    return ok_result(search_summary(result), SearchResponse.of(result, brain.slug))


def recall(deps: SurfaceDeps[CanonicalServices], a: RecallArgs) -> CallToolResult:
    if a.session_id:
        c = deps.services
        brain = c.brains.resolve(a.brain)
        chunks = c.sessions.recall(brain, a.session_id, a.query, top_k=a.top_k or 10, scope=a.scope)
        return ok_result(recall_summary(a.query, chunks), SessionRecallResponse.of(chunks, brain.slug))
    return search(deps, SearchArgs(query=a.query, brain=a.brain, top_k=a.top_k or 10, scope=a.scope))


def remember(deps: SurfaceDeps[CanonicalServices], a: RememberArgs) -> CallToolResult:
    c = deps.services
    brain = c.brains.resolve(a.brain)
    tags = forwarded_tags(a.tags)
    doc = c.ingest.remember(brain, a.content, title=a.title, tags=tags, path=a.path)
    return ok_result(f"Remembered {doc.id} at {doc.path}", DocumentRecord.model_validate(doc))


def ingest_file(deps: SurfaceDeps[CanonicalServices], a: IngestFileArgs) -> CallToolResult:
    c = deps.services
    brain = c.brains.resolve(a.brain)
    uploads = c.uploads  # set: `path` is an upload key (services/ingest/service.py)
    result = IngestResponse.of(
        c.ingest.ingest_file(brain, a.path, deps.local_files, kind=a.as_, uploads=uploads)
    )
    return ok_result(_ingest_summary(a.path, result), result)


def ingest_url(deps: SurfaceDeps[CanonicalServices], a: IngestUrlArgs) -> CallToolResult:
    c = deps.services
    brain = c.brains.resolve(a.brain)
    result = IngestResponse.of(c.ingest.ingest_url(brain, a.url))
    return ok_result(_ingest_summary(redact_url(a.url), result), IngestUrlServer(result=result))


def create_brain(deps: SurfaceDeps[CanonicalServices], a: CreateBrainArgs) -> CallToolResult:
    brain = BrainRecord.model_validate(deps.services.brains.create(a.name, a.slug, a.visibility))
    return ok_result(f"Created brain {brain.slug} ({brain.id}, {brain.visibility})", brain)


def list_brains(deps: SurfaceDeps[CanonicalServices], _: NoArgs) -> CallToolResult:
    items = [BrainRecord.model_validate(b) for b in deps.services.brains.list()]
    lines = [f"- {b.slug} ({b.id}): {b.name}" for b in items]
    return ok_result("\n".join([f"{len(items)} brain(s)", *lines]), BrainList(items=items))


def created_brain(_: CreateBrainArgs, result: CallToolResult) -> AuditTarget:
    """The brain the call created (its id is in the result)."""
    assert result.structured_content is not None
    return AuditTarget(brain_id=str(result.structured_content["id"]))


MEMORY_SEARCH = ToolSpec(
    name="memory_search",
    description=descriptions.SEARCH,
    args=SearchArgs,
    output=SearchResponse,
    scope=READ,
    handler=search,
)

MEMORY_RECALL = ToolSpec(
    name="memory_recall",
    description=descriptions.RECALL,
    args=RecallArgs,
    output=RecallOutput,
    scope=READ,
    handler=recall,
)

MEMORY_REMEMBER = ToolSpec(
    name="memory_remember",
    description=descriptions.REMEMBER,
    args=RememberArgs,
    output=DocumentRecord,
    scope=WRITE,
    handler=remember,
    audit=lambda a, _: AuditTarget(brain=a.brain, target=a.path),
)

MEMORY_INGEST_FILE = ToolSpec(
    name="memory_ingest_file",
    description=descriptions.INGEST_FILE,
    args=IngestFileArgs,
    output=IngestResponse,
    scope=WRITE,
    handler=ingest_file,
    audit=lambda a, _: AuditTarget(brain=a.brain, target=a.path or None),
)

MEMORY_INGEST_URL = ToolSpec(
    name="memory_ingest_url",
    description=descriptions.INGEST_URL,
    args=IngestUrlArgs,
    output=IngestUrlServer,
    scope=WRITE,
    handler=ingest_url,
    audit=lambda a, _: AuditTarget(brain=a.brain, target=redact_url(a.url)),  # no credentials kept
)

MEMORY_CREATE_BRAIN = ToolSpec(
    name="memory_create_brain",
    description=descriptions.CREATE_BRAIN,
    args=CreateBrainArgs,
    output=BrainRecord,
    scope=ADMIN,
    handler=create_brain,
    audit=created_brain,
)

MEMORY_LIST_BRAINS = ToolSpec(
    name="memory_list_brains",
    description=descriptions.LIST_BRAINS,
    args=NoArgs,
    output=BrainList,
    scope=READ,
    handler=list_brains,
)
