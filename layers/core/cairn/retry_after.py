"""The one reading of an HTTP `Retry-After` header (RFC 9110 10.2.3), for every client Cairn is
(model servers, re-rankers, `cairn ingest --server`): delta-seconds, or an HTTP date."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait (never negative), or None when the header is absent or unreadable (the
    caller falls back to its own backoff). A date without a zone names no moment, nor does "inf":
    None."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
