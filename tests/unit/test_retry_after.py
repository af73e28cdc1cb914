"""One reading of Retry-After for every client Cairn is: delta-seconds or an HTTP date, never a
negative wait, None (the caller's own backoff) for anything else."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.retry_after import parse_retry_after

NOW = datetime(2026, 11, 29, 9, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        (" 1.5 ", 1.5),
        ("-3", 0.0),
        ("Sun, 29 Nov 2026 09:00:30 GMT", 30.0),
        ("Sun, 29 Nov 2026 08:59:00 GMT", 0.0),  # already past: go now
        ("Sunday, 29-Nov-26 09:01:00 GMT", 60.0),  # the obsolete RFC 850 form
        (None, None),
        ("", None),
        ("soon", None),
        ("inf", None),
        ("nan", None),
        ("29 Nov 2026 09:00:30", None),  # no zone: no moment
    ],
)
def test_retry_after_reads_seconds_and_dates(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == seconds
