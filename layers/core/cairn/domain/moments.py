"""Instants given from outside, made safe to compute with.

Python's datetime ends at years 1 and 9999. An instant near either end with an offset
(`9999-12-31T23:59:59-14:00`) cannot be converted to UTC, and one microsecond or a day of skew
added to an instant at the edge overflows: stored, such an instant failed every later read that
showed it. So an instant from outside is taken in UTC and held within a day of those ends, where
nothing a surface computes can overflow; the day it may move is far from any fact's validity.
"""

from __future__ import annotations

from datetime import UTC, datetime

EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def utc_moment(moment: datetime) -> datetime:
    """`moment` in UTC (a naive one taken as UTC), held within EARLIEST..LATEST."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:  # an offset carried it past year 1 or 9999
        return EARLIEST if moment.year == 1 else LATEST
    return min(max(moment, EARLIEST), LATEST)


def iso_moment(value: object) -> datetime:
    """An ISO 8601 instant given as text (a date alone is its midnight; a `Z` suffix and no offset
    are UTC), in UTC within EARLIEST..LATEST; ValueError for anything else, numbers included."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be an ISO 8601 timestamp")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("must be an ISO 8601 timestamp") from None
    return utc_moment(moment)
