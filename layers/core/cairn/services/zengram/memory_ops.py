"""zengram's memory operations: store (dedupe, supersede by key), search, query, update, delete."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cairn.domain.errors import NotFound
from cairn.domain.js_text import js_trim
from cairn.domain.models import Document, MemoryType
from cairn.services.documents.unreadable import Unreadable
from cairn.services.memory.memory_model import Containing, MemoryQuery
from cairn.services.memory.memory_ranking import (
    IMPORTANCE,
    importance_name,
)
from cairn.services.zengram.base import ZengramBase, bounded_int, matches, one_of
from cairn.services.zengram.consolidation import consolidated_until
from cairn.services.zengram.redact import redact, redact_all
from cairn.services.zengram.reply import Reply
from cairn.services.zengram.shapes import (
    METADATA_KEY,
    facet_of,
    iso,
    memory_input,
    payload,
    summary_line,
    truncated,
    unreadable,
)
from cairn.services.zengram.validate import (
    Refused,
    bad,
    memory_body,
    parse_time,
    update_body,
)

UNKEYED_FACT = "Fact stored without key — cannot be superseded. Provide a key for long-term memory hygiene."


DUPLICATE = "Exact duplicate — returning existing memory"


RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}


class ZengramMemories(ZengramBase):
    """The /memory routes of ZengramApi."""

    def store(self, body: Any) -> Reply:
        memory_body(body)
        brain = self.brain(create=True)
        kind = MemoryType(body["type"])
        stored = self.c.memories.store(brain, memory_input(body, empty_metadata=True))
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
        query = js_trim(q.get("q") or "")
        if not query:
            raise bad("Missing required query parameter: q")
        limit = bounded_int(q.get("limit"), default=10, low=1, high=100)
        fmt = q.get("format") or "compact"
        if fmt not in ("compact", "full", "index"):
            raise bad("Invalid format: must be one of compact, full, index")
        at_time = parse_time(q["at_time"], "at_time") if q.get("at_time") else None
        known_at = parse_time(q["known_at"], "known_at") if q.get("known_at") else None
        brain = self.brain()
        hits = self.c.memories.search(
            brain,
            query,
            MemoryQuery(
                types=one_of(q.get("type")),
                client_ids=one_of(q.get("client_id")),
                source_agents=one_of(q.get("source_agent")),
                categories=one_of(q.get("category")),
                knowledge_categories=one_of(q.get("knowledge_category")),
                include_superseded=q.get("include_superseded") == "true",
                at_time=at_time,
                known_at=known_at,
                limit=limit,
                count_access=q.get("read_only") != "true" and q.get("track_access") != "false",
            ),
        )
        rows: list[dict[str, Any]] = []
        settled = consolidated_until(self.c, brain) if fmt == "full" else None
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
                        "brain": brain.slug,
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
                        "brain": brain.slug,
                    }
                )
            else:
                full_text = self.c.memories.text_or_none(doc)
                if full_text is None:  # its bytes are damaged: the hit is skipped, not the search
                    continue
                whole = payload(doc, full_text, hit.access, settled)
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
                        "brain": brain.slug,
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
        limit = bounded_int(q.get("limit"), default=50, low=1, high=500)
        since = parse_time(q["since"], "since") if q.get("since") else None
        brain = self.brain()
        containing: Containing | None = None
        if kind in ("fact", "facts"):
            kinds = [MemoryType.fact]
            containing = Containing("key", q["key"]) if q.get("key") else None
        elif kind in ("status", "statuses"):
            kinds = [MemoryType.status]
            containing = Containing("subject", q["subject"]) if q.get("subject") else None
        else:
            narrowed = {"event": [MemoryType.event], "decision": [MemoryType.decision]}
            kinds = narrowed.get(kind, [MemoryType.event, MemoryType.decision])
        found: list[Document] = []
        for doc in self.c.memories.current_of_type(brain, kinds, containing=containing):
            m = doc.memory
            assert m is not None
            if not matches(m.source_agent, q.get("source_agent")) or not matches(
                m.client_id, q.get("client_id")
            ):
                continue
            if not matches(m.category, q.get("category")):
                continue
            if since is not None and doc.created_at < since:
                continue
            found.append(doc)
        found.sort(key=lambda d: d.updated_at, reverse=True)  # stable: ties stay in path order
        skipped: list[Unreadable] = []
        results: list[dict[str, Any]] = []
        for doc in found:  # texts read for the rows shown only; a damaged one takes no place of them
            if len(results) == limit:
                break
            if (row := self._row(doc, skipped)) is not None:
                results.append(row)
        return Reply(
            200, {"type": kind or "events", "count": len(results), "results": results, **unreadable(skipped)}
        )

    def _row(self, doc: Document, skipped: list[Unreadable]) -> dict[str, Any] | None:
        m = doc.memory
        assert m is not None
        kind = m.type
        text = self.c.memories.text_or_none(doc, skipped)
        if text is None:
            return None
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
            metadata = {METADATA_KEY: json.dumps(redact_all(body["metadata"]), ensure_ascii=False)}
        try:
            updated = self.c.memories.update(
                brain,
                memory_id,
                content=redact(body["content"]) if body.get("content") else None,
                importance=IMPORTANCE[body["importance"]] if body.get("importance") else None,
                knowledge_category=body.get("knowledge_category") or None,
                metadata=metadata,
            )
        except NotFound:
            raise Refused(404, "Memory not found") from None
        names = {"content": "text"}
        fields = [names.get(f, f) for f in updated.fields]
        if "content_hash" in fields and "entities" not in fields:  # a memory's new content: its
            fields.insert(fields.index("content_hash") + 1, "entities")  # entities extracted again
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
