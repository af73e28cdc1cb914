"""zengram's wire shapes of a memory: the stored payload, and the search and briefing rows."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from cairn.domain.models import Document, MemoryFacet, MemoryType
from cairn.domain.moments import utc_moment
from cairn.services.documents.unreadable import Unreadable
from cairn.services.memory.memory_model import SUPERSEDES, MemoryInput
from cairn.services.memory.memory_ranking import IMPORTANCE, importance_name
from cairn.services.search.access import Access
from cairn.services.zengram.redact import redact, redact_all
from cairn.services.zengram.validate import parse_time

METADATA_KEY = "zengram.metadata"
"""The caller's metadata object, JSON in one flat metadata value (documents keep flat metadata)."""


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return utc_moment(moment).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def user_metadata(doc: Document) -> dict[str, Any] | None:
    raw = doc.metadata.get(METADATA_KEY)
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def facet_of(doc: Document) -> MemoryFacet:
    """A document's memory facet; a plain document (a canonical note, an ingested file) reads as a
    memory of type `note`, so what other surfaces write shows in zengram's searches too."""
    return doc.memory or MemoryFacet(type=MemoryType.note)


def payload(
    doc: Document, text: str, access: Access | None = None, consolidated_until: datetime | None = None
) -> dict[str, Any]:
    """The whole stored memory (export rows, `format=full` search rows); it is consolidated when it
    was created by the moment the brain's completed consolidation runs reached."""
    m = facet_of(doc)
    seen = access or Access(m.access_count, m.last_access)
    return {
        "id": doc.id,
        "content": text,
        "type": m.type.value,
        "key": m.key,
        "subject": m.subject,
        "status_value": m.status_value,
        "client_id": m.client_id or "global",
        "knowledge_category": m.knowledge_category or "general",
        "category": m.category or "episodic",
        "source_agent": m.source_agent,
        # Cairn keeps one observer of a memory, the agent that stored it.
        "observed_by": [m.source_agent] if m.source_agent else [],
        "observation_count": 1,
        "importance": importance_name(m.importance),
        "confidence": 1.0,
        "access_count": seen.count,
        "active": doc.deleted_at is None and m.current,
        "supersedes": doc.metadata.get(SUPERSEDES),
        "superseded_by": m.superseded_by,
        "superseded_at": iso(m.superseded_at),
        "deleted_at": iso(doc.deleted_at),
        "deletion_reason": doc.deleted_reason if doc.deleted_at else None,
        "expired_at": iso(m.expired_at),
        "created_at": iso(doc.created_at),
        "last_accessed_at": iso(seen.last),
        "valid_from": iso(m.valid_from),
        "valid_to": iso(m.valid_to),
        "consolidated": consolidated_until is not None and doc.created_at <= consolidated_until,
        "metadata": user_metadata(doc),
        "content_hash": m.content_hash,
    }


def unreadable(skipped: list[Unreadable]) -> dict[str, Any]:
    """A listing's `unreadable` field (Cairn's addition, present only when one was left out): the
    memories whose stored content is damaged, by id, path and code; the rest answered as ever."""
    return {"unreadable": [u.shown() for u in skipped]} if skipped else {}


def truncated(text: str, chars: int = 200) -> str:
    return text if len(text) <= chars else text[:chars] + "..."


def summary_line(text: str, chars: int = 80) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:chars]


def memory_input(body: dict[str, Any], *, empty_metadata: bool, memory_id: str | None = None) -> MemoryInput:
    """A checked POST /memory body (or import record) as a store input, credentials taken out of
    its text and metadata (redact.py). zengram keeps a body's `metadata: {}` but drops an import
    record's (`empty_metadata`)."""
    given = body.get("metadata")
    keep = given is not None if empty_metadata else bool(given)
    return MemoryInput(
        type=MemoryType(str(body["type"])),
        content=redact(body["content"]),
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
        metadata={METADATA_KEY: json.dumps(redact_all(given), ensure_ascii=False)} if keep else {},
        memory_id=memory_id,
    )
