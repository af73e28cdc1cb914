"""The canonical surface: Jeffs Brain's `memory_*` tools (seed 000), translation only.

Each handler resolves the brain, calls one service and shapes the seed's output: a short summary
in content[0].text and the raw payload in structuredContent. Argument rules live in the models
below and are advertised verbatim by tools/list; errors follow errors.py.

Where the seed contradicts itself, the pinned wire types win: memory_ingest_file (and the server
path of memory_ingest_url) return IngestResponse with `status: "completed"` (or "queued" once
ingest runs as a job), not the `'ingested'` of the tool's sketch. memory_ingest_url always takes the
server path. Paths on the wire are the brain's canonical relative paths (`memory/global/x.md`, as
the store protocol has them); the seed's leading-slash spelling is accepted on input.
memory_ingest_file's `as` also takes `html` (the server extracts HTML files too; a superset of the
Jeffs schema's four kinds, so every Jeffs call stays valid). memory_recall with a session_id returns
the session recall payload `{chunks: [...]}` (entrypoints/wire_sessions.py, docs/SESSIONS.md); its
outputSchema admits both of its shapes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import (
    AfterValidator,
    AnyUrl,
    ConfigDict,
    Field,
    RootModel,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)

from cairn import __version__
from cairn.auth.principal import ADMIN, READ, WRITE
from cairn.entrypoints.mcp.ask_tool import ask_tool
from cairn.entrypoints.mcp.audit import tool_audit
from cairn.entrypoints.mcp.errors import error_result
from cairn.entrypoints.mcp.memory_tools import memory_tools
from cairn.entrypoints.mcp.tools import BrainRef, SurfaceDeps, SurfaceServer, ToolArgs, make_tool, ok_result
from cairn.entrypoints.mcp.wire import IngestUrlServer
from cairn.entrypoints.wire import BrainList, BrainRecord, DocumentRecord, IngestResponse, SearchResponse
from cairn.entrypoints.wire_sessions import SessionRecallResponse
from cairn.services.search import SearchHit, SearchResult

SUMMARY_HITS = 5
SUMMARY_CHARS = 320

_url_adapter: TypeAdapter[AnyUrl] = TypeAdapter(AnyUrl)


def _valid_url(value: str) -> str:
    try:
        _url_adapter.validate_python(value)
    except ValidationError:
        raise ValueError("must be a valid URL") from None
    return value  # the caller's spelling, not pydantic's normalised form


Query = Annotated[str, Field(min_length=1, max_length=4096, description="What to look for.")]
Url = Annotated[str, AfterValidator(_valid_url), WithJsonSchema({"type": "string", "format": "uri"})]
Tag = Annotated[str, Field(min_length=1, max_length=64)]


class SearchArgs(ToolArgs):
    query: Query
    brain: BrainRef = None
    top_k: Annotated[int, Field(ge=1, le=100, description="How many hits to return.")] = 10
    scope: Annotated[
        Literal["all", "global", "project", "agent"] | None,
        Field(description="Memory namespace: memory/global/, memory/project/…, memory/agent/…, or all."),
    ] = None
    sort: Annotated[
        Literal["relevance", "recency", "relevance_then_recency"] | None,
        Field(
            description="Ranking: fused relevance (default), newest first, or relevance with recency ties."
        ),
    ] = None


class RecallArgs(ToolArgs):
    query: Query
    brain: BrainRef = None
    scope: Annotated[Literal["global", "project", "agent"] | None, Field(description="Memory namespace.")] = (
        None
    )
    session_id: Annotated[
        str | None, Field(description="Session whose recent context weights the recall.")
    ] = None
    top_k: Annotated[int | None, Field(ge=1, le=50, description="How many hits to return (default 10).")] = (
        None
    )


class RememberArgs(ToolArgs):
    content: Annotated[str, Field(min_length=1, max_length=5_000_000, description="Markdown body.")]
    title: Annotated[
        str | None, Field(min_length=1, max_length=512, description="Title (default: the first heading).")
    ] = None
    brain: BrainRef = None
    tags: Annotated[list[Tag] | None, Field(max_length=64, description="Tags, stored as metadata.tags.")] = (
        None
    )
    path: Annotated[
        str | None,
        Field(min_length=1, max_length=1024, description="Document path (default memory/global/<slug>.md)."),
    ] = None


class IngestFileArgs(ToolArgs):
    path: Annotated[str, Field(description="Absolute or relative local path.")]
    brain: BrainRef = None
    as_: Annotated[
        Literal["markdown", "text", "pdf", "json", "html"] | None,
        Field(alias="as", description="Content type (default: inferred from the extension)."),
    ] = None


class IngestUrlArgs(ToolArgs):
    url: Annotated[Url, Field(description="The http(s) URL to fetch.")]
    brain: BrainRef = None


class CreateBrainArgs(ToolArgs):
    name: Annotated[str, Field(min_length=1, max_length=128, description="Display name.")]
    slug: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=64,
            pattern=r"^[a-z0-9][a-z0-9-]*$",
            description="Default: from the name.",
        ),
    ] = None
    visibility: Literal["private", "tenant", "public"] = "private"


class NoArgs(ToolArgs):
    pass


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


class RecallOutput(RootModel[SearchResponse | SessionRecallResponse]):
    """memory_recall's structuredContent: SearchResponse without session_id, `{chunks}` with one."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


