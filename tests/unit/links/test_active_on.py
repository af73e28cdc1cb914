"""gbrain's "active" link: `valid_from <= date('now')` and `valid_until >= date('now')`, compared
as SQLite compares text. The values are kept as written (a month, a day or an instant), so an
instant later today has not started, an instant of today has not ended, and a month ends on its
first day."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.services.links.repository import NumberedLink

TODAY = "2026-12-04"


def _link(valid_from: str | None = None, valid_until: str | None = None) -> NumberedLink:
    made = datetime(2026, 1, 1, tzinfo=UTC)
    return NumberedLink(1, "b", "s", "t", "works_at", made, valid_from=valid_from, valid_until=valid_until)


@pytest.mark.parametrize(
    ("valid_from", "valid_until", "active"),
    [
        (None, None, True),
        ("2026-12", None, True),  # a month sorts before each of its days
        ("2026-12-04", None, True),
        ("2026-12-04T00:00:00Z", None, False),  # an instant of today sorts after the bare day
        ("2026-12-04T23:59:00Z", None, False),
        ("2026-12-05", None, False),
        (None, "2026-12-04", True),
        (None, "2026-12-04T00:00:01Z", True),
        (None, "2026-12-03T23:59:59Z", False),
        (None, "2026-12", False),  # as an end, a month has ended by its first day
        (None, "2027-01", True),
        ("2025-01", "2026-12-04", True),
    ],
)
def test_active_is_gbrain_s_text_comparison_with_today(
    valid_from: str | None, valid_until: str | None, active: bool
) -> None:
    assert _link(valid_from, valid_until).active_on(TODAY) is active
    # the same as SQLite's own comparison of the strings
    assert ((valid_from or "") <= TODAY and (valid_until is None or valid_until >= TODAY)) is active
