"""zengram's briefing (what changed since a time, what matters now) and its stats."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cairn.domain.models import Brain, Document, MemoryType
from cairn.services.documents.unreadable import Unreadable
from cairn.services.memory.memory_ranking import (
    DECAY_FACTOR,
    effective_confidence,
    importance_name,
)
from cairn.services.zengram.base import BRIEFED_TYPES, DEFAULT_AGENT, ZengramBase, bounded_int
from cairn.services.zengram.consolidation import consolidated_until
from cairn.services.zengram.kept_stats import NEWEST_FACTS, Counted, counted, without
from cairn.services.zengram.memory_ops import RANK
from cairn.services.zengram.reply import Reply
from cairn.services.zengram.shapes import (
    iso,
    summary_line,
    truncated,
    unreadable,
)
from cairn.services.zengram.validate import (
    Refused,
    bad,
    parse_time,
)


class ZengramBriefing(ZengramBase):
    """The /briefing and /stats routes of ZengramApi."""

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
        limit = bounded_int(q.get("limit"), default=100, low=1, high=500)
        agent = q.get("agent") or DEFAULT_AGENT
        brain = self.brain()
        docs = self.c.memories.since(brain, since, limit=limit * 4 + 50)
        in_period = len(docs)
        if q.get("include") != "all":
            docs = [d for d in docs if d.memory is None or d.memory.source_agent != agent]
        docs = [d for d in docs if d.memory is not None][:limit]
        now = self.c.clock.now()
        skipped: list[Unreadable] = []
        entries = [(d, t) for d in docs if (t := self.c.memories.text_or_none(d, skipped)) is not None]
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
            "requesting_agent": agent,
            "generated_at": iso(now),
            "summary": summary,
        }

        def ordered(kind: str) -> list[tuple[Document, str]]:
            picked = [(d, t) for d, t in entries if d.memory and d.memory.type.value == kind]
            picked.sort(key=lambda e: e[0].created_at, reverse=True)
            picked.sort(key=lambda e: RANK[importance_name(e[0].memory.importance if e[0].memory else None)])
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
        out.update(unreadable(skipped))
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
        # At most 30 s old: counting reads every memory record (services/memory/memory_reads.py count).
        total, vectors = self.c.memories.count(brain)
        return {"total_memories": total, "vectors_count": vectors}

    def stats(self) -> Reply:
        brain = self.brain()
        now = self.c.clock.now()
        settled = consolidated_until(self.c, brain)
        found = counted(self.c.memories, brain, settled) or self._counted(brain, settled)
        # left out as query, briefing and export leave them out
        found = without(found, self.c.memories.documents.damaged_now(brain.id), settled)
        newest_facts = found.newest_facts
        reads = self.c.memories.access_of(brain, [d.id for d in newest_facts])
        decayed = sum(
            1
            for d in newest_facts
            if effective_confidence(d.memory, d.created_at, reads[d.id].last, now) < 0.5
        )
        vectors = found.chunks  # a memory's chunks are its vectors, as in zengram's store
        return Reply(
            200,
            {
                "total_memories": found.total,
                "vectors_count": vectors,
                "active": found.active,
                "superseded": found.total - found.active,
                "consolidated": found.consolidated,
                "by_type": {t.value: found.by_type[t.value] for t in BRIEFED_TYPES},
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

    def _counted(self, brain: Brain, settled: datetime | None) -> Counted:
        """Stats' counts from every memory record read (while the kept counts or entries cannot
        answer: kept_stats.py); only the newest current facts are decoded."""
        docs = [g for g in self.c.memories.glances(brain, list(BRIEFED_TYPES)) if not g.deleted and g.memory]
        active = [g for g in docs if g.current]
        newest_facts = [
            g.document()
            for g in sorted(
                (g for g in active if g.type == MemoryType.fact.value),
                key=lambda g: g.created_at(),
                reverse=True,
            )[:NEWEST_FACTS]
        ]
        return Counted(
            total=len(docs),
            chunks=sum(g.chunk_count for g in docs),
            active=len(active),
            by_type=Counter(g.type for g in docs if g.type is not None),
            consolidated=0 if settled is None else sum(1 for g in docs if g.created_at() <= settled),
            newest_facts=newest_facts,
        )
