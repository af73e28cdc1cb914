"""gbrain's rules for the link arguments the core takes more loosely: relationships, validity
values and the temporal filter, with gbrain's messages (the surface's invalid-params errors)."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Literal

from cairn.domain.errors import InvalidInput

MAX_RELATIONSHIP = 64
TEMPORAL_NAMES: dict[str, Literal["active", "all"]] = {
    "active": "active",
    "current": "active",
    "all": "all",
    "history": "all",
}
_RELATIONSHIP = re.compile(r"[a-z0-9_-]+")
_MONTH = re.compile(r"[0-9]{4}-[0-9]{2}")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INSTANT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def relationship(value: str) -> str:
    if not value:
        raise InvalidInput("invalid relationship: must not be empty")
    if len(value) > MAX_RELATIONSHIP:
        raise InvalidInput(f"invalid relationship: exceeds maximum length of {MAX_RELATIONSHIP} characters")
    if not _RELATIONSHIP.fullmatch(value):
        raise InvalidInput("invalid relationship: allowed characters are [a-z0-9_-]")
    return value


def validity(name: str, value: str | None) -> str | None:
    """`value` when it is `YYYY-MM`, `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ` naming a real month,
    day or instant (no offsets, no fractions); None stays None."""
    if value is None:
        return None
    try:
        if _MONTH.fullmatch(value):
            date.fromisoformat(f"{value}-01")
            return value
        if _DAY.fullmatch(value):
            date.fromisoformat(value)
            return value
        if _INSTANT.fullmatch(value):
            datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
            return value
    except ValueError:
        pass
    raise InvalidInput(f"invalid {name}: expected YYYY-MM, YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SSZ")


def temporal(value: str | None) -> Literal["active", "all"]:
    """`active` (or `current`, the default) and `all` (or `history`)."""
    if value is None:
        return "active"
    try:
        return TEMPORAL_NAMES[value]
    except KeyError:
        raise InvalidInput(f"invalid temporal filter: {value}") from None
