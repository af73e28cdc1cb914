"""Assertions and their contradictions: offline rules that read subject–attribute–value claims out
of pages, and flag two pages that give one (subject, attribute) different values.

Rules (no model):

- **frontmatter**: every scalar entry but the page's own bookkeeping (title, type, slug, tags, …)
  is an attribute of the page's subject (its title, else its slug): `role: CEO` on "Alice" is
  (Alice, role, CEO);
- **key-value lines** of the compiled truth, `Key: value` (a list bullet and `**bold**` keys are
  fine), with a key of at most four words and a short value: (page subject, key, value);
- **sentences** of the compiled truth naming a capitalised subject: `X is a Y` / `X is an Y`
  (is_a), `X works at Y` (works_at), `X founded Y` (founded), and `X is Y.` when Y ends the
  sentence in at most five words (is);
- **roles stated across subjects**: `X is the R of Y`, `X, the R of Y`, `The R of Y is X` and
  `Y's R is X` (R a role of one to three words, Y a name) are (Y, R, X): an attribute of Y, the
  subject of another page, so `Bob is the CEO of Acme.` on Bob's page meets `ceo: Alice` on Acme's.
  "the" makes the role a single holder's; a few spelled-out titles fold to their acronyms
  (ROLE_SYNONYMS). Such a sentence is not also read as `X is Y`.

Subjects and values compare case-insensitively with their whitespace and trailing punctuation
normalised; attributes are lowercased with spaces as `_`. Two assertions conflict when they come
from different pages, share subject and attribute, and differ in value. A page asserting several
values itself (someone is both a founder and an investor) is not a contradiction.

The rules' assertions are read from the pages each time (page_assertions.py adds and keeps a
language model's); contradictions are not stored, so one's `detected_at` is when the later of its
two pages was last written (when the conflict arose).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from cairn.domain.pages import PageText

CONFLICT_TYPE = "assertion_conflict"
BOOKKEEPING_KEYS = frozenset(
    {
        "title",
        "type",
        "slug",
        "gbrain_id",
        "tags",
        "aliases",
        "summary",
        "wing",
        "room",
        "created",
        "updated",
        "created_at",
        "updated_at",
        "date",
        "source",
        "sources",
        "id",
    }
)
MAX_VALUE_CHARS = 80
MAX_VALUE_WORDS = 8
MIN_VALUE_CHARS = 2
MAX_TOKEN_CHARS = 200
PRONOUNS = frozenset({"he", "she", "it", "they", "this", "that", "there", "we", "i", "you", "what", "who"})

_NAME = r"[A-Z][A-Za-z0-9'&-]*(?: [A-Z][A-Za-z0-9'&-]*){0,4}"
_PHRASE = r"[A-Za-z0-9][A-Za-z0-9'&-]*(?: [A-Za-z0-9][A-Za-z0-9'&-]*){0,5}"
_SENTENCES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("is_a", re.compile(rf"(?<![\w'])(?P<subject>{_NAME}) is an? (?P<value>{_PHRASE})")),
    ("works_at", re.compile(rf"(?<![\w'])(?P<subject>{_NAME}) works at (?P<value>{_NAME})")),
    ("founded", re.compile(rf"(?<![\w'])(?P<subject>{_NAME}) founded (?P<value>{_NAME})")),
    (
        "is",
        re.compile(
            rf"(?<![\w'])(?P<subject>{_NAME}) is (?!an? |not )"
            r"(?P<value>[A-Za-z0-9][\w'&-]*(?: [\w'&-]+){0,4})(?=[.!;]\s|[.!;]?$)",
            re.MULTILINE,
        ),
    ),
)
_ROLE = r"[A-Za-z][A-Za-z-]*(?: [A-Za-z][A-Za-z-]*){0,2}"
_ROLES: tuple[re.Pattern[str], ...] = (
    re.compile(rf"(?<![\w'])(?P<value>{_NAME}),? (?:is|was) the (?P<role>{_ROLE}) of (?P<subject>{_NAME})"),
    re.compile(rf"(?<![\w'])(?P<value>{_NAME}), the (?P<role>{_ROLE}) of (?P<subject>{_NAME})"),
    re.compile(rf"(?<![\w'])[Tt]he (?P<role>{_ROLE}) of (?P<subject>{_NAME}) (?:is|was) (?P<value>{_NAME})"),
    re.compile(rf"(?<![\w'])(?P<subject>{_NAME})['’]s (?P<role>{_ROLE}) (?:is|was) (?P<value>{_NAME})"),
)
ROLE_SYNONYMS = {
    "chief_executive_officer": "ceo",
    "chief_executive": "ceo",
    "chief_technology_officer": "cto",
    "chief_financial_officer": "cfo",
    "chief_operating_officer": "coo",
}
_KEY_VALUE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?P<key>[A-Za-z][A-Za-z0-9_-]*(?: [A-Za-z0-9_-]+){0,3})"
    r"(?:\*\*|__)?\s*:(?:\*\*|__)?\s+(?P<value>\S.*)"
)
"""The value runs to the end of the line (its trailing spaces go with _value). Not `\\S.*?\\s*$`:
the lazy value tried `\\s*$` at each of its characters, so a line of a value and a run of 1 MB of
spaces before a last letter took half an hour."""
_LONG_TOKEN = re.compile(rf"(?<![A-Za-z0-9'&-])[A-Za-z0-9'&-]{{{MAX_TOKEN_CHARS + 1},}}")
"""A run of the characters of a name's word longer than any name's: the sentence rules tried a
name at each capital after a `-` or `&` in it, each reading to the run's end (the square of its
length: 1 MB of `A-` took hours). The rules read the line with such runs blanked."""


@dataclass(frozen=True)
class Assertion:
    subject: str
    attribute: str
    value: str
    evidence: str
    """Where it was read: `frontmatter`, or the line or sentence it came from."""

    @property
    def key(self) -> tuple[str, str]:
        return (_fold(self.subject), self.attribute)


@dataclass(frozen=True)
class AssertedPage:
    """What the rules need of a page: its name in the output, its subject, text and last write."""

    slug: str
    subject: str
    text: PageText
    updated_at: datetime
    brain_id: str = ""
    document_id: str = ""
    version: int = 0


@dataclass(frozen=True)
class Contradiction:
    page_slug: str
    other_page_slug: str
    type: str
    description: str
    detected_at: datetime


def extract(text: PageText, subject: str) -> list[Assertion]:
    """The page's assertions in reading order (frontmatter first), each (subject, attribute,
    value) once."""
    found: list[Assertion] = []
    for key in sorted(text.frontmatter):
        attribute = _attribute(key)
        value = _value(text.frontmatter[key])
        if attribute not in BOOKKEEPING_KEYS and _short(value):
            found.append(Assertion(subject, attribute, value, "frontmatter"))
    in_fence = False
    for line in text.compiled_truth.split("\n"):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or line.lstrip().startswith(("#", ">", "|")):
            continue
        pair = _KEY_VALUE.match(line)
        if pair and "://" not in line:
            value = _value(pair["value"])
            if _short(value):
                found.append(Assertion(subject, _attribute(pair["key"]), value, line.strip()))
                continue
        line = _LONG_TOKEN.sub(_blank, line)
        roles = _roles(line)
        found += [assertion for assertion, _ in roles]
        for attribute, pattern in _SENTENCES:
            for match in pattern.finditer(line):
                if attribute == "is" and any(start <= match.start() < end for _, (start, end) in roles):
                    continue
                value = _value(match["value"])
                if _short(value) and _fold(match["subject"]) not in PRONOUNS:
                    found.append(Assertion(_value(match["subject"]), attribute, value, _value(match[0])))
    seen: set[tuple[str, str, str]] = set()
    unique: list[Assertion] = []
    for assertion in found:
        marker = (*assertion.key, _fold(assertion.value))
        if marker not in seen:
            seen.add(marker)
            unique.append(assertion)
    return unique


def contradictions(
    pages: Iterable[AssertedPage],
    *,
    focus: str | None = None,
    extract: Callable[[AssertedPage], list[Assertion]] | None = None,
) -> list[Contradiction]:
    """Every pair of pages asserting different values for one (subject, attribute), one entry per
    conflicting pair of values; with `focus` (a page's slug) only those touching that page. Sorted
    by page, other page and description. `extract` gives a page's assertions (the rules' by
    default)."""
    claims_of = extract or _by_rules
    by_key: dict[tuple[str, str], list[tuple[AssertedPage, Assertion]]] = defaultdict(list)
    for page in pages:
        for assertion in claims_of(page):
            by_key[assertion.key].append((page, assertion))
    found: dict[tuple[str, str, str], Contradiction] = {}
    for claims in by_key.values():
        # Only claims of two pages can conflict: pairing every two claims of a key first made a
        # page of 80,000 `Role: …` lines (1 MB) cost 3.2 billion pairs of its own claims. A slug
        # names one page here (page_assertions.py keys its claims by slug).
        by_page: dict[str, list[tuple[AssertedPage, Assertion, str]]] = defaultdict(list)
        for page, assertion in claims:
            by_page[page.slug].append((page, assertion, _fold(assertion.value)))
        groups = list(by_page.values())
        for g, lefts in enumerate(groups):
            for rights in groups[g + 1 :]:
                if focus is not None and focus not in (lefts[0][0].slug, rights[0][0].slug):
                    continue
                for left_page, left, left_value in lefts:
                    for right_page, right, right_value in rights:
                        if left_value != right_value:
                            _conflict(found, (left_page, left), (right_page, right))
    return [found[k] for k in sorted(found)]


def _conflict(
    found: dict[tuple[str, str, str], Contradiction],
    left: tuple[AssertedPage, Assertion],
    right: tuple[AssertedPage, Assertion],
) -> None:
    """Record the contradiction of two claims of one (subject, attribute) on two pages."""
    first, second = sorted([left, right], key=lambda c: c[0].slug)
    values = sorted([left[1].value, right[1].value], key=_fold)
    description = (
        f"{first[1].subject} has conflicting {left[1].attribute} assertions: {values[0]} vs {values[1]}"
    )
    found.setdefault(
        (first[0].slug, second[0].slug, description),
        Contradiction(
            page_slug=first[0].slug,
            other_page_slug=second[0].slug,
            type=CONFLICT_TYPE,
            description=description,
            detected_at=max(_utc(first[0].updated_at), _utc(second[0].updated_at)),
        ),
    )


def _roles(line: str) -> list[tuple[Assertion, tuple[int, int]]]:
    """The role statements of a line (`X is the R of Y`: (Y, R, X)) with where each was read."""
    out: list[tuple[Assertion, tuple[int, int]]] = []
    for pattern in _ROLES:
        for match in pattern.finditer(line):
            subject, value = _value(match["subject"]), _value(match["value"])
            if {_fold(subject), _fold(value)} & PRONOUNS or not _short(value):
                continue
            role = _attribute(match["role"])
            attribute = ROLE_SYNONYMS.get(role, role)
            if attribute in BOOKKEEPING_KEYS:
                continue
            out.append((Assertion(subject, attribute, value, _value(match[0])), match.span()))
    return out


def _blank(run: re.Match[str]) -> str:
    return "\0" * len(run[0])


def _by_rules(page: AssertedPage) -> list[Assertion]:
    return extract(page.text, page.subject)


def merged(rules: list[Assertion], more: Iterable[Assertion]) -> list[Assertion]:
    """The rules' assertions, then those of `more` that none of them repeats (subject, attribute
    and value, ignoring case)."""
    seen = {(*a.key, _fold(a.value)) for a in rules}
    out = list(rules)
    for assertion in more:
        marker = (*assertion.key, _fold(assertion.value))
        if marker not in seen:
            seen.add(marker)
            out.append(assertion)
    return out


def claim(subject: str, attribute: str, value: str) -> tuple[str, str, str] | None:
    """(subject, attribute, value) normalised as the rules normalise theirs, or None when a part
    is empty or the value is not short (a model's triple passes through here)."""
    subject, attribute, value = _value(subject), _attribute(attribute), _value(value)
    if not subject or len(subject) > MAX_VALUE_CHARS or not attribute or len(attribute) > MAX_VALUE_CHARS:
        return None
    if attribute in BOOKKEEPING_KEYS or _fold(subject) in PRONOUNS or not _short(value):
        return None
    return subject, attribute, value


def page_source(text: PageText) -> str:
    """What a model reads of a page: its frontmatter as `key: value` lines, then its compiled
    truth (the timeline records history, not current claims)."""
    head = "\n".join(f"{key}: {text.frontmatter[key]}" for key in sorted(text.frontmatter))
    return f"{head}\n\n{text.compiled_truth}".strip()


def _attribute(key: str) -> str:
    return re.sub(r"\s+", "_", key.strip().lower())


def _value(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(".!?;:,").strip().strip("*_`").strip()


def _short(value: str) -> bool:
    return MIN_VALUE_CHARS <= len(value) <= MAX_VALUE_CHARS and len(value.split()) <= MAX_VALUE_WORDS


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
