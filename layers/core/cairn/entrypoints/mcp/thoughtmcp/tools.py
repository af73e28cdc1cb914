"""ThoughtMCP's memory tools on services/thoughtmcp/memories.py (the reasoning and metacognitive tools are in
reasoning.py). Every answer goes out in the surface's envelope (envelope.py)."""

from __future__ import annotations

import time
from typing import Any

from mcp_types import CallToolResult

from cairn.auth.principal import READ, WRITE
from cairn.domain.boolean_query import highlight, matched_terms
from cairn.domain.boolean_query import parse as parse_query
from cairn.domain.errors import CairnError, InvalidInput
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain
from cairn.entrypoints.mcp.kit import SurfaceDeps, ToolSpec, audit_meta, declare
from cairn.entrypoints.mcp.kit.audit import nothing_changed
from cairn.entrypoints.mcp.thoughtmcp import args as a
from cairn.entrypoints.mcp.thoughtmcp import descriptions as d
from cairn.entrypoints.mcp.thoughtmcp.envelope import failure, success
from cairn.entrypoints.mcp.thoughtmcp.services import ThoughtServices
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.checks import check_filters
from cairn.services.thoughtmcp.models import (
    MAX_LIMIT,
    NOT_FOUND_SUGGESTION,
    Filters,
    Metadata,
    NewMemory,
    Recalled,
    ThoughtError,
    parse_moment,
    reply_metadata,
    wire_memory,
)


def brain_of(c: ThoughtServices, user_id: str | None, *, create: bool = False) -> Brain | None:
    """ThoughtMCP's brain, for a call about `user_id`'s memories (the core refuses a caller that
    does not act for the user: services/thoughtmcp/memories.py thought_brain)."""
    return thought_brain(c.brains, c.thoughtmcp_brain, user_id=user_id, create=create)


def audited(result: CallToolResult, brain: Brain, target: str | None) -> CallToolResult:
    return audit_meta(result, brain.id, target)


def _metadata(m: a.MemoryMetadata | a.MetadataUpdate | None) -> Metadata | None:
    if m is None:
        return None
    return Metadata(
        keywords=tuple(m.keywords) if m.keywords is not None else None,
        tags=tuple(m.tags) if m.tags is not None else None,
        category=m.category,
        context=m.context,
        importance=m.importance,
    )


def _filters(x: a.Filtered) -> Filters:
    dates = x.dateRange or a.DateRange()
    meta = x.metadata or a.MetadataFilter()
    return Filters(
        sectors=tuple(x.sectors or ()),
        primary_sector=x.primarySector,
        min_strength=x.minStrength,
        min_salience=x.minSalience,
        date_from=parse_moment(dates.start, "dateRange.start") if dates.start else None,
        date_to=parse_moment(dates.end, "dateRange.end") if dates.end else None,
        keywords=tuple(meta.keywords or ()),
        tags=tuple(meta.tags or ()),
        category=meta.category,
    )


def _page(x: a.Filtered) -> tuple[int, int]:
    limit = int(x.limit) if x.limit is not None else 10
    offset = int(x.offset) if x.offset is not None else 0
    return max(1, min(limit, MAX_LIMIT)), max(0, offset)


# -- memory tools ---------------------------------------------------------------------------------


REMEMBER_COMPONENTS = ["memoryRepository", "embeddingEngine", "graphBuilder"]
# ThoughtMCP's answers to a text of whitespace only (an empty one is no text): recall's embedding
# model refuses it, search's full-text parser too, each message wrapped by its tool's failure.
BLANK_RECALL = "Memory search failed: Text cannot be empty or whitespace only"
BLANK_SEARCH = "Full-text search failed: Query cannot be empty"


def _blank(text: str | None) -> bool:
    return text is not None and text != "" and js_blank(text)


def remember(deps: SurfaceDeps[ThoughtServices], x: a.RememberArgs) -> CallToolResult:
    c = deps.services
    started = time.perf_counter()
    brain = brain_of(c, x.userId, create=True)
    assert brain is not None
    memory = NewMemory(x.content, x.userId, x.sessionId, x.primarySector, _metadata(x.metadata) or Metadata())
    data = c.thoughts.remember(brain, memory)
    metadata = reply_metadata(c.thoughts.clock.now(), started, REMEMBER_COMPONENTS)
    return audited(success(data, metadata), brain, data["memoryId"])


