"""ThoughtMCP's argument rules, with its error details: user ids, content length, sectors,
metadata and filters; and the keywords a memory gets when none are given."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final

from cairn.auth import access
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain
from cairn.domain.stopwords import KEYWORDS as _STOP
from cairn.domain.text import BIDI_CONTROLS, has_control, is_blank
from cairn.services.thoughtmcp import thought_scoring as ts
from cairn.services.thoughtmcp.models import (
    AUTO_KEYWORDS,
    INVALID_SECTOR,
    MAX_CATEGORY,
    MAX_CONTENT,
    MAX_CONTEXT,
    MIN_CONTENT,
    SECTOR_SUGGESTION,
    Filters,
    Metadata,
    ThoughtError,
)

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")


def check_user_id(user_id: str) -> None:
    """A userId is given and at most 256 characters (what the caller may do with it is the access
    rule's: check_user)."""
    if not isinstance(user_id, str) or js_blank(user_id):
        raise ThoughtError("userId is required", "Provide the userId the memories belong to")
    if len(user_id) > 256:
        raise ThoughtError("userId must be at most 256 characters", "Use a shorter userId")


def check_new_user_id(user_id: str) -> None:
    """A userId a memory is stored under: also shown as a name (the web UI, an erasure's subject),
    so no control or bidirectional characters. Reads take any userId, so memories stored before
    this rule stay readable."""
    check_user_id(user_id)
    if has_control(user_id) or any(ch in BIDI_CONTROLS for ch in user_id):
        raise ThoughtError(
            "userId must not contain control or bidirectional characters",
            "Use a userId of printable characters",
        )


def check_user(user_id: str, brain: Brain | None = None) -> None:
    """A valid userId the caller acts for (auth/access.py `acts_for`) in `brain`, or in a brain of
    its own tenant when there is none yet."""
    check_user_id(user_id)
    access.check_acts_for(brain, user_id)


REMEMBER_EMPTY: Final = (
    "Check that all required fields are provided and content is non-empty. "
    "Ensure primarySector is one of: " + ", ".join(ts.SECTORS)
)


def check_content(content: str, *, empty_suggestion: str = "Provide non-empty content") -> None:
    """Content within 10..100,000 characters and not blank; remember's blank answer names its
    other required fields too (`empty_suggestion`), as the seed's remember shows it."""
    size = len(content) if isinstance(content, str) else 0
    if size < MIN_CONTENT:
        raise ThoughtError(
            f"Content length {size} is below minimum. Allowed range: {MIN_CONTENT}-{MAX_CONTENT} characters",
            f"Content must be between {MIN_CONTENT} and {MAX_CONTENT} characters. Current length: {size}",
            code="CONTENT_TOO_SHORT",
            details=_length_details(size),
        )
    if size > MAX_CONTENT:
        raise ThoughtError(
            f"Content length {size} exceeds maximum. Allowed range: {MIN_CONTENT}-{MAX_CONTENT} characters",
            f"Content must be between {MIN_CONTENT} and {MAX_CONTENT} characters. Current length: {size}",
            code="CONTENT_TOO_LONG",
            details=_length_details(size),
        )
    if is_blank(content):
        raise ThoughtError("Content cannot be empty", empty_suggestion)


def _length_details(size: int) -> dict[str, Any]:
    return {
        "actualLength": size,
        "minLength": MIN_CONTENT,
        "maxLength": MAX_CONTENT,
        "allowedRange": f"{MIN_CONTENT}-{MAX_CONTENT} characters",
    }


def check_sector(sector: str | None) -> None:
    if sector not in ts.SECTORS:
        raise ThoughtError(INVALID_SECTOR, SECTOR_SUGGESTION)


def check_metadata(m: Metadata) -> None:
    if m.importance is not None and not 0 <= m.importance <= 1:
        raise ThoughtError("Importance must be between 0 and 1", "Give importance in 0..1")
    for name, text, most in (("context", m.context, MAX_CONTEXT), ("category", m.category, MAX_CATEGORY)):
        if text is not None and len(text) > most:
            raise ThoughtError(
                f"metadata.{name} must be at most {most} characters (received {len(text)})",
                f"Shorten metadata.{name}, or keep the text in content",
            )
    for name, values in (("keywords", m.keywords), ("tags", m.tags)):
        if values is not None and (len(values) > 50 or any(js_blank(v) or len(v) > 100 for v in values)):
            raise ThoughtError(
                f"metadata.{name} must be at most 50 non-empty strings of at most 100 characters"
            )
        if values is not None and any(has_control(v) for v in values):
            raise ThoughtError(f"metadata.{name} must not contain control characters")


def check_filters(f: Filters) -> None:
    for sector in (*f.sectors, *([f.primary_sector] if f.primary_sector else [])):
        check_sector(sector)
    for name, value in (("minStrength", f.min_strength), ("minSalience", f.min_salience)):
        if value is not None and not 0 <= value <= 1:
            raise ThoughtError(f"{name} must be between 0 and 1", f"Give {name} in 0..1")
    if f.date_from is not None and f.date_to is not None and f.date_to < f.date_from:
        raise ThoughtError("dateRange.end must be >= dateRange.start", "Swap or correct the dates")


def auto_keywords(content: str) -> list[str]:
    """The content's most frequent words of three letters or more that are not stopwords, the
    first met first among equals (Counter keeps the order words are first met in; looking each
    word's first place up in the list of words took 1.5 s for 100,000 characters of distinct
    words, and grew with the square of them)."""
    words = [w.lower().strip("'-") for w in _WORD.findall(content)]
    counted = Counter(w for w in words if w not in _STOP and len(w) >= 3)
    return [w for w, _ in sorted(counted.items(), key=lambda kv: -kv[1])[:AUTO_KEYWORDS]]
