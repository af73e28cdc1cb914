"""Audit queries at the edges of the calendar: refused or answered, never an unhandled error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from cairn.domain.errors import InvalidInput
from cairn.services.audit import AuditLog
from tests.fakes.clock import FakeClock
from tests.fakes.records import MemoryRecordStore
from tests.fakes.store_secret import SECRET


@pytest.fixture
def log() -> AuditLog:
    return AuditLog(MemoryRecordStore(), FakeClock(start=datetime(2026, 3, 10, tzinfo=UTC)), secret=SECRET)


@pytest.mark.parametrize(
    "query",
    [
        # a minute east of UTC, the first second of year 1 is still in year 0 in UTC
        {"until": datetime(1, 1, 1, 0, 0, 3, tzinfo=timezone(timedelta(minutes=1)))},
        {
            "since": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
            "until": datetime(1, 1, 2, tzinfo=UTC),
        },
        {"until": datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-2)))},
        {"until": datetime(1, 1, 3, tzinfo=UTC)},  # the default window would start before year 1
    ],
)
def test_dates_out_of_range_in_utc_are_refused(log: AuditLog, query: dict[str, datetime]) -> None:
    with pytest.raises(InvalidInput, match=r"range|window"):
        log.query(tenant="acme", **query)  # type: ignore[arg-type]


def test_a_window_reaching_the_first_day_ends_there(log: AuditLog) -> None:
    since, until = datetime(1, 1, 1, tzinfo=UTC), datetime(1, 1, 2, 12, tzinfo=UTC)
    assert log.query(tenant="acme", since=since, until=until) == ([], None)
