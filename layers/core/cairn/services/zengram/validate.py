"""zengram's request validation, rule by rule with its messages: the first failing rule wins.

A refusal is `Refused(status, body)`; the API answers it as is and the MCP surface renders it the
way zengram's wrapper does. Nothing is written before validation passes.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from cairn.domain.errors import InvalidInput
from cairn.domain.moments import iso_moment
from cairn.domain.text import check_shown, is_blank

MEMORY_TYPES = ("event", "fact", "decision", "status")
IMPORTANCES = ("critical", "high", "medium", "low")
KNOWLEDGE_CATEGORIES = ("brand", "strategy", "meeting", "content", "technical", "relationship", "general")
CATEGORIES = ("semantic", "episodic", "procedural")
MAX_CONTENT = 10_000
MAX_METADATA_BYTES = 10_240
MAX_METADATA_DEPTH = 3
LIMITS = {"client_id": 64, "key": 128, "subject": 256, "status_value": 256}
NAMES = ("client_id", "key", "subject")
AGENT = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MARKUP = re.compile(r"</?(?:tool_call|function|arguments?|parameters?|params?|args?)\b", re.I)
TEXT_FIELDS = (
    "type", "content", "source_agent", "client_id", "category", "importance", "key", "subject",
    "status_value", "knowledge_category", "valid_from", "valid_to",
)  # fmt: skip


class Refused(Exception):
    """A request zengram answers with an error status and an `{"error": ...}` body."""

    def __init__(self, status: int, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.status = status
        self.body: dict[str, Any] = {"error": error, **extra}


def bad(error: str) -> Refused:
    return Refused(400, error)


def parse_time(value: Any, name: str) -> datetime:
    """An ISO 8601 timestamp (a `Z` suffix too; naive ones are UTC), in UTC within the bounds
    of domain/moments.py."""
    try:
        return iso_moment(value)
    except ValueError:
        raise bad(f"Invalid {name}: must be an ISO 8601 timestamp") from None


def memory_body(body: Any, *, allow_markup: bool = False, imported: bool = False) -> dict[str, Any]:
    """POST /memory's body (and each imported record's), checked; returns it unchanged. An
    imported record may hold an empty interval (valid_from equal to valid_to): a value replaced
    by another stated from the same instant, exported as it was kept."""
    if not isinstance(body, dict):
        raise bad("Request body must be a JSON object")
    kind = body.get("type")
    if kind is None or kind == "":
        raise bad("type is required")
    if kind not in MEMORY_TYPES:
        raise bad(f"Invalid type: {kind}. Must be one of: {', '.join(MEMORY_TYPES)}")
    content = body.get("content")
    if not isinstance(content, str) or is_blank(content):
        raise bad("content is required and must be a non-empty string")
    if len(content) > MAX_CONTENT:
        raise bad(f"content exceeds maximum length of {MAX_CONTENT} characters (got {len(content)})")
    agent = body.get("source_agent")
    if agent is None or agent == "":
        raise bad("source_agent is required")
    if not isinstance(agent, str) or not AGENT.fullmatch(agent):
        raise bad("Invalid source_agent: must be 1-64 characters of letters, digits, hyphens or underscores")
    _enum(body, "importance", IMPORTANCES)
    _enum(body, "knowledge_category", KNOWLEDGE_CATEGORIES)
    _enum(body, "category", CATEGORIES)
    for name, limit in LIMITS.items():
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise bad(f"{name} must be a string")
        if len(value) > limit:
            raise bad(f"{name} exceeds maximum length of {limit} characters (got {len(value)})")
        if name in NAMES:  # shown as names (entities, fact keys): one line, in its own order
            try:
                check_shown(name, value)
            except InvalidInput as exc:
                raise bad(exc.message) from None
    if "metadata" in body and body["metadata"] is not None:
        metadata_value(body["metadata"])
    start = parse_time(body["valid_from"], "valid_from") if body.get("valid_from") else None
    end = parse_time(body["valid_to"], "valid_to") if body.get("valid_to") else None
    if start is not None and end is not None and (start > end or (start == end and not imported)):
        raise bad("valid_from must be before valid_to")
    if not allow_markup:
        no_markup(body, TEXT_FIELDS)
    return body


def update_body(body: Any) -> dict[str, Any]:
    """PATCH /memory/:id's body."""
    if not isinstance(body, dict):
        raise bad("Request body must be a JSON object")
    fields = ("content", "importance", "knowledge_category", "metadata")
    if not any(body.get(f) not in (None, "") for f in fields):
        raise bad(f"Must provide at least one field to update: {', '.join(fields)}")
    content = body.get("content")
    if content not in (None, ""):
        if not isinstance(content, str):
            raise bad("content must be a string")
        if len(content) > MAX_CONTENT:
            raise bad(f"content exceeds maximum length of {MAX_CONTENT} characters (got {len(content)})")
    _enum(body, "importance", IMPORTANCES)
    _enum(body, "knowledge_category", KNOWLEDGE_CATEGORIES)
    if body.get("metadata") is not None:
        metadata_value(body["metadata"])
    no_markup(body, ("content", "importance", "knowledge_category"))
    return body


def metadata_value(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad("metadata must be a plain object")
    try:  # NaN and Infinity are not JSON: echoed back, no JSON client could read them
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode())
    except ValueError:
        raise bad("metadata numbers must be finite") from None
    if size > MAX_METADATA_BYTES:
        raise bad(f"metadata exceeds maximum size of {MAX_METADATA_BYTES} bytes (got {size})")
    if _depth(value) > MAX_METADATA_DEPTH:
        raise bad(f"metadata exceeds maximum nesting depth of {MAX_METADATA_DEPTH}")
    no_markup_in(value, "metadata")
    return value


def no_markup(body: dict[str, Any], fields: tuple[str, ...]) -> None:
    for name in fields:
        value = body.get(name)
        if isinstance(value, str) and MARKUP.search(value):
            raise bad(f"{name} contains tool-call control markup; retry with clean argument text")


def no_markup_in(value: Any, name: str) -> None:
    if isinstance(value, str) and MARKUP.search(value):
        raise bad(f"{name} contains tool-call control markup; retry with clean argument text")
    if isinstance(value, dict):
        for key, item in value.items():
            no_markup_in(key, name)
            no_markup_in(item, name)
    elif isinstance(value, list):
        for item in value:
            no_markup_in(item, name)


def _enum(body: dict[str, Any], name: str, allowed: tuple[str, ...]) -> None:
    value = body.get(name)
    if value is not None and value not in allowed:
        raise bad(f"Invalid {name}: {value}. Must be one of: {', '.join(allowed)}")


def _depth(value: Any) -> int:
    """Levels counted as zengram counts them, the leaf included: `{a: {b: 1}}` is 3 deep (allowed),
    `{a: {b: {c: 1}}}` 4 (refused); lists count like objects."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 1
