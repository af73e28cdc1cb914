"""Mnemosyne's six tools on Cairn's libraries (services/mnemosyne/: libraries.py, library_search.py).

Results are FastMCP's for a returned dict: the object as structuredContent and as JSON text
(indented). Limits are clamped into 1..200 (never refused); a negative offset is refused, and so is
a search query over MAX_QUERY_CHARS characters (the seed sets no bound, but every word of a query
costs the graph leg reads). A filter naming a library, collection or type outside what the caller
may read matches nothing, as the real server's `lib.uid IN $resolved_libraries` clause does; a
chunk id outside them is not found.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CallToolResult, TextContent

from cairn.auth.principal import PUBLIC, READ
from cairn.domain.errors import InvalidInput, NotFound
from cairn.entrypoints.mcp.kit import SurfaceDeps, ToolSpec
from cairn.entrypoints.mcp.mnemosyne import args as a
from cairn.entrypoints.mcp.mnemosyne import descriptions as d
from cairn.entrypoints.mcp.mnemosyne.services import MnemosyneServices
from cairn.services.health import DEGRADED, ERROR, OK, Check
from cairn.services.mnemosyne.libraries import Collection, Library, LibraryItem
from cairn.services.mnemosyne.library_search import SEARCH_TYPES, Candidate, SearchRequest, preview
from cairn.services.search.ask import MAX_QUERY

MAX_LIMIT = 200
MAX_QUERY_CHARS = MAX_QUERY  # as `ask` bounds its query


def result(value: dict[str, Any], *, error: bool = False) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(value, indent=2, ensure_ascii=False))],
        structured_content=value,
        is_error=error,
    )


def clamp(limit: int) -> int:
    return max(1, min(limit, MAX_LIMIT))


# -- search and chunks --------------------------------------------------------------------------


def search(deps: SurfaceDeps[MnemosyneServices], x: a.SearchArgs) -> CallToolResult:
    c = deps.services
    types = list(SEARCH_TYPES) if x.search_types is None else x.search_types
    unknown = [t for t in types if t not in SEARCH_TYPES]
    if unknown or not types:
        raise InvalidInput(f"search_types must name one or more of: {', '.join(SEARCH_TYPES)}")
    if not x.query.strip():
        raise InvalidInput("query must not be empty")
    if len(x.query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query must be at most {MAX_QUERY_CHARS} characters (it has {len(x.query)})")
    libraries = c.libraries.scope(
        workspace_id=x.workspace_id, library_uid=x.library_uid, library_type=x.library_type
    )
    collection: Collection | None = None
    if x.collection_uid is not None:
        try:
            collection = c.libraries.collection(x.collection_uid, libraries)
        except NotFound:
            libraries = []  # another library's, or none: nothing matches
    outcome = c.library_search.search(
        SearchRequest(
            query=x.query,
            libraries=libraries,
            collection=collection,
            limit=clamp(x.limit),
            search_types=types,
            rerank=x.rerank,
            include_images=x.include_images,
        )
    )
    found = {
        "query": x.query,
        "candidates": [_candidate(found) for found in outcome.candidates],
        "images": [_image(found) for found in outcome.images],
        "total_candidates": outcome.total_candidates,
        "search_time_ms": outcome.search_time_ms,
        "reranker_used": outcome.reranker_used,
        "reranker_model": outcome.reranker_model,
        "search_types_used": outcome.search_types_used,
    }
    if outcome.unsearched:  # Cairn's addition, only when a library was left out
        names = {lib.uid: lib.name for lib in libraries}
        found["unsearched_libraries"] = [
            {
                "library_uid": u.brain_id,
                "library_name": names.get(u.brain_id),
                "code": u.code,
                "message": u.message,
            }
            for u in outcome.unsearched
        ]
    return result(found)


def _candidate(found: Candidate) -> dict[str, Any]:
    return {
        "chunk_uid": found.chunk.id,
        "item_uid": found.document.id,
        "item_title": found.document.title,
        "library_type": found.library.library_type,
        "text_preview": found.preview,
        "score": round(found.score, 6),
        "source": found.source,
        **_found_in(found),
    }


def _found_in(found: Candidate) -> dict[str, str]:
    """The library (brain) a result came from, by uid and by the name list_libraries shows
    (Cairn's addition)."""
    return {"library_uid": found.library.uid, "library_name": found.library.name}


def _image(found: Candidate) -> dict[str, Any]:
    doc = found.document
    return {
        "image_uid": found.chunk.id,
        "item_uid": doc.id,
        "item_title": doc.title,
        "image_type": doc.content_type.removeprefix("image/"),
        "description": preview(found.chunk.text),
        "s3_key": doc.blob_key,
        "score": round(found.score, 6),
        "source": found.source,
        **_found_in(found),
    }


def get_chunk(deps: SurfaceDeps[MnemosyneServices], x: a.GetChunkArgs) -> CallToolResult:
    c = deps.services
    found = c.libraries.get_chunk(x.chunk_uid, c.libraries.libraries(x.workspace_id))
    return result(
        {
            "chunk_uid": found.chunk.id,
            "chunk_index": found.chunk.ordinal,
            "item_uid": found.document.id,
            "item_title": found.document.title,
            "library_type": found.library.library_type,
            "text": found.chunk.text,
        }
    )


# -- listings -----------------------------------------------------------------------------------


def list_libraries(deps: SurfaceDeps[MnemosyneServices], x: a.ListLibrariesArgs) -> CallToolResult:
    limit = clamp(x.limit)
    page = deps.services.libraries.libraries(x.workspace_id)[x.offset : x.offset + limit]
    return result({"libraries": [_library(lib) for lib in page], "limit": limit, "offset": x.offset})


def _library(lib: Library) -> dict[str, Any]:
    return {
        "uid": lib.uid,
        "name": lib.name,
        "library_type": lib.library_type,
        "description": lib.description,
    }


def list_collections(deps: SurfaceDeps[MnemosyneServices], x: a.ListCollectionsArgs) -> CallToolResult:
    c = deps.services
    limit = clamp(x.limit)
    libraries = c.libraries.scope(workspace_id=x.workspace_id, library_uid=x.library_uid)
    page = c.libraries.collections(libraries)[x.offset : x.offset + limit]
    collections = [
        {
            "uid": col.uid,
            "name": col.name,
            "description": col.description,
            "library_uid": col.library.uid,
            "library_name": col.library.name,
        }
        for col in page
    ]
    return result({"collections": collections, "limit": limit, "offset": x.offset})


def list_items(deps: SurfaceDeps[MnemosyneServices], x: a.ListItemsArgs) -> CallToolResult:
    c = deps.services
    limit = clamp(x.limit)
    libraries = c.libraries.scope(workspace_id=x.workspace_id, library_uid=x.library_uid)
    collection: Collection | None = None
    if x.collection_uid is not None:
        try:
            collection = c.libraries.collection(x.collection_uid, libraries)
        except NotFound:
            libraries = []
    found = c.libraries.items(libraries, collection=collection, limit=limit, offset=x.offset)
    return result({"items": [_item(item) for item in found], "limit": limit, "offset": x.offset})


def _item(item: LibraryItem) -> dict[str, Any]:
    return {
        "uid": item.uid,
        "title": item.title,
        "item_type": item.item_type,
        "file_type": item.file_type,
        "chunk_count": item.chunk_count,
        "image_count": item.image_count,
        "embedding_status": item.embedding_status,
    }


def get_health(deps: SurfaceDeps[MnemosyneServices], _: a.NoArgs) -> CallToolResult:
    """The seed's checks: `neo4j` for the record store and the chunk index (what Neo4j holds for
    Mnemosyne: libraries, items, chunks and their indexes), `s3` for the blob store, `embedding`;
    a configured re-ranker adds its own."""
    service = deps.services.health
    health = service.check()
    records, blobs, chunks = service.names
    checks: dict[str, dict[str, Any]] = {
        "neo4j": _joined([health.checks[records], health.checks[chunks]]),
        "s3": _joined([health.checks[blobs]]),
    }
    for name, check in health.checks.items():
        if name not in service.names:
            checks[name] = {"status": check.status, "duration_ms": check.duration_ms}
            if check.model is not None:
                checks[name]["model"] = check.model
    return result({"status": health.status, "checks": checks})


def _joined(parts: list[Check]) -> dict[str, Any]:
    """One check standing for several: the worst status, the time they took together."""
    statuses = {c.status for c in parts}
    status = ERROR if ERROR in statuses else DEGRADED if DEGRADED in statuses else OK
    return {"status": status, "duration_ms": round(sum(c.duration_ms for c in parts), 2)}


# -- declarations -------------------------------------------------------------------------------


def spec(name: str, description: str, args: type[Any], scope: str, handler: Any) -> ToolSpec[Any]:
    return ToolSpec(name=name, description=description, args=args, output=None, scope=scope, handler=handler)


MNEMOSYNE_TOOLS: tuple[ToolSpec[Any], ...] = (
    spec("search", d.SEARCH, a.SearchArgs, READ, search),
    spec("get_chunk", d.GET_CHUNK, a.GetChunkArgs, READ, get_chunk),
    spec("list_libraries", d.LIST_LIBRARIES, a.ListLibrariesArgs, READ, list_libraries),
    spec("list_collections", d.LIST_COLLECTIONS, a.ListCollectionsArgs, READ, list_collections),
    spec("list_items", d.LIST_ITEMS, a.ListItemsArgs, READ, list_items),
    spec("get_health", d.GET_HEALTH, a.NoArgs, PUBLIC, get_health),
)
