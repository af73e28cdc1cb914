"""The 17 `brain_*` tools. Each translates: the arguments to PageService, GraphService, GapService,
RawDataService, PageSearch and the assertion rules, the answer to gbrain's text.

JSON answers are pretty-printed (2-space indent, non-ASCII kept); brain_get answers the rendered
page, brain_put / brain_link / brain_link_close one line. Page names in answers are always
collection-qualified (`coll::slug`). Every mutation passes its collection's gate, a restoring
collection refusing before anything else is checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from mcp_types import CallToolResult, TextContent

from cairn.auth.principal import READ, WRITE
from cairn.domain.errors import CairnError, InvalidInput, NotFound
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain
from cairn.domain.pages import MAX_LIMIT, timeline_entries
from cairn.entrypoints.mcp.gbrain import args as a
from cairn.entrypoints.mcp.gbrain import check
from cairn.entrypoints.mcp.gbrain import descriptions as d
from cairn.entrypoints.mcp.gbrain.errors import AmbiguousLink
from cairn.entrypoints.mcp.gbrain.services import GbrainServices
from cairn.entrypoints.mcp.kit import SurfaceDeps, ToolSpec, audit_meta, declare
from cairn.services.gbrain import assertions
from cairn.services.gbrain.gaps import MAX_CONTEXT, KnowledgeGap
from cairn.services.gbrain.page_search import PageHit, PageSearch
from cairn.services.gbrain.pages import Page
from cairn.services.gbrain.raw_data import MAX_SOURCE, RawDataExists

BACKLINKS_LIMIT = 100
MAX_GRAPH_DEPTH = 10


# -- answers ---------------------------------------------------------------------------------------


def text(body: str, *, brain: Brain | None = None, target: str | None = None) -> CallToolResult:
    result = CallToolResult(content=[TextContent(type="text", text=body)])
    if brain is None:
        return result
    return audit_meta(result, brain.id, target)


def as_json(value: Any, *, brain: Brain | None = None, target: str | None = None) -> CallToolResult:
    return text(json.dumps(value, indent=2, ensure_ascii=False), brain=brain, target=target)


def stamp(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def hit_json(hit: PageHit, *, snippet: bool = False) -> dict[str, Any]:
    """A search or query result; `collection` names the collection (brain) the page is in, as
    brain_collections names it and as its slug is qualified (Cairn's addition)."""
    page = hit.page
    out: dict[str, Any] = {"slug": page.canonical, "title": page.title, "summary": page.summary}
    if snippet:
        out["snippet"] = page.summary
    return {**out, "score": hit.score, "wing": page.wing, "collection": page.collection}


# -- shared steps ----------------------------------------------------------------------------------


def gate_first(c: GbrainServices, reference: str) -> None:
    """Refuse at once when `reference` already names a page of a restoring collection; anything
    else wrong with it is reported in its turn."""
    try:
        brain, _ = c.pages.resolve(reference)
    except CairnError:
        return
    c.pages.refuse_if_restoring(brain)


def page_names(c: GbrainServices, brain: Brain, doc_ids: Iterable[str]) -> dict[str, Page]:
    """The pages among `doc_ids`, by document id."""
    return c.pages.pages_by_id(brain, doc_ids, c.pages.name_of(brain))


def all_pages(c: GbrainServices, brains: list[Brain] | None = None) -> list[Page]:
    name = c.pages.namer()
    brains = c.pages.collections() if brains is None else brains
    return [page for brain in brains for page in c.pages.pages_of(brain, name(brain))]


def asserted(pages: Iterable[Page]) -> list[assertions.AssertedPage]:
    return [
        assertions.AssertedPage(
            p.canonical, p.title, p.text, p.document.updated_at, p.document.brain_id, p.document.id, p.version
        )
        for p in pages
    ]


def page_search(c: GbrainServices) -> PageSearch:
    return PageSearch(c.pages, c.search, c.graph, c.gaps)


# -- read tools ------------------------------------------------------------------------------------


def get(deps: SurfaceDeps[GbrainServices], x: a.SlugArgs) -> CallToolResult:
    return text(deps.services.pages.get(x.slug).render())


def search(deps: SurfaceDeps[GbrainServices], x: a.SearchArgs) -> CallToolResult:
    c = deps.services
    brain = c.pages.collection(x.collection)
    hits = page_search(c).keyword(brain, x.query, wing=x.wing, limit=x.limit)
    return as_json([hit_json(h, snippet=True) for h in hits])


def query(deps: SurfaceDeps[GbrainServices], x: a.QueryArgs) -> CallToolResult:
    c = deps.services
    brain = c.pages.collection(x.collection)
    expand = (x.depth or "").strip().lower() == "auto"
    hits = page_search(c).query(brain, x.query, wing=x.wing, limit=x.limit, expand=expand)
    return as_json([hit_json(h) for h in hits])


def list_pages(deps: SurfaceDeps[GbrainServices], x: a.ListArgs) -> CallToolResult:
    pages = deps.services.pages.list(x.collection, wing=x.wing, page_type=x.page_type, limit=x.limit)
    return as_json([{"slug": p.canonical, "type": p.type, "summary": p.summary} for p in pages])


def backlinks(deps: SurfaceDeps[GbrainServices], x: a.BacklinksArgs) -> CallToolResult:
    c = deps.services
    temporal = check.temporal(x.temporal)
    brain, page = c.pages.locate(x.slug)
    limit = min(BACKLINKS_LIMIT if x.limit is None else x.limit, MAX_LIMIT)
    asked = limit
    while True:  # links from pages deleted since do not count toward the limit
        links = c.graph.backlinks(brain, page.document.id, temporal=temporal, limit=asked)
        names = page_names(c, brain, (link.source_id for link in links))
        live = [link for link in links if link.source_id in names]
        if len(live) >= limit or len(links) < asked or asked >= MAX_LIMIT:
            break
        asked = min(asked * 2, MAX_LIMIT)
    return as_json(
        [
            {
                "id": link.id,
                "from_slug": names[link.source_id].canonical,
                "relationship": link.kind,
                "valid_from": link.valid_from,
                "valid_until": link.valid_until,
            }
            for link in live[:limit]
        ]
    )


def graph(deps: SurfaceDeps[GbrainServices], x: a.GraphArgs) -> CallToolResult:
    c = deps.services
    temporal = check.temporal(x.temporal)
    brain, root = c.pages.locate(x.slug)
    names = {root.document.id: root}  # each node's page, read once: while walking, then shown

    def live(ids: list[str]) -> set[str]:
        names.update(page_names(c, brain, [i for i in ids if i not in names]))
        return {i for i in ids if i in names}

    hood = c.graph.graph(
        brain, root.document.id, depth=min(x.depth, MAX_GRAPH_DEPTH), temporal=temporal, live=live
    )
    nodes = [
        {"slug": names[n].canonical, "type": names[n].type, "title": names[n].title}
        for n in hood.nodes
        if n in names
    ]
    edges = [
        {
            "from": names[e.source_id].canonical,
            "to": names[e.target_id].canonical,
            "relationship": e.kind,
            "valid_from": e.valid_from,
            "valid_until": e.valid_until,
        }
        for e in hood.edges
        if e.source_id in names and e.target_id in names
    ]
    return as_json({"nodes": nodes, "edges": edges})


def check_contradictions(deps: SurfaceDeps[GbrainServices], x: a.CheckArgs) -> CallToolResult:
    c = deps.services
    focus = c.pages.get(x.slug).canonical if x.slug is not None else None
    found = c.assertions.contradictions(asserted(all_pages(c)), focus=focus)
    return as_json(
        [
            {
                "page_slug": f.page_slug,
                "other_page_slug": f.other_page_slug,
                "type": f.type,
                "description": f.description,
                "detected_at": stamp(f.detected_at),
            }
            for f in found
        ]
    )


def timeline(deps: SurfaceDeps[GbrainServices], x: a.TimelineArgs) -> CallToolResult:
    page = deps.services.pages.get(x.slug)
    entries = timeline_entries(page.text)[: min(x.limit, MAX_LIMIT)]
    return as_json({"slug": page.canonical, "entries": entries})


def gaps(deps: SurfaceDeps[GbrainServices], x: a.GapsArgs) -> CallToolResult:
    c = deps.services
    limit = min(x.limit, MAX_LIMIT)
    found: list[KnowledgeGap] = []
    if limit:
        for brain in c.pages.collections():
            found += c.gaps.list(brain, resolved=x.resolved, limit=limit)
    found.sort(key=lambda g: (g.detected_at, g.id), reverse=True)
    return as_json([gap_json(g) for g in found[:limit]])


def gap_json(gap: KnowledgeGap) -> dict[str, Any]:
    return {
        "id": gap.id,
        "page_id": gap.page_id,
        "query_hash": gap.query_hash,
        "context": "",
        "confidence_score": gap.confidence_score,
        "sensitivity": gap.sensitivity,
        "resolved_at": stamp(gap.resolved_at),
        "resolved_by_slug": gap.resolved_by,
        "detected_at": stamp(gap.detected_at),
    }


def stats(deps: SurfaceDeps[GbrainServices], _: a.NoArgs) -> CallToolResult:
    """Over every collection the caller may read (see docs/GBRAIN.md for what each count is)."""
    c = deps.services
    brains = c.pages.collections()
    pages = all_pages(c, brains)
    assertion_count, contradiction_count = c.assertions.stats(asserted(pages))
    return as_json(
        {
            "page_count": len(pages),
            "link_count": sum(
                sum(1 for _ in c.graph.links.outgoing_numbered(p.document.brain_id, p.document.id))
                for p in pages
            ),
            "assertion_count": assertion_count,
            "contradiction_count": contradiction_count,
            "gap_count": sum(c.gaps.count(b) for b in brains),
            "embedding_count": sum(p.document.chunk_count for p in pages),
            "active_model": c.search.embedder.model_id,
            "db_size_bytes": sum(p.document.byte_size for p in pages),
        }
    )


def collections(deps: SurfaceDeps[GbrainServices], _: a.NoArgs) -> CallToolResult:
    c = deps.services
    name = c.pages.namer()
    brains = sorted(c.pages.collections(), key=name)
    try:
        target: str | None = c.pages.write_target().id if brains else None
    except CairnError:
        target = None
    out = []
    for brain in brains:
        state = c.pages.state(brain)
        out.append(
            {
                "name": name(brain),
                "root_path": None,
                "state": state.state,
                "writable": c.pages.writable(brain),
                "is_write_target": brain.id == target,
                "page_count": c.pages.page_count(brain),
                "last_sync_at": None,
                "embedding_queue_depth": 0,
                "ignore_parse_errors": None,
                "needs_full_sync": state.needs_full_sync,
                "recovery_in_progress": False,
                "integrity_blocked": None,
                "restore_in_progress": state.state == "restoring",
            }
        )
    return as_json(out)


# -- write tools -----------------------------------------------------------------------------------


def put(deps: SurfaceDeps[GbrainServices], x: a.PutArgs) -> CallToolResult:
    c = deps.services
    outcome = c.pages.first_collection(lambda: c.pages.put(x.slug, x.content, x.expected_version))
    page = outcome.page
    verb = "Created" if outcome.created else "Updated"
    brain = c.brains.get(page.document.brain_id)
    return text(f"{verb} {page.canonical} (version {page.version})", brain=brain, target=page.canonical)


def link(deps: SurfaceDeps[GbrainServices], x: a.LinkArgs) -> CallToolResult:
    c = deps.services
    gate_first(c, x.from_slug)
    gate_first(c, x.to_slug)
    relationship = check.relationship(x.relationship)
    valid_from = check.validity("valid_from", x.valid_from)
    valid_until = check.validity("valid_until", x.valid_until)
    brain, source = c.pages.locate(x.from_slug)
    other, target = c.pages.locate(x.to_slug)
    if other.id != brain.id:
        raise InvalidInput(
            f"cross-collection links are not supported: {source.canonical} and {target.canonical} "
            "are in different collections"
        )
    c.pages.guard_mutation(brain)
    c.graph.link(brain, source.document.id, target.document.id, relationship, valid_from, valid_until)
    return text(
        f"Linked {source.canonical} → {target.canonical} ({relationship})",
        brain=brain,
        target=source.canonical,
    )


def link_close(deps: SurfaceDeps[GbrainServices], x: a.LinkCloseArgs) -> CallToolResult:
    c = deps.services
    holders = [b for b in c.pages.collections() if c.graph.links.numbered(b.id, x.link_id) is not None]
    if len(holders) == 1:
        c.pages.refuse_if_restoring(holders[0])
    valid_until = check.validity("valid_until", x.valid_until)
    assert valid_until is not None
    if not holders:
        raise NotFound(f"link not found: id {x.link_id}")
    if len(holders) > 1:
        raise AmbiguousLink(x.link_id, [c.pages.name_of(b) for b in holders])
    brain = holders[0]
    c.pages.guard_mutation(brain)
    c.graph.close(brain, x.link_id, valid_until)
    return text(f"Closed link {x.link_id} valid_until={valid_until}", brain=brain, target=f"link:{x.link_id}")


def tags(deps: SurfaceDeps[GbrainServices], x: a.TagsArgs) -> CallToolResult:
    c = deps.services
    found = c.pages.tags(x.slug, x.add or (), x.remove or ())
    if not x.add and not x.remove:
        return as_json(found)
    brain, page = c.pages.locate(x.slug)
    return as_json(found, brain=brain, target=page.canonical)


def gap(deps: SurfaceDeps[GbrainServices], x: a.GapArgs) -> CallToolResult:
    c = deps.services
    if x.slug is not None:
        gate_first(c, x.slug)
    if js_blank(x.query):
        raise InvalidInput("query must not be empty")
    if x.context is not None and len(x.context) > MAX_CONTEXT:
        raise InvalidInput(f"context exceeds maximum length of {MAX_CONTEXT} characters")
    page_id: str | None = None
    target: str | None = None
    if x.slug is not None:
        brain, page = c.pages.locate(x.slug)
        c.pages.refuse_if_restoring(brain)
        page_id, target = page.document.id, page.canonical
    else:
        brain = c.pages.first_collection(lambda: c.pages.collection(None))
    logged, _ = c.gaps.log(brain, x.query, page_id=page_id, context=x.context)
    body = {"id": logged.id, "query_hash": logged.query_hash, "page_id": logged.page_id}
    return as_json(body, brain=brain, target=target)


def raw(deps: SurfaceDeps[GbrainServices], x: a.RawArgs) -> CallToolResult:
    c = deps.services
    gate_first(c, x.slug)
    if js_blank(x.source):
        raise InvalidInput("source must not be empty")
    if len(x.source) > MAX_SOURCE:
        raise InvalidInput(f"source exceeds maximum length of {MAX_SOURCE} characters")
    if not isinstance(x.data, dict):
        raise InvalidInput("data must be a JSON object, not an array or scalar")
    brain, page = c.pages.locate(x.slug)
    c.pages.guard_mutation(brain)
    try:
        row = c.raw_data.put(brain, page.document.id, x.source, x.data, overwrite=x.overwrite)
    except RawDataExists:
        raise RawDataExists(
            f"raw data for source '{x.source}' already exists on '{page.canonical}'; "
            "set overwrite=true to replace"
        ) from None
    return as_json({"id": row.id}, brain=brain, target=page.canonical)


# -- declarations ----------------------------------------------------------------------------------


def spec(name: str, description: str, args: type[Any], scope: str, handler: Any) -> ToolSpec[Any]:
    return declare(name, description, args, scope, handler)


GBRAIN_TOOLS: tuple[ToolSpec[Any], ...] = (
    spec("brain_get", d.GET, a.SlugArgs, READ, get),
    spec("brain_put", d.PUT, a.PutArgs, WRITE, put),
    spec("brain_query", d.QUERY, a.QueryArgs, READ, query),
    spec("brain_search", d.SEARCH, a.SearchArgs, READ, search),
    spec("brain_list", d.LIST, a.ListArgs, READ, list_pages),
    spec("brain_link", d.LINK, a.LinkArgs, WRITE, link),
    spec("brain_link_close", d.LINK_CLOSE, a.LinkCloseArgs, WRITE, link_close),
    spec("brain_backlinks", d.BACKLINKS, a.BacklinksArgs, READ, backlinks),
    spec("brain_graph", d.GRAPH, a.GraphArgs, READ, graph),
    spec("brain_check", d.CHECK, a.CheckArgs, READ, check_contradictions),
    spec("brain_timeline", d.TIMELINE, a.TimelineArgs, READ, timeline),
    spec("brain_tags", d.TAGS, a.TagsArgs, WRITE, tags),
    spec("brain_gap", d.GAP, a.GapArgs, WRITE, gap),
    spec("brain_gaps", d.GAPS, a.GapsArgs, READ, gaps),
    spec("brain_stats", d.STATS, a.NoArgs, READ, stats),
    spec("brain_collections", d.COLLECTIONS, a.NoArgs, READ, collections),
    spec("brain_raw", d.RAW, a.RawArgs, WRITE, raw),
)