class CanonicalTools:
    def __init__(self, deps: SurfaceDeps) -> None:
        self.c = deps.container
        self.local_files = deps.local_files

    def search(self, a: SearchArgs) -> CallToolResult:
        brain = self.c.brains.resolve(a.brain)
        result = self.c.search.search(
            brain, a.query, top_k=a.top_k, scope=a.scope, sort=a.sort or "relevance"
        )
        return ok_result(search_summary(result), SearchResponse.of(result))

    def recall(self, a: RecallArgs) -> CallToolResult:
        if a.session_id:
            brain = self.c.brains.resolve(a.brain)
            chunks = self.c.sessions.recall(brain, a.session_id, a.query, top_k=a.top_k or 10, scope=a.scope)
            return ok_result(recall_summary(a.query, chunks), SessionRecallResponse.of(chunks))
        return self.search(SearchArgs(query=a.query, brain=a.brain, top_k=a.top_k or 10, scope=a.scope))

    def remember(self, a: RememberArgs) -> CallToolResult:
        brain = self.c.brains.resolve(a.brain)
        doc = self.c.ingest.remember(brain, a.content, title=a.title, tags=a.tags, path=a.path)
        return ok_result(f"Remembered {doc.id} at {doc.path}", DocumentRecord.of(doc))

    def ingest_file(self, a: IngestFileArgs) -> CallToolResult:
        brain = self.c.brains.resolve(a.brain)
        uploads = self.c.adapters.uploads  # set: `path` is an upload key (services/ingest.py)
        result = IngestResponse.of(
            self.c.ingest.ingest_file(brain, a.path, self.local_files, kind=a.as_, uploads=uploads)
        )
        return ok_result(_ingest_summary(a.path, result), result)

    def ingest_url(self, a: IngestUrlArgs) -> CallToolResult:
        brain = self.c.brains.resolve(a.brain)
        result = IngestResponse.of(self.c.ingest.ingest_url(brain, a.url))
        return ok_result(_ingest_summary(a.url, result), IngestUrlServer(result=result))

    def create_brain(self, a: CreateBrainArgs) -> CallToolResult:
        brain = BrainRecord.of(self.c.brains.create(a.name, a.slug, a.visibility))
        return ok_result(f"Created brain {brain.slug} ({brain.id}, {brain.visibility})", brain)

    def list_brains(self, _: NoArgs) -> CallToolResult:
        items = [BrainRecord.of(b) for b in self.c.brains.list()]
        lines = [f"- {b.slug} ({b.id}): {b.name}" for b in items]
        return ok_result("\n".join([f"{len(items)} brain(s)", *lines]), BrainList(items=items))


def _ingest_summary(source: str, r: IngestResponse) -> str:
    reused = ", unchanged" if r.reused else ""
    return (
        f"Ingested {source} as {r.path} ({r.document_id}, {r.chunk_count} chunks{reused}); status {r.status}"
    )


def build_canonical(deps: SurfaceDeps) -> SurfaceServer:
    t = CanonicalTools(deps)
    tools = [
        ask_tool(deps),
        make_tool(
            "memory_search",
            "Search memory notes in a brain and return matching note content with citations. scope selects "
            "the memory namespace, and sort controls whether relevance or recency wins.",
            SearchArgs,
            t.search,
            SearchResponse,
        ),
        make_tool(
            "memory_recall",
            "Recall memories for a query. Pass session_id to weight recent session context; otherwise uses "
            "the dedicated memory-search surface. scope selects the memory namespace rather than a generic "
            "metadata filter.",
            RecallArgs,
            t.recall,
            RecallOutput,
        ),
        make_tool(
            "memory_remember",
            "Store a new memory (markdown document) in the brain. Returns the created document id and path.",
            RememberArgs,
            t.remember,
            DocumentRecord,
        ),
        make_tool(
            "memory_ingest_file",
            "Ingest a local file (<= 25 MB) into the brain. Returns the ingest result.",
            IngestFileArgs,
            t.ingest_file,
            IngestResponse,
        ),
        make_tool(
            "memory_ingest_url",
            "Fetch a URL and ingest its contents into the brain. Uses the server-side /ingest/url endpoint "
            "when available; otherwise fetches locally and creates a document.",
            IngestUrlArgs,
            t.ingest_url,
            IngestUrlServer,
        ),
        make_tool(
            "memory_create_brain",
            "Create a new brain. Generates a slug from the name if one is not provided.",
            CreateBrainArgs,
            t.create_brain,
            BrainRecord,
        ),
        make_tool(
            "memory_list_brains",
            "List all brains the caller has access to.",
            NoArgs,
            t.list_brains,
            BrainList,
        ),
        *memory_tools(deps),
    ]
    return SurfaceServer(
        "cairn",
        version=__version__,
        tools=tools,
        render_error=error_result,
        scopes=CANONICAL_SCOPES,
        audit=tool_audit(deps.container),
    )


CANONICAL_SCOPES = {
    "memory_list_brains": READ,
    "memory_create_brain": ADMIN,
    "memory_search": READ,
    "memory_recall": READ,
    "memory_ask": READ,
    "memory_remember": WRITE,
    "memory_ingest_file": WRITE,
    "memory_ingest_url": WRITE,
    "memory_extract": WRITE,
    "memory_reflect": WRITE,
    "memory_consolidate": WRITE,
}
"""The scope each tool needs; a tool missing here is refused to every authenticated caller."""
