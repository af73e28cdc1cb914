"""What the entity reads answer (services/memory/entities.py), in zengram's shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cairn.domain.models import Entity


@dataclass(frozen=True)
class MemoryLink:
    memory_id: str
    role: str
    created_at: datetime


@dataclass(frozen=True)
class EntityMemories:
    entity: Entity
    links: list[MemoryLink]

    def wire(self) -> dict[str, Any]:
        return {
            "entity": self.entity.name,
            "entity_type": self.entity.kind,
            "count": len(self.links),
            "memory_links": [
                {"memory_id": ln.memory_id, "role": ln.role, "created_at": _iso(ln.created_at)}
                for ln in self.links
            ],
        }


@dataclass(frozen=True)
class EntityStats:
    total: int
    by_type: dict[str, int]
    top: list[Entity] = field(default_factory=list)

    def wire(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_type": dict(self.by_type),
            "top_mentioned": [
                {"canonical_name": e.name, "entity_type": e.kind, "mention_count": e.mention_count}
                for e in self.top
            ],
        }


def entity_wire(entity: Entity) -> dict[str, Any]:
    """zengram's entity shape."""
    return {
        "id": entity.id,
        "canonical_name": entity.name,
        "entity_type": entity.kind,
        "first_seen": _iso(entity.first_seen),
        "last_seen": _iso(entity.last_seen),
        "mention_count": entity.mention_count,
        "aliases": list(entity.aliases),
    }


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat().replace("+00:00", "Z")