def recall(deps: SurfaceDeps[ThoughtServices], x: a.RecallArgs) -> CallToolResult:
    c = deps.services
    brain = brain_of(c, x.userId)
    filters = _filters(x)
    limit, offset = _page(x)
    if x.minSimilarity is not None and not 0 <= x.minSimilarity <= 1:
        raise ThoughtError("minSimilarity must be between 0 and 1", "Give minSimilarity in 0..1")
    if _blank(x.text):
        check_filters(filters)  # ThoughtMCP checks the filters before it embeds the text
        raise ThoughtError(BLANK_RECALL, "Give text with words, or leave it out to rank by salience")
    with_text = bool(x.text)
    if brain is None:
        found: list[Recalled] = []
        total = 0
    else:
        found, total = c.thoughts.recall(
            brain,
            x.userId,
            text=x.text,
            filters=filters,
            limit=limit,
            offset=offset,
            min_similarity=x.minSimilarity if x.minSimilarity is not None else 0.5,
        )
    ranked = _ranked(found, total, brain)
    return success({**ranked, "rankingMethod": "similarity" if with_text else "salience"})


def _ranked(found: list[Recalled], total: int, brain: Brain | None) -> dict[str, Any]:
    """Memories by composite score, as recall (and search without text) answer them: `score` the
    total, as the seed shows it; each also names its score's parts (`scoreComponents`, the object
    ThoughtMCP 0.6.0 sends as `score`) and the brain it came from (`brain`, its slug): Cairn's additions."""
    slug = brain.slug if brain is not None else ""
    return {
        "memories": [
            {
                **wire_memory(f),
                "score": round(f.score.total, 6),
                "scoreComponents": f.score.wire(),
                "brain": slug,
            }
            for f in found
        ],
        "totalCount": total,
        "scores": {f.row.id: round(f.score.total, 6) for f in found},
    }


def search(deps: SurfaceDeps[ThoughtServices], x: a.SearchArgs) -> CallToolResult:
    c = deps.services
    brain = brain_of(c, x.userId)
    filters = _filters(x)
    limit, offset = _page(x)
    if _blank(x.text):
        raise ThoughtError(BLANK_SEARCH, "Give text with words, or leave it out to list memories by salience")
    if not x.text:
        found, total = (
            c.thoughts.recall(brain, x.userId, text=None, filters=filters, limit=limit, offset=offset)
            if brain is not None
            else ([], 0)
        )
        return success({**_ranked(found, total, brain), "searchType": "vector-metadata"})
    try:
        query = parse_query(x.text)
    except InvalidInput as exc:
        return failure(exc.message, 'Use terms, "quoted phrases", AND, OR, NOT and balanced parentheses')
    ranked, total = (
        c.thoughts.search(brain, x.userId, query, filters=filters, limit=limit, offset=offset)
        if brain is not None
        else ([], 0)
    )
    memories = []
    for hit, rank in ranked:
        wired = wire_memory(hit, with_access=False)
        memories.append(
            {
                "id": wired["id"],
                "content": wired["content"],
                "createdAt": wired["createdAt"],
                "strength": wired["strength"],
                "salience": wired["salience"],
                "rank": round(rank, 6),
                "highlight": highlight(query, hit.content),
                "matchedTerms": matched_terms(query, hit.content),
                "brain": brain.slug if brain is not None else "",
            }
        )
    return success({"memories": memories, "totalCount": total, "searchType": "full-text"})


def update_memory(deps: SurfaceDeps[ThoughtServices], x: a.UpdateArgs) -> CallToolResult:
    c = deps.services
    brain = brain_of(c, x.userId)
    if brain is None:
        return failure(
            "Memory not found", "Check that memoryId is correct and belongs to the specified userId"
        )
    data = c.thoughts.update(
        brain,
        x.memoryId,
        x.userId,
        content=x.content,
        strength=x.strength,
        salience=x.salience,
        metadata=_metadata(x.metadata),
    )
    return audited(success(data), brain, x.memoryId)


def forget(deps: SurfaceDeps[ThoughtServices], x: a.ForgetArgs) -> CallToolResult:
    c = deps.services
    brain = brain_of(c, x.userId)
    if brain is None:
        raise ThoughtError("Memory not found or does not belong to user", NOT_FOUND_SUGGESTION)
    data = c.thoughts.forget(brain, x.memoryId, x.userId, soft=bool(x.soft))
    return audited(success(data), brain, x.memoryId)


