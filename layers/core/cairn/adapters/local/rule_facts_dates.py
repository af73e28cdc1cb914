"""Dates in what people say: spotting them, and anchoring relative ones to when they were said.

"yesterday" said on 8 May 2023 becomes "yesterday (on 7 May 2023)"; a phrase whose day is fuzzy
("last week") gets a fuzzy anchor ("(the week before 8 May 2023)"). Only the anchor is added; the
phrase itself is kept. Weeks start on Monday; a bare weekday ("on Friday") is read as past unless
the sentence speaks of the future.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from functools import lru_cache

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a couple": 2, "couple of": 2,
}  # fmt: skip
_WEEKDAYS = {
    "mon": 0, "monday": 0, "tue": 1, "tues": 1, "tuesday": 1, "wed": 2, "wednesday": 2,
    "thu": 3, "thur": 3, "thurs": 3, "thursday": 3, "fri": 4, "friday": 4,
    "sat": 5, "saturday": 5, "sun": 6, "sunday": 6,
}  # fmt: skip
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9}
_SEASON = "spring|summer|fall|autumn|winter"
_DAY_NAMES = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_COUNT = (
    r"(?P<n>\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|(?:a\s+)?couple(?:\s+of)?|a\s+few)"
)
_WEEKDAY = (
    r"(?P<wd>mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?"
    r"|sat(?:urday)?|sun(?:day)?)"
)
_FUTURE = re.compile(
    r"\b(?:will|going to|gonna|plan(?:ning)?|next|can't wait|looking forward|hope to|want to|"
    r"tomorrow|upcoming|coming up)\b|'ll\b",
    re.I,
)
_MONTHS = "January February March April May June July August September October November December"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_ABSOLUTE = re.compile(
    rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b"
    rf"|\b(?:in|since|during|by|until|of|early|late|mid-?)\s+{_MONTH}\b|\b(?:19|20)\d\d\b"
    r"|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{1,2}(?::\d\d)?\s?(?:am|pm)\b"
    r"|\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)s?\b"
)

Groups = dict[str, str]
Resolver = Callable[[Groups, date, bool], str | None]


def _count(m: Groups) -> int | None:
    raw = " ".join(m["n"].lower().split())
    return int(raw) if raw.isdigit() else _NUMBERS.get(raw)


def fmt_day(d: date) -> str:
    return f"{d.day} {d:%B} {d.year}"


def _fmt_month(d: date) -> str:
    return f"{d:%B} {d.year}"


def _shift_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _day_offset(days: int) -> Resolver:
    return lambda m, d, f: f"on {fmt_day(d + timedelta(days=days))}"


def _ago(m: Groups, d: date, future: bool) -> str | None:
    n, unit = _count(m), m["unit"].lower().rstrip("s")
    if n is None:  # "a few days ago": only the direction is known
        return f"{' '.join(m['n'].split())} {unit}s before {fmt_day(d)}"
    if unit == "day":
        return f"on {fmt_day(d - timedelta(days=n))}"
    if unit == "month":
        return f"in {_fmt_month(_shift_months(d, -n))}"
    if unit == "year":
        return f"in {d.year - n}"
    said = " ".join(m["n"].split())
    return f"the {unit} before {fmt_day(d)}" if n == 1 else f"{said} {unit}s before {fmt_day(d)}"


def _within(m: Groups, d: date, future: bool) -> str | None:
    n, unit = _count(m), m["unit"].lower().rstrip("s")
    if n is None:
        return None
    if unit == "day":
        return f"on {fmt_day(d + timedelta(days=n))}"
    if unit == "month":
        return f"in {_fmt_month(_shift_months(d, n))}"
    if unit == "year":
        return f"in {d.year + n}"
    said = " ".join(m["n"].split())
    return f"the {unit} after {fmt_day(d)}" if n == 1 else f"{said} {unit}s after {fmt_day(d)}"


def _relative_unit(m: Groups, d: date, future: bool) -> str | None:
    which, unit = m["which"].lower(), m["unit"].lower()
    if unit == "month":
        return f"in {_fmt_month(_shift_months(d, {'last': -1, 'this': 0, 'next': 1}[which]))}"
    if unit == "year":
        return f"in {d.year + {'last': -1, 'this': 0, 'next': 1}[which]}"
    side = {"last": "before", "this": "of", "next": "after"}[which]
    return f"the {unit} {side} {fmt_day(d)}"


def _weekday(m: Groups, d: date, future: bool) -> str | None:
    target = _WEEKDAYS[m["wd"].lower()]
    which = m["which"].lower()
    if which == "last" or (which in ("", "this") and not future):
        back = (d.weekday() - target) % 7
        back = 7 if back == 0 and which != "this" else back
        return f"on {fmt_day(d - timedelta(days=back))}"
    ahead = (target - d.weekday()) % 7
    ahead = 7 if ahead == 0 and which != "this" else ahead
    return f"on {fmt_day(d + timedelta(days=ahead))}"


def _from_day(m: Groups, d: date, future: bool) -> str | None:
    """ "a week from today", "three days from tomorrow": exact for days and weeks."""
    start = d + timedelta(days=1 if m["from"].lower() == "tomorrow" else 0)
    n, unit = _count(m), m["unit"].lower().rstrip("s")
    if n is None:
        return None
    if unit in ("day", "week"):
        return f"on {fmt_day(start + timedelta(days=n * (7 if unit == 'week' else 1)))}"
    return _within(m, start, future)


def _season(m: Groups, d: date, future: bool) -> str | None:
    which, name = m["which"].lower(), m["season"].lower()
    if name == "winter":
        side = {"last": "before", "this": "of", "next": "after"}[which]
        return f"the winter {side} {fmt_day(d)}"
    start = _SEASONS[name]
    year = d.year
    if which == "last" and d.month < start + 3:
        year -= 1
    elif which == "next" and d.month >= start:
        year += 1
    return f"in {'fall' if name == 'autumn' else name} {year}"


def _other_day(m: Groups, d: date, future: bool) -> str | None:
    return f"a few days before {fmt_day(d)}"


_FROM = r"(?P<from>today|now|tomorrow)"
_NOT_HABIT = "(?<![Ee]very )(?<![Ee]ach )(?<![Ee]very other )"
_RULES: list[tuple[re.Pattern[str], Resolver]] = [
    # before the one-word days: "yesterday" ends "the day before yesterday"
    (re.compile(r"\bthe\s+day\s+before\s+yesterday\b", re.I), _day_offset(-2)),
    (re.compile(r"\bthe\s+day\s+after\s+tomorrow\b", re.I), _day_offset(2)),
    (re.compile(rf"\b{_COUNT}\s+(?P<unit>days?|weeks?|months?|years?)\s+from\s+{_FROM}\b", re.I), _from_day),
    (re.compile(rf"\b{_COUNT}\s+(?P<unit>days?|weeks?|weekends?|months?|years?)\s+ago\b", re.I), _ago),
    (re.compile(rf"\bin\s+{_COUNT}\s+(?P<unit>days?|weeks?|months?|years?)\b", re.I), _within),
    (re.compile(rf"\b(?P<which>last|this|next)\s+{_WEEKDAY}\b", re.I), _weekday),
    (re.compile(r"\b(?P<which>last|this|next)\s+(?P<unit>week|weekend|month|year)\b", re.I), _relative_unit),
    (re.compile(rf"\b(?P<which>last|this|next)\s+(?P<season>{_SEASON})\b", re.I), _season),
    (re.compile(r"\blast\s+night\b|\byesterday\b", re.I), _day_offset(-1)),
    (re.compile(r"\btomorrow\b", re.I), _day_offset(1)),
    (re.compile(r"\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b", re.I), _day_offset(0)),
    (re.compile(r"\bthe\s+other\s+day\b", re.I), _other_day),
    # A capitalised weekday on its own ("on Friday"), not a habit ("on Fridays", "every Friday").
    (re.compile(rf"{_NOT_HABIT}\b(?P<which>on\s+)?(?P<wd>{_DAY_NAMES})\b(?!s)"), _weekday),
]  # fmt: skip


def _groups(m: re.Match[str]) -> Groups:
    groups = {k: v or "" for k, v in m.groupdict().items()}
    if groups.get("which", "").strip().lower() == "on":
        groups["which"] = ""  # "on Friday" has no modifier
    return groups


def anchor_dates(text: str, said_on: date) -> tuple[str, int]:
    """`text` with each relative date phrase followed by its resolved date; also how many were anchored."""
    future = bool(_FUTURE.search(text))
    spans: list[tuple[int, int, str]] = []
    for pattern, resolve in _RULES:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end, _ in spans):
                continue  # an earlier, more specific rule already took this phrase
            if text[m.end() :].lstrip().startswith("("):
                continue  # already anchored
            try:
                label = resolve(_groups(m), said_on, future)
            except (OverflowError, ValueError):  # a date past the calendar's ends: left as said
                label = None
            if label:
                end = m.end() + 2 if text.startswith("'s", m.end()) else m.end()  # "tomorrow's"
                spans.append((m.start(), end, label))
    out, last = [], 0
    for _start, end, label in sorted(spans):
        out.append(text[last:end])
        out.append(f" ({label})")
        last = end
    out.append(text[last:])
    return "".join(out), len(spans)


_UNNAMED = re.compile(r"\(\?P<\w+>")
_ANY_RELATIVE = re.compile("|".join(_UNNAMED.sub("(?:", p.pattern) for p, _ in _RULES[:-1]), re.I)
_BARE_WEEKDAY = _RULES[-1][0]


@lru_cache(maxsize=8192)
def has_date(text: str) -> bool:
    """Whether the text names a time: an absolute date, a weekday, a year, or a relative phrase."""
    return bool(_ABSOLUTE.search(text) or _ANY_RELATIVE.search(text) or _BARE_WEEKDAY.search(text))


MONTH_NAMES = frozenset(_MONTHS.split())
