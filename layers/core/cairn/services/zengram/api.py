"""zengram's API operations on Cairn's core: each takes what the HTTP route received (query
parameters as strings, the JSON body) and returns the status and body zengram answers with.

The HTTP routes (entrypoints/rest/zengram/routes.py) and the `brain_*` MCP tools both call these
through `run`, so an agent sees the same answers through zengram's own wrapper and through
Cairn's MCP surface.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cairn.auth.access import InsufficientScope
from cairn.domain.errors import CairnError, Conflict, Forbidden, InvalidInput, NoBrain, NotFound, Unavailable
from cairn.domain.models import Brain, Document, MemoryType
from cairn.options import SurfaceOptions
from cairn.ports.clock import Clock
from cairn.ports.generator import Generator
from cairn.ports.jobs import JobRunner
from cairn.ports.records import RecordStore
from cairn.services.brains import BrainService
from cairn.services.jobs.visible_jobs import VisibleJobs
from cairn.services.memory.consolidation import ConsolidationService
from cairn.services.memory.entities import ENTITY_TYPES, EntityService, entity_wire
from cairn.services.memory.memories import MemoryInput, MemoryQuery, MemoryService
from cairn.services.memory.memory_ranking import (
    DECAY_FACTOR,
    IMPORTANCE,
    effective_confidence,
    importance_name,
)
from cairn.services.search.access import AccessLog
from cairn.services.zengram import consolidation, insight, transfer
from cairn.services.zengram.shapes import (
    METADATA_KEY,
    facet_of,
    iso,
    payload,
    summary_line,
    truncated,
    user_metadata,
)
from cairn.services.zengram.validate import (
    Refused,
    bad,
    memory_body,
    parse_time,
    update_body,
)

log = logging.getLogger("cairn.zengram")
SERVICE = "zengram"
DEFAULT_BRAIN_NAME = "Shared Brain"
UNKEYED_FACT = "Fact stored without key — cannot be superseded. Provide a key for long-term memory hygiene."
DUPLICATE = "Exact duplicate — returning existing memory"
_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def refusal(exc: Refused) -> Reply:
    return Reply(exc.status, exc.body)


@dataclass(frozen=True)
class ZengramDeps:
    """What zengram's operations work on (built by the composition root)."""

    brains: BrainService
    memories: MemoryService
    entities: EntityService
    consolidation: ConsolidationService
    jobs: JobRunner
    job_status: VisibleJobs
    records: RecordStore
    generator: Generator
    clock: Clock
    options: SurfaceOptions
    access: AccessLog | None


def run(op: Callable[[], Reply]) -> Reply:
    """An operation's reply; every failure as zengram answers it."""
    try:
        return op()
    except Refused as exc:
        return refusal(exc)
    except (InsufficientScope, Forbidden) as exc:
        return Reply(403, {"error": exc.message})
    except (NotFound, NoBrain) as exc:
        return Reply(404, {"error": exc.message})
    except InvalidInput as exc:
        return Reply(400, {"error": exc.message})
    except Conflict as exc:
        return Reply(409, {"error": exc.message})
    except Unavailable as exc:
        return Reply(503, {"error": exc.message}, {"Retry-After": str(exc.retry_after_s)})
    except CairnError as exc:
        return Reply(400, {"error": exc.message})
    except Exception:
        log.exception("zengram API operation failed")
        return Reply(500, {"error": "Internal server error"})


