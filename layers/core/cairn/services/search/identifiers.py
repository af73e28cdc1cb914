"""The identifiers a query names (INC-20049, ec2, uniqmark0x2092) and the notes that name them.

Words are runs of ASCII letters and digits in the NFKC form of the text (a full-width ＩＮＣ－２００４９
is INC-20049), lower-cased; anything else separates them, so an id inside Japanese or Chinese text
is a word of its own. A letter prefix joined to a number of three digits and more by a hyphen or
an underscore is one word with it: INC-20049, INC_20049 and INC20049 are all `inc20049`; so is a
dotted version or address (`v1.2.3`, `python3.11`, `10.0.0.12`: a prefix and two numbers, or three
numbers; `4.19` is an amount), and so is a name joined by underscores (`report_v2` of
report_v2.pdf). A word is an identifier when it mixes letters and digits, is dotted, or is five
digits and more (a year or a small count names nothing).

One identifier names another when they are the same word, or when one is the other's digits alone
(`20049` asked, a note naming INC-20049; or the reverse), never across two prefixes (INC-20049 is
not PR-20049).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

_JOINED = re.compile(r"(?<![a-z0-9])([a-z]+)[-_](?=[0-9]{3})")  # INC-20049, not us-east-1 or gpt-4
_WORD = re.compile(
    r"[a-z]+[0-9]+(?:\.[0-9]+)+|[0-9]+(?:\.[0-9]+){2,}"  # v1.2.3, python3.11, 10.0.0.12
    r"|[a-z0-9]+(?:_[a-z0-9]+)+"  # report_v2, build_2024_q3
    r"|[a-z0-9]+"
)
_PREFIXED = re.compile(r"([a-z]+)([0-9]{3,})")
_SPACED = re.compile(r"(?<![a-z0-9.])([a-z]{1,6})\s+([0-9]{5,})(?![a-z0-9]|\.[0-9])")  # INC 20049

STRONG_DIGITS: Final = 3
"""An identifier with a run of this many digits names one thing (INC-20049, uniqmark0x2092), as a
dotted or underscored one does (v1.2.3, report_v2); one with fewer (ec2, mp4, 3pm, iphone15) may
just as well be an everyday word of the question."""

ABOUT: Final = 0.5
"""The `share` from which a note is about the identifiers asked, not a list that names them."""


def _folded(text: str) -> str:
    return (text if text.isascii() else unicodedata.normalize("NFKC", text)).lower()


def words(text: str) -> list[str]:
    """The text's words, as identifiers are read from it (the module's docstring)."""
    return _WORD.findall(_JOINED.sub(r"\1", _folded(text)))


def is_identifier(word: str) -> bool:
    if "." in word:
        return True  # only the dotted alternatives of _WORD hold one
    if "_" in word:
        return any(ch.isdigit() for ch in word)  # report_v2, not snake_case
    if word.isdigit():
        return len(word) >= 5
    return any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word)


def identifiers(text: str) -> tuple[str, ...]:
    """The distinct identifiers of `text`, sorted."""
    return tuple(sorted({w for w in words(text) if is_identifier(w)}))


def strong(word: str) -> bool:
    return "." in word or "_" in word or re.search(rf"[0-9]{{{STRONG_DIGITS},}}", word) is not None


def digits_of(word: str) -> str | None:
    """The digits of a prefixed identifier with a long enough number (`inc20049` -> `20049`)."""
    m = _PREFIXED.fullmatch(word)
    return m.group(2) if m and len(m.group(2)) >= 5 else None


def kind(word: str) -> str:
    """What sort of identifier a word is, for telling a note about one from a list of many of its
    sort: a prefixed ticket number keeps its prefix (`inc9`: INC-20049, INC0010023), a number is
    `9` (20049, a count of 120000), a dotted one its shape (`v9.9.9`), any other mix of letters
    and digits is `a9` (ec2, s3, web3)."""
    if "." in word:
        return re.sub(r"[0-9]+", "9", word)
    if word.isdigit():
        return "9"
    m = _PREFIXED.fullmatch(word)
    return f"{m.group(1)}9" if m else "a9"


@dataclass(frozen=True)
class Asked:
    """The identifiers a query names, and whether it is bare: at least as many terms naming one as
    other terms (`INC-20049`, `INC-20049 details`, `ec2 outage`), so its meaning cannot say how
    near a note is."""

    words: tuple[str, ...] = ()
    bare: bool = False

    @property
    def strong(self) -> bool:
        """Whether an identifier asked names one thing beyond doubt (`strong`)."""
        return any(strong(w) for w in self.words)


def asked(query: str) -> Asked:
    """The identifiers of `query`; bare counts its terms (split at spaces), so the `INC` of
    `INC-20049` is part of the identifier's term, not another word. A query in a script written
    without spaces is one term: it is bare only when that term is an identifier alone."""
    found = identifiers(query)
    terms = unicodedata.normalize("NFKC", query).split()
    named = sum(bool(identifiers(term)) and _only_identifiers(term) for term in terms)
    return Asked(found, bool(found) and 2 * named >= len(terms))


def keyword_text(query: str) -> str:
    """`query` as the keyword leg reads it: each prefixed ticket number it names also in the
    spellings a note may use, joined (`inc20049`) and as its digits (`20049`, the word a full-text
    index makes of INC-20049), unless the query has them already; a note that writes INC-20049 is
    then found for INC20049, INC_20049 or ＩＮＣ－２００４９, and one that writes INC20049 for `INC 20049`
    (a short word before a number of five digits and more; the vector leg reads the query as typed)."""
    typed = set(_WORD.findall(query.lower()))
    spaced = [prefix + number for prefix, number in _SPACED.findall(_folded(query))]
    extra = [
        form
        for word in (*identifiers(query), *spaced)
        if (number := digits_of(word)) is not None
        for form in (word, number)
        if form not in typed
    ]
    return " ".join([query, *dict.fromkeys(extra)]) if extra else query


def _only_identifiers(term: str) -> bool:
    """Whether a term holds nothing but identifiers and punctuation (`INC-20049?`, not `ec2上的`)."""
    rest = _WORD.sub("", _JOINED.sub(r"\1", term.lower()))
    return not any(ch.isalnum() for ch in rest)


class Sought:
    """The asked identifiers, read once for all the notes of a search (a query may name thousands)."""

    def __init__(self, exact: Sequence[str]) -> None:
        self.ids = frozenset(exact)
        self.kinds = frozenset(kind(w) for w in exact)
        self.by_digits: dict[str, set[str]] = {}
        for word in exact:
            if (number := digits_of(word)) is not None:
                self.by_digits.setdefault(number, set()).add(word)
        self.needles = frozenset(max(re.findall(r"[0-9]+", w), key=len) for w in exact)

    def named_by(self, held: str) -> set[str]:
        """The asked identifiers a note's identifier `held` names: the same word, or one is the
        other's digits alone (the module's docstring)."""
        out = {held} & self.ids
        if (number := digits_of(held)) is not None and number in self.ids:
            out.add(number)
        return out | self.by_digits.get(held, set())

    def share(self, own: Iterable[str]) -> float:
        """How much a note whose identifiers are `own` is about those asked: the asked ones it
        names over its identifiers of their sorts (and those naming one): 1 for the incident note
        that names INC-20049 beside hosts and counts, 1/15 for an audit list of fifteen incident
        ids. 0 when it names none of them."""
        named: set[str] = set()
        alike = 0
        for held in own:
            by = self.named_by(held)
            named |= by
            alike += bool(by) or kind(held) in self.kinds
        return len(named) / max(alike, len(named)) if named else 0.0

    def note_share(self, text: str) -> float:
        """`share` of a note's text; a note without the digits of an asked identifier is not read."""
        folded = _folded(text)
        if not any(needle in folded for needle in self.needles):
            return 0.0
        return self.share(identifiers(folded))