def batch_remember(deps: SurfaceDeps[ThoughtServices], x: a.BatchRememberArgs) -> CallToolResult:
    c = deps.services
    started = time.perf_counter()
    brain = brain_of(c, x.userId, create=True)
    assert brain is not None
    created: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    for index, item in enumerate(x.memories):
        if isinstance(item, a.BadItem):
            failures.append({"index": index, "error": f"Invalid memory: {item.error}"})
            continue
        memory = NewMemory(
            item.content, x.userId, x.sessionId, item.primarySector, _metadata(item.metadata) or Metadata()
        )
        try:
            stored = c.thoughts.remember(brain, memory)
        except ThoughtError as exc:
            failures.append({"index": index, "content": item.content, "error": exc.message})
        else:
            created.append(
                {"index": index, "memoryId": stored.pop("memoryId"), "content": item.content, **stored}
            )
    data = {
        "successCount": len(created),
        "failureCount": len(failures),
        "created": created,
        "failures": failures,
        "processingTime": _elapsed_ms(started),
    }
    return audited(success(data), brain, None)


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def batch_recall(deps: SurfaceDeps[ThoughtServices], x: a.BatchRecallArgs) -> CallToolResult:
    c = deps.services
    started = time.perf_counter()
    brain = brain_of(c, x.userId)
    found = c.thoughts.get_many(brain, x.userId, x.memoryIds) if brain is not None else {}
    # Each memory once, at the first place it was asked for (ThoughtMCP selects `id = ANY(ids)`);
    # notFound keeps every id asked for that none answered, repeats included, as ThoughtMCP's does.
    shown = [i for i in dict.fromkeys(x.memoryIds) if i in found]
    memories = [wire_memory(found[i]) for i in shown if x.includeDeleted or found[i].strength > 0]
    returned = {m["id"] for m in memories}
    missing = [i for i in x.memoryIds if i not in returned]
    data = {"memories": memories, "foundCount": len(memories), "notFound": missing}
    return success({**data, "processingTime": _elapsed_ms(started)})


def batch_forget(deps: SurfaceDeps[ThoughtServices], x: a.BatchForgetArgs) -> CallToolResult:
    c = deps.services
    started = time.perf_counter()
    if not x.memoryIds:
        return failure(
            "memoryIds must contain at least one memory ID", "Give the IDs of the memories to delete"
        )
    brain = brain_of(c, None)
    deleted: list[str] = []
    failures: list[dict[str, str]] = []
    for memory_id in x.memoryIds:
        try:
            if brain is None:
                raise ThoughtError("Memory not found")
            c.thoughts.forget(brain, memory_id, None, soft=bool(x.soft))
            deleted.append(memory_id)
        except CairnError as exc:  # each id its own answer: what went before a failure is reported
            failures.append({"memoryId": memory_id, "error": exc.message})
    data = {
        "successCount": len(deleted),
        "failureCount": len(failures),
        "deletionType": "soft" if x.soft else "hard",
        "deleted": deleted,
        "failures": failures,
        "processingTime": _elapsed_ms(started),
    }
    if brain is None:  # no ThoughtMCP brain yet: nothing was forgotten, and no brain to audit it on
        return nothing_changed(success(data))
    return audited(success(data), brain, None)


# -- declarations ---------------------------------------------------------------------------------


spec = declare


MEMORY_TOOLS: tuple[ToolSpec[Any], ...] = (
    spec(
        "remember",
        d.REMEMBER,
        a.RememberArgs,
        WRITE,
        remember,
    ),
    spec(
        "recall",
        d.RECALL,
        a.RecallArgs,
        READ,
        recall,
    ),
    spec(
        "update_memory",
        d.UPDATE_MEMORY,
        a.UpdateArgs,
        WRITE,
        update_memory,
    ),
    spec("forget", d.FORGET, a.ForgetArgs, WRITE, forget),
    spec(
        "search",
        d.SEARCH,
        a.SearchArgs,
        READ,
        search,
    ),
    spec(
        "batch_remember",
        d.BATCH_REMEMBER,
        a.BatchRememberArgs,
        WRITE,
        batch_remember,
    ),
    spec("batch_recall", d.BATCH_RECALL, a.BatchRecallArgs, READ, batch_recall),
    spec("batch_forget", d.BATCH_FORGET, a.BatchForgetArgs, WRITE, batch_forget),
)
