"""zengram's API operations on Cairn's core: each takes what the HTTP route received (query
parameters as strings, the JSON body) and returns the status and body zengram answers with.

The HTTP routes (entrypoints/rest/zengram/routes.py) and the `brain_*` MCP tools both call these
through `run`, so an agent sees the same answers through zengram's own wrapper and through
Cairn's MCP surface.

The parts: reply.py (Reply, run), deps.py (ZengramDeps), base.py (the brain served),
memory_ops.py, briefing.py; this module composes them with the entity, consolidation, transfer
and insight operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cairn.domain.errors import NotFound
from cairn.services.memory.entities import ENTITY_TYPES
from cairn.services.memory.entity_wire import entity_wire
from cairn.services.zengram import consolidation, insight, transfer
from cairn.services.zengram.base import SERVICE, bounded_int
from cairn.services.zengram.briefing import ZengramBriefing
from cairn.services.zengram.memory_ops import ZengramMemories
from cairn.services.zengram.reply import Reply
from cairn.services.zengram.shapes import (
    iso,
)
from cairn.services.zengram.validate import (
    Refused,
    bad,
)


class ZengramApi(ZengramMemories, ZengramBriefing):
    """Every operation of zengram's API (module docstring)."""

    def entities(self, q: Mapping[str, str]) -> Reply:
        kind = q.get("type") or None
        if kind is not None and kind not in ENTITY_TYPES:
            raise bad(f"Invalid entity type: {kind}")
        limit = bounded_int(q.get("limit"), default=50, low=1, high=100)
        offset = bounded_int(q.get("offset"), default=0, low=0, high=10**9)
        listed = self.c.entities.list(self.brain(), entity_type=kind, limit=limit, offset=offset)
        return Reply(200, {"count": len(listed), "entities": [entity_wire(e) for e in listed]})

    def entity(self, name: str) -> Reply:
        try:
            return Reply(200, entity_wire(self.c.entities.get(self.brain(), name)))
        except NotFound:
            raise Refused(404, "Entity not found") from None

    def entity_memories(self, name: str, q: Mapping[str, str]) -> Reply:
        limit = bounded_int(q.get("limit"), default=20, low=1, high=100)
        try:
            return Reply(200, self.c.entities.memories(self.brain(), name, limit=limit).wire())
        except NotFound:
            raise Refused(404, "Entity not found") from None

    def entity_stats(self) -> Reply:
        return Reply(200, self.c.entities.stats(self.brain()).wire())

    def consolidate(self, q: Mapping[str, str]) -> Reply:
        status, body = consolidation.start(self.c, self.brain(), sync=q.get("sync") == "true")
        return Reply(status, body)

    def consolidation_job(self, job_id: str) -> Reply:
        return Reply(200, consolidation.job_status(self.c, job_id))

    def consolidation_status(self) -> Reply:
        return Reply(200, consolidation.status(self.c, self.brain()))

    def export(self, q: Mapping[str, str]) -> Reply:
        return Reply(200, transfer.export(self.c, self.brain(), q))

    def import_(self, body: Any, q: Mapping[str, str]) -> Reply:
        return Reply(200, transfer.restore(self.c, lambda: self.brain(create=True), body, q))

    def import_new(self, body: Any) -> Reply:
        """brain_import as the seed has it: no approval, nothing present overwritten."""
        return Reply(200, transfer.restore_new(self.c, lambda: self.brain(create=True), body))

    def reflect(self, body: Any) -> Reply:
        return Reply(200, insight.reflect(self.c, self.brain, body))

    def research(self, body: Any) -> Reply:
        return Reply(200, insight.research(self.c, self.brain, body))

    def health(self) -> Reply:
        return Reply(200, {"status": "ok", "service": SERVICE, "timestamp": iso(self.c.clock.now())})
