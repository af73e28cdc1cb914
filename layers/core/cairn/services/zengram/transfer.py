"""zengram's export and import (`GET /export`, `POST /export/import`) on the typed memories.

An export row is the stored memory (shapes.payload) with its entities and observers. An import
stores each record through MemoryService.store, as POST /memory would: scrubbed, deduplicated
against the current memories of its client and type, superseding by key or subject, re-embedded;
a record's own `id` is kept, so a restore gives back the same ids. The HTTP route needs operator
approval for that (an id overwrites the memory it names); the seed's brain_import, which has no
approval to give, never overwrites a memory that is still present (`restore_new`). Records are
stored oldest first, so that of two facts with one key the newer ends current, and a record that
was deleted is deleted again after it is stored. A record exported superseded (`superseded_by`) is
stored superseded, with its own `valid_to`, whether or not its successor comes back (deleted, or
stored out of order): what is current, and what was true when, are as they were.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cairn.domain.errors import CairnError, NotFound
from cairn.domain.models import Brain, Document, MemoryType
from cairn.services.documents.unreadable import Unreadable
from cairn.services.memory.memory_model import MEMORY_ID, MemoryInput
from cairn.services.search.access import Access
from cairn.services.zengram.consolidation import consolidated_until
from cairn.services.zengram.shapes import iso, memory_input, payload, unreadable
from cairn.services.zengram.validate import (
    MEMORY_TYPES,
    Refused,
    bad,
    memory_body,
    no_markup_in,
    parse_time,
)

if TYPE_CHECKING:
    from cairn.services.zengram.deps import ZengramDeps

log = logging.getLogger("cairn.zengram")
MAX_IMPORT = 500
IMPORT_AGENT = "import"
"""The source agent of an imported record that names none (as zengram's import has it)."""
_TRUE = ("true", "1", "yes")
_FIELDS = (
    "importance", "client_id", "knowledge_category", "category", "metadata", "key", "subject",
    "status_value", "valid_from", "valid_to",
)  # fmt: skip
"""What an imported record keeps beyond type, content, source agent and id."""


def export(c: ZengramDeps, brain: Brain, q: Mapping[str, str]) -> dict[str, Any]:
    for name in ("client_id", "type", "since", "active_only", "limit", "offset"):
        no_markup_in(q.get(name), name)
    since = None
    if q.get("since"):
        try:
            since = parse_time(q["since"], "since")
        except Refused:
            raise Refused(
                400,
                "Invalid since parameter — must be an ISO 8601 timestamp",
                example="/export?since=2026-03-09T00:00:00Z",
            ) from None
    limit = min(max(_number(q.get("limit"), 1000), 1), 5000)
    offset = max(_number(q.get("offset"), 0), 0)
    active_only = q.get("active_only") != "false"
    client, kind = q.get("client_id") or None, q.get("type") or None
    named = [t for t in MEMORY_TYPES if not kind or t == kind]  # an unknown type exports nothing
    kinds = [MemoryType(t) for t in named]
    listed = c.memories.current_of_type(brain, kinds) if active_only else c.memories.of_type(brain, kinds)
    matching = [
        doc
        for doc in listed
        if doc.memory is not None
        and (client is None or (doc.memory.client_id or "global") == client)
        and (since is None or doc.created_at >= since)
    ]
    matching.sort(key=lambda d: (d.created_at, d.id), reverse=True)
    page = matching[offset : offset + limit]
    access = c.access.get_many(brain.id, [d.id for d in page]) if c.access else {}
    names: dict[str, dict[str, str] | None] = {}
    settled = consolidated_until(c, brain)
    skipped: list[Unreadable] = []
    rows = [_row(c, brain, doc, access.get(doc.id), names, settled, skipped) for doc in page]
    return {
        "memories": [row for row in rows if row is not None],
        "total": len(matching),
        "limit": limit,
        "offset": offset,
        "has_more": offset + len(page) < len(matching),
        "exported_at": iso(c.clock.now()),
        "filters": {
            "client_id": client,
            "type": kind,
            "since": q.get("since") or None,
            "active_only": active_only,
        },
        **unreadable(skipped),
    }


def _row(
    c: ZengramDeps,
    brain: Brain,
    doc: Document,
    seen: Access | None,
    names: dict[str, dict[str, str] | None],
    settled: datetime | None,
    skipped: list[Unreadable],
) -> dict[str, Any] | None:
    text = c.memories.text_or_none(doc, skipped)
    if text is None:  # damaged: left out of the export, named in its `unreadable`
        return None
    whole = payload(doc, text, seen, settled)
    whole.pop("expired_at", None)
    entities = []
    for link in c.entities.links.outgoing(brain.id, doc.id):
        if link.target_id not in names:
            stored = c.entities.repo.by_id(brain.id, link.target_id)
            names[link.target_id] = (
                {"name": stored.entity.name, "type": stored.entity.kind} if stored is not None else None
            )
        if names[link.target_id] is not None:
            entities.append(names[link.target_id])
    return {**whole, "entities": entities}


def approved(body: Any, q: Mapping[str, str]) -> bool:
    """operator_approved in the body or the query string, as a true value."""
    given = body.get("operator_approved") if isinstance(body, dict) else None
    return _true(given) or _true(q.get("operator_approved"))


def restore(c: ZengramDeps, brain_of: Any, body: Any, q: Mapping[str, str]) -> dict[str, int]:
    """zengram's POST /export/import: only with operator approval, since a record's id overwrites
    the memory it names. `brain_of()` gives the brain once the request is accepted."""
    if not approved(body, q):
        raise Refused(403, "operator_approved=true is required for import restores")
    return _restore(c, brain_of, body, overwrite=True)


def restore_new(c: ZengramDeps, brain_of: Any, body: Any) -> dict[str, int]:
    """The seed's brain_import, which has no approval to give: the same import, except that a
    record whose id names a memory still present (current or superseded, not deleted) is skipped,
    so nothing live is overwritten. A deleted memory is restored in place."""
    return _restore(c, brain_of, body, overwrite=False)


def _restore(c: ZengramDeps, brain_of: Any, body: Any, *, overwrite: bool) -> dict[str, int]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise bad('Request body must contain a "data" array of memory objects')
    if len(data) > MAX_IMPORT:
        raise bad(f"Import limited to {MAX_IMPORT} records per request (received {len(data)})")
    imported = skipped = errors = 0
    if not data:
        return {"imported": 0, "skipped": 0, "errors": 0}
    brain: Brain = brain_of()
    for record in sorted(data, key=_age):
        try:
            memory = _input(record)
        except (Refused, CairnError):
            errors += 1
            continue
        try:  # a record the store refuses (an id too long to look up, too) is one error
            if not overwrite and _present(c, brain, memory.memory_id):
                skipped += 1
                continue
            stored = c.memories.store(brain, memory)
            if stored.deduplicated:
                skipped += 1
                continue
            if record.get("deleted_at"):
                reason = record.get("deletion_reason")
                c.memories.delete(brain, stored.memory.id, reason=reason if isinstance(reason, str) else None)
        except CairnError as exc:
            log.info("zengram import: record refused: %s", exc.message)
            errors += 1
            continue
        imported += 1
    return {"imported": imported, "skipped": skipped, "errors": errors}


def _present(c: ZengramDeps, brain: Brain, memory_id: str | None) -> bool:
    """Whether `memory_id` names a memory of the brain that is not deleted."""
    if memory_id is None:
        return False
    try:
        return c.memories.record(brain, memory_id).deleted_at is None
    except NotFound:
        return False


def _input(record: Any) -> MemoryInput:
    """A record checked as POST /memory checks a body (markup allowed), as a store input."""
    if not isinstance(record, dict):
        raise bad("record must be an object")
    content = record.get("content") or record.get("text")
    if not content:
        raise bad("content is required")
    body = {name: record.get(name) for name in _FIELDS if record.get(name) is not None}
    body.update(type=record.get("type") or "event", content=content)
    body["source_agent"] = record.get("source_agent") or IMPORT_AGENT
    memory_body(body, allow_markup=True, imported=True)
    for name in ("entities", "observed_by"):
        if record.get(name) is not None and not isinstance(record[name], list):
            raise bad(f"{name} must be an array")
    for name in ("confidence", "access_count"):
        value = record.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise bad(f"{name} must be a number")
    memory_id = record.get("id")
    if memory_id is not None and not isinstance(memory_id, str):
        raise bad("id must be a string")
    successor = record.get("superseded_by")
    if successor is not None and (not isinstance(successor, str) or not MEMORY_ID.fullmatch(successor)):
        raise bad("superseded_by must be a memory id")
    stored = memory_input(body, empty_metadata=False, memory_id=memory_id or None)
    return replace(stored, superseded_by=successor or None)


def _age(record: Any) -> datetime:
    """When a record was created; undated (and unreadable) ones count as newest."""
    raw = record.get("created_at") if isinstance(record, dict) else None
    try:
        return parse_time(raw, "created_at")
    except Refused:
        return datetime.max.replace(tzinfo=UTC)


def _true(value: Any) -> bool:
    if value is True or (isinstance(value, int) and not isinstance(value, bool) and value == 1):
        return True
    return isinstance(value, str) and value.strip().lower() in _TRUE


HUGE_DIGITS = 18
HUGE = 10**HUGE_DIGITS


def _number(raw: str | None, default: int) -> int:
    """parseInt: the leading integer of the text, else the default (0 counts as absent)."""
    text = (raw or "").strip()
    digits = text[1:] if text[:1] in "+-" else text
    lead = len(digits) - len(digits.lstrip("0123456789"))
    if lead == 0:
        return default
    if lead > HUGE_DIGITS:  # past every bound its callers clamp to (int() refuses 4,300 digits)
        return -HUGE if text[:1] == "-" else HUGE
    value = int(text[: lead + (len(text) - len(digits))])
    return value or default