class ZengramApi:
    def __init__(self, deps: ZengramDeps) -> None:
        self.c = deps

    # -- the brain this API serves -----------------------------------------------------------

    def brain(self, *, create: bool = False) -> Brain:
        """The configured brain (CAIRN_ZENGRAM_BRAIN), else the only brain of a key limited to
        one, else the default brain; with `create`, a first write makes "Shared Brain"."""
        wanted = self.c.options.zengram_brain
        try:
            return self.c.brains.resolve(wanted) if wanted else self._default()
        except NoBrain:
            if not create or wanted:
                raise
            return self.c.brains.create(DEFAULT_BRAIN_NAME, visibility="tenant")

    def _default(self) -> Brain:
        from cairn.auth import access

        current = access.current()
        if (
            current is not None
            and current.principal.brains is not None
            and len(current.principal.brains) == 1
        ):
            (only,) = current.principal.brains
            return self.c.brains.get(only)
        return self.c.brains.resolve(None)

    # -- memories ----------------------------------------------------------------------------

    def store(self, body: Any) -> Reply:
        memory_body(body)
        brain = self.brain(create=True)
        kind = MemoryType(body["type"])
        metadata: dict[str, Any] = {}
        if body.get("metadata") is not None:
            metadata[METADATA_KEY] = json.dumps(body["metadata"], ensure_ascii=False)
        stored = self.c.memories.store(
            brain,
            MemoryInput(
                type=kind,
                content=body["content"],
                source_agent=body["source_agent"],
                client_id=body.get("client_id") or "global",
                category=body.get("category") or "episodic",
                importance=IMPORTANCE[body.get("importance") or "medium"],
                knowledge_category=body.get("knowledge_category") or "general",
                key=body.get("key") or None,
                subject=body.get("subject") or None,
                status_value=body.get("status_value") or None,
                valid_from=parse_time(body["valid_from"], "valid_from") if body.get("valid_from") else None,
                valid_to=parse_time(body["valid_to"], "valid_to") if body.get("valid_to") else None,
                metadata=metadata,
            ),
        )
        m = stored.memory.memory
        assert m is not None
        stored_in = {"vector": True, "structured_db": True}
        if stored.deduplicated:
            return Reply(
                200,
                {
                    "id": stored.memory.id,
                    "type": m.type.value,
                    "content_hash": m.content_hash,
                    "deduplicated": True,
                    "message": DUPLICATE,
                    "stored_in": stored_in,
                },
            )
        out: dict[str, Any] = {
            "id": stored.memory.id,
            "type": m.type.value,
            "content_hash": m.content_hash,
            "deduplicated": False,
            "supersedes": stored.supersedes,
            "stored_in": stored_in,
        }
        if kind is MemoryType.fact and not body.get("key"):
            out["warning"] = UNKEYED_FACT
        return Reply(201, out)

    def search(self, q: Mapping[str, str]) -> Reply:
        query = (q.get("q") or "").strip()
        if not query:
            raise bad("Missing required query parameter: q")
        limit = _int(q.get("limit"), default=10, low=1, high=100)
        fmt = q.get("format") or "compact"
        if fmt not in ("compact", "full", "index"):
            raise bad("Invalid format: must be one of compact, full, index")
        at_time = parse_time(q["at_time"], "at_time") if q.get("at_time") else None
        brain = self.brain()
        hits = self.c.memories.search(
            brain,
            query,
            MemoryQuery(
                types=_one(q.get("type")),
                client_ids=_one(q.get("client_id")),
                source_agents=_one(q.get("source_agent")),
                categories=_one(q.get("category")),
                knowledge_categories=_one(q.get("knowledge_category")),
                include_superseded=q.get("include_superseded") == "true",
                at_time=at_time,
                limit=limit,
                count_access=q.get("read_only") != "true" and q.get("track_access") != "false",
            ),
        )
        rows: list[dict[str, Any]] = []
        for hit in hits:
            doc = hit.memory
            m = facet_of(doc)
            score = hit.score if hit.score is not None else 0
            if fmt == "index":
                rows.append(
                    {
                        "id": doc.id,
                        "effective_score": hit.effective_score,
                        "type": m.type.value,
                        "summary": summary_line(hit.text),
                        "importance": importance_name(m.importance),
                        "client_id": m.client_id or "global",
                        "created_at": iso(doc.created_at),
                    }
                )
            elif fmt == "compact":
                rows.append(
                    {
                        "id": doc.id,
                        "score": round(score, 4),
                        "effective_score": hit.effective_score,
                        "type": m.type.value,
                        "content": truncated(hit.text),
                        "source_agent": m.source_agent,
                        "client_id": m.client_id or "global",
                        "importance": importance_name(m.importance),
                        "created_at": iso(doc.created_at),
                    }
                )
            else:
                whole = payload(doc, self.c.memories.text(doc), hit.access)
                text = whole.pop("content")
                sources = [
                    leg for leg, rank in (("vector", hit.vector_rank), ("keyword", hit.bm25_rank)) if rank
                ]
                rows.append(
                    {
                        "id": doc.id,
                        "score": round(score, 4),
                        "confidence": round(hit.confidence, 4),
                        "effective_score": hit.effective_score,
                        **whole,
                        "text": text,
                        "retrieval_sources": sources,
                    }
                )
        out: dict[str, Any] = {"query": query, "count": len(rows), "results": rows}
        if fmt == "full":
            out["retrieval"] = {
                "multi_path": True,
                "paths": {
                    "vector": sum(1 for h in hits if h.vector_rank),
                    "keyword": sum(1 for h in hits if h.bm25_rank),
                },
            }
        return Reply(200, out)

    def query(self, q: Mapping[str, str]) -> Reply:
        kind = q.get("type") or ""
        limit = _int(q.get("limit"), default=50, low=1, high=500)
        since = parse_time(q["since"], "since") if q.get("since") else None
        brain = self.brain()
        if kind in ("fact", "facts"):
            kinds, needle, field = [MemoryType.fact], q.get("key"), "key"
        elif kind in ("status", "statuses"):
            kinds, needle, field = [MemoryType.status], q.get("subject"), "subject"
        else:
            narrowed = {"event": [MemoryType.event], "decision": [MemoryType.decision]}
            kinds, needle, field = narrowed.get(kind, [MemoryType.event, MemoryType.decision]), None, ""
        rows: list[tuple[datetime, dict[str, Any]]] = []
        for doc in self.c.memories.of_type(brain, kinds):
            m = doc.memory
            if doc.deleted_at is not None or m is None or not m.current:
                continue
            if not _matches(m.source_agent, q.get("source_agent")) or not _matches(
                m.client_id, q.get("client_id")
            ):
                continue
            if not _matches(m.category, q.get("category")):
                continue
            if needle and needle.lower() not in (getattr(m, field) or "").lower():
                continue
            if since is not None and doc.created_at < since:
                continue
            rows.append((doc.updated_at, self._row(doc, m.type)))
        rows.sort(key=lambda r: r[0], reverse=True)
        results = [row for _, row in rows[:limit]]
        return Reply(200, {"type": kind or "events", "count": len(results), "results": results})

    def _row(self, doc: Document, kind: MemoryType) -> dict[str, Any]:
        m = doc.memory
        assert m is not None
        text = self.c.memories.text(doc)
        base = {
            "id": doc.id,
            "source_agent": m.source_agent,
            "client_id": m.client_id or "global",
            "category": m.category,
            "importance": importance_name(m.importance),
            "knowledge_category": m.knowledge_category,
            "content_hash": m.content_hash,
            "created_at": iso(doc.created_at),
        }
        if kind is MemoryType.fact:
            return {**base, "key": m.key, "value": text, "content": text, "updated_at": iso(doc.updated_at)}
        if kind is MemoryType.status:
            return {
                **base,
                "subject": m.subject,
                "status": m.status_value,
                "content": text,
                "updated_at": iso(doc.updated_at),
            }
        return {**base, "content": text, "type": kind.value}

    def update(self, memory_id: str, body: Any) -> Reply:
        update_body(body)
        brain = self.brain()
        metadata = None
        if body.get("metadata") is not None:
            metadata = {METADATA_KEY: json.dumps(body["metadata"], ensure_ascii=False)}
        try:
            updated = self.c.memories.update(
                brain,
                memory_id,
                content=body.get("content") or None,
                importance=IMPORTANCE[body["importance"]] if body.get("importance") else None,
                knowledge_category=body.get("knowledge_category") or None,
                metadata=metadata,
            )
        except NotFound:
            raise Refused(404, "Memory not found") from None
        names = {"content": "text"}
        fields = [names.get(f, f) for f in updated.fields]
        return Reply(
            200,
            {
                "id": memory_id,
                "updated": True,
                "updated_at": iso(updated.memory.updated_at),
                "updated_fields": fields,
            },
        )

    def delete(self, memory_id: str, body: Any) -> Reply:
        reason = body.get("reason") if isinstance(body, dict) else None
        if reason is not None and not isinstance(reason, str):
            raise bad("reason must be a string")
        brain = self.brain()
        try:
            gone = self.c.memories.delete(brain, memory_id, reason=reason or None)
        except NotFound:
            raise Refused(404, "Memory not found") from None
        if gone.already_inactive:
            return Reply(
                200, {"id": memory_id, "already_inactive": True, "message": "Memory was already inactive"}
            )
        return Reply(200, {"id": memory_id, "deleted": True, "deleted_at": iso(gone.memory.deleted_at)})

    # -- briefing and stats --------------------------------------------------------------------

    def briefing(self, q: Mapping[str, str]) -> Reply:
        if not q.get("since"):
            raise Refused(
                400,
                "Missing required parameter: since (ISO 8601 timestamp)",
                example="/briefing?since=2026-03-09T00:00:00Z&agent=claude-code&format=compact",
            )
        try:
            since = parse_time(q["since"], "since")
        except Refused:
            raise bad("Invalid since parameter — must be an ISO 8601 timestamp") from None
        fmt = q.get("format") or "compact"
        if fmt not in ("compact", "summary", "full"):
            raise bad("Invalid format: must be one of compact, summary, full")
        limit = _int(q.get("limit"), default=100, low=1, high=500)
        agent = q.get("agent") or None
        brain = self.brain()
        docs = self.c.memories.since(brain, since, limit=limit * 4 + 50)
        in_period = len(docs)
        if agent and q.get("include") != "all":
            docs = [d for d in docs if d.memory is None or d.memory.source_agent != agent]
        docs = [d for d in docs if d.memory is not None][:limit]
        now = self.c.clock.now()
        entries = [(d, self.c.memories.text(d)) for d in docs]
        by_type = Counter(d.memory.type.value for d, _ in entries if d.memory)
        summary = {
            "total_entries": len(entries),
            "total_in_period": in_period,
            "events": by_type["event"],
            "facts_updated": by_type["fact"],
            "status_changes": by_type["status"],
            "decisions": by_type["decision"],
            "agents_active": sorted(
                {d.memory.source_agent for d, _ in entries if d.memory and d.memory.source_agent}
            ),
            "clients_mentioned": sorted(
                {
                    d.memory.client_id
                    for d, _ in entries
                    if d.memory and d.memory.client_id not in (None, "global")
                }
            ),
            "entities_mentioned": self._mentioned(brain, [d.id for d, _ in entries]),
        }
        out: dict[str, Any] = {
            "since": q["since"],
            "format": fmt,
            "requesting_agent": agent or "unknown",
            "generated_at": iso(now),
            "summary": summary,
        }

        def ordered(kind: str) -> list[tuple[Document, str]]:
            picked = [(d, t) for d, t in entries if d.memory and d.memory.type.value == kind]
            picked.sort(key=lambda e: e[0].created_at, reverse=True)
            picked.sort(key=lambda e: _RANK[importance_name(e[0].memory.importance if e[0].memory else None)])
            return picked

        reads = self.c.memories.access_of(brain, [d.id for d, _ in entries])

        def confidence(doc: Document) -> float:
            return effective_confidence(doc.memory, doc.created_at, reads[doc.id].last, now)

        buckets = {
            "events": "event",
            "facts_updated": "fact",
            "status_changes": "status",
            "decisions": "decision",
        }
        if fmt == "compact":
            for name, kind in buckets.items():
                rows = [
                    (d, t)
                    for d, t in ordered(kind)
                    if not (
                        kind == "event"
                        and importance_name(d.memory.importance if d.memory else None) == "low"
                    )
                ][:15]
                out[name] = [
                    {
                        "id": d.id,
                        "content": truncated(t),
                        "truncated": len(t) > 200,
                        "source_agent": d.memory.source_agent if d.memory else None,
                        "client_id": d.memory.client_id if d.memory else None,
                        "importance": importance_name(d.memory.importance if d.memory else None),
                        "confidence": round(confidence(d), 3),
                        "created_at": iso(d.created_at),
                    }
                    for d, t in rows
                ]
            out["brain_stats"] = self._counts(brain)
        elif fmt == "summary":
            tops = {
                "top_events": "event",
                "top_facts": "fact",
                "top_statuses": "status",
                "top_decisions": "decision",
            }
            for name, kind in tops.items():
                rows = ordered(kind)[:5]
                out[name] = [
                    {
                        "headline": summary_line(t, 120),
                        "source_agent": d.memory.source_agent if d.memory else None,
                        "client_id": d.memory.client_id if d.memory else None,
                        **({"created_at": iso(d.created_at)} if kind == "event" else {}),
                    }
                    for d, t in rows
                ]
        else:
            out["entries"] = [
                {
                    "id": d.id,
                    "content": t,
                    "source_agent": d.memory.source_agent if d.memory else None,
                    "client_id": d.memory.client_id if d.memory else None,
                    "category": d.memory.category if d.memory else None,
                    "importance": importance_name(d.memory.importance if d.memory else None),
                    "confidence": round(confidence(d), 4),
                    "created_at": iso(d.created_at),
                }
                for d, t in entries
            ]
            out["brain_stats"] = self._counts(brain)
        return Reply(200, out)

    def _mentioned(self, brain: Brain, memory_ids: list[str]) -> list[dict[str, Any]]:
        """The entities these memories mention, most often first (at most 15)."""
        counts: Counter[str] = Counter()
        for memory_id in memory_ids[:100]:
            for link in self.c.entities.links.outgoing(brain.id, memory_id):
                counts[link.target_id] += 1
        out = []
        for eid, count in counts.most_common(15):
            stored = self.c.entities.repo.by_id(brain.id, eid)
            if stored is not None:
                out.append({"name": stored.entity.name, "type": stored.entity.kind, "count": count})
        return out

    def _counts(self, brain: Brain) -> dict[str, int]:
        # At most 30 s old: counting reads every memory record (services/memory/memories.py count).
        total, vectors = self.c.memories.count(brain)
        return {"total_memories": total, "vectors_count": vectors}

    def stats(self) -> Reply:
        brain = self.brain()
        now = self.c.clock.now()
        docs = [d for d in self.c.memories.of_type(brain, list(_TYPES)) if d.deleted_at is None and d.memory]
        active = [d for d in docs if d.memory and d.memory.current]
        by_type = Counter(d.memory.type.value for d in docs if d.memory)
        newest_facts = sorted(
            (d for d in active if d.memory and d.memory.type is MemoryType.fact),
            key=lambda d: d.created_at,
            reverse=True,
        )[:100]
        reads = self.c.memories.access_of(brain, [d.id for d in newest_facts])
        decayed = sum(
            1
            for d in newest_facts
            if effective_confidence(d.memory, d.created_at, reads[d.id].last, now) < 0.5
        )
        vectors = sum(d.chunk_count for d in docs)  # a memory's chunks are its vectors, as in zengram's store
        return Reply(
            200,
            {
                "total_memories": len(docs),
                "vectors_count": vectors,
                "active": len(active),
                "superseded": len(docs) - len(active),
                "consolidated": 0,
                "by_type": {t.value: by_type[t.value] for t in _TYPES},
                "decayed_below_50pct": decayed,
                "decay_config": {"factor": DECAY_FACTOR, "affected_types": ["fact", "status"]},
                "entities": self.c.entities.stats(brain).wire(),
                "retrieval": {
                    "multi_path": True,
                    "keyword_search": True,
                    "keyword_index_count": vectors,
                },
            },
        )

    # -- entities ------------------------------------------------------------------------------

    def entities(self, q: Mapping[str, str]) -> Reply:
        kind = q.get("type") or None
        if kind is not None and kind not in ENTITY_TYPES:
            raise bad(f"Invalid entity type: {kind}")
        limit = _int(q.get("limit"), default=50, low=1, high=100)
        offset = _int(q.get("offset"), default=0, low=0, high=10**9)
        listed = self.c.entities.list(self.brain(), entity_type=kind, limit=limit, offset=offset)
        return Reply(200, {"count": len(listed), "entities": [entity_wire(e) for e in listed]})

    def entity(self, name: str) -> Reply:
        try:
            return Reply(200, entity_wire(self.c.entities.get(self.brain(), name)))
        except NotFound:
            raise Refused(404, "Entity not found") from None

    def entity_memories(self, name: str, q: Mapping[str, str]) -> Reply:
        limit = _int(q.get("limit"), default=20, low=1, high=100)
        try:
            return Reply(200, self.c.entities.memories(self.brain(), name, limit=limit).wire())
        except NotFound:
            raise Refused(404, "Entity not found") from None

    def entity_stats(self) -> Reply:
        return Reply(200, self.c.entities.stats(self.brain()).wire())

    # -- consolidation ---------------------------------------------------------------------------

    def consolidate(self, q: Mapping[str, str]) -> Reply:
        status, body = consolidation.start(self.c, self.brain(), sync=q.get("sync") == "true")
        return Reply(status, body)

    def consolidation_job(self, job_id: str) -> Reply:
        return Reply(200, consolidation.job_status(self.c, job_id))

    def consolidation_status(self) -> Reply:
        return Reply(200, consolidation.status(self.c, self.brain()))

    # -- export, import, reflect, research ---------------------------------------------------------

    def export(self, q: Mapping[str, str]) -> Reply:
        return Reply(200, transfer.export(self.c, self.brain(), q))

    def import_(self, body: Any, q: Mapping[str, str]) -> Reply:
        return Reply(200, transfer.restore(self.c, lambda: self.brain(create=True), body, q))

    def reflect(self, body: Any) -> Reply:
        return Reply(200, insight.reflect(self.c, self.brain, body))

    def research(self, body: Any) -> Reply:
        return Reply(200, insight.research(self.c, self.brain, body))

    def health(self) -> Reply:
        return Reply(200, {"status": "ok", "service": SERVICE, "timestamp": iso(self.c.clock.now())})


_TYPES = (MemoryType.event, MemoryType.fact, MemoryType.decision, MemoryType.status)


def _one(value: str | None) -> tuple[str, ...]:
    return (value,) if value else ()


def _matches(value: str | None, wanted: str | None) -> bool:
    return not wanted or value == wanted


def _int(raw: str | None, *, default: int, low: int, high: int) -> int:
    """zengram's parseInt: absent or unparsable -> the default; clamped to low..high."""
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        return default
    return min(max(value, low), high)


__all__ = ["Reply", "ZengramApi", "refusal", "user_metadata"]
