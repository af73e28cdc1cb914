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
