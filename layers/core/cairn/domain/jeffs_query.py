"""The Jeffs Brain query language: what a search query means when it uses quotes, `*` or operators.

Reading a query:

1. Normalise: Unicode NFC, zero-width characters and the byte order mark removed, no-break spaces
   made spaces, runs of whitespace one space, trimmed.
2. Split into operands and operators. Text between double quotes is a phrase (a quote left open
   runs to the end); any other run of characters up to a space or a quote is a bare word, and a
   bare word ending in `*` is a prefix (`kube*`). `AND`, `OR` and `NOT` written in capitals and
   standing alone between spaces are operators; in lower case they are ordinary words.
3. An operator belongs to the operand after it; of two in a row the later counts, and one with no
   operand after it is dropped. A NOT on the first operand is dropped too (the operand stays).
4. Only when the query has neither a quote nor an operator (a bare-word query), words of two
   characters or fewer and stopwords (Cairn's English search list and a Dutch list) are dropped.

The meaning, as a tree of domain/boolean_query.py: operands with no operator between them are
alternatives (OR), AND joins an operand to the one before it (AND binds tighter than OR, so `a OR
b AND c` is a or both b and c), and every NOT operand is excluded from the whole query: `deploy
docker NOT kubernetes` is what holds deploy or docker and does not mention kubernetes.

Words are read as the full-text legs read them (domain/words.py: folded, split at anything not a
letter or digit). A bare word the index splits into several (`e-mail`, `INC-20049`) is those
words side by side or the word they make joined (`email`, `inc20049`); a prefix is the joined
word. A term or phrase made only of the index's stopwords is dropped in every query, as the
boolean queries drop them: no adapter can require such a word. At most MAX_OPERANDS operands are
read, as a plain query reads at most that many terms.

`uses_language` tells a query written in the language from a plain question; the search services
read only those through here (services/search/query_language.py).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

from cairn.domain.boolean_query import And, BoolQuery, Not, Or, Phrase, Prefix, Term
from cairn.domain.stopwords import DUTCH
from cairn.domain.words import MAX_TERMS, STOPWORDS, words

Operator = Literal["AND", "OR", "NOT"]
OPERATORS: Final[frozenset[str]] = frozenset({"AND", "OR", "NOT"})
MAX_OPERANDS: Final = MAX_TERMS
BARE_STOPWORDS: Final = STOPWORDS | DUTCH
"""What a bare-word query drops (besides words of two characters or fewer)."""

_INVISIBLE: Final = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
_NO_BREAK: Final = re.compile("[\u00a0\u2007\u202f]")
_SPACES: Final = re.compile(r"\s+")
_PIECE: Final = re.compile(r'"([^"]*)"?|[^\s"]+')


@dataclass(frozen=True)
class Token:
    """One operand as the language reads it: its folded words, and the operator before it."""

    kind: Literal["term", "phrase", "prefix"]
    words: tuple[str, ...]
    operator: Operator | None = None

    @property
    def text(self) -> str:
        """A phrase's words joined by spaces; a term's or prefix's joined into one word."""
        return " ".join(self.words) if self.kind == "phrase" else "".join(self.words)


@dataclass(frozen=True)
class Parsed:
    tokens: tuple[Token, ...]
    has_operators: bool  # a quote or an operator: stopwords are kept
    spoken: str  # the operands not excluded, as typed (quotes, `*` and operators gone)


@dataclass(frozen=True)
class Expression:
    """A query's meaning: `match`, what the keyword leg keeps (None: the query reduced to nothing,
    no keyword leg), and `excluded`, what no result may hold (None without a NOT)."""

    match: BoolQuery | None
    excluded: BoolQuery | None
    spoken: str  # Parsed.spoken: what a search embeds


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE)
    return _SPACES.sub(" ", _NO_BREAK.sub(" ", text)).strip()


def uses_language(text: str) -> bool:
    """Whether the query has a quote, an operator or a prefix (`kube*`)."""
    text = normalise(text)
    if '"' in text:
        return True
    return any(
        piece in OPERATORS or (piece.endswith("*") and bool(words(piece))) for piece in text.split(" ")
    )


def _pieces(text: str) -> list[tuple[str, str, bool]]:
    """(kind, raw text, bounded by spaces) of each operand or operator, in order."""
    out = []
    for m in _PIECE.finditer(text):
        bounded = (m.start() == 0 or text[m.start() - 1] == " ") and (
            m.end() == len(text) or text[m.end()] == " "
        )
        out.append(
            ("phrase", m.group(1), bounded) if m.group(0).startswith('"') else ("bare", m.group(0), bounded)
        )
    return out


def parse(text: str) -> Parsed:
    """The operands of a query with their operators (steps 1 to 4 of the module's docstring)."""
    pieces = _pieces(normalise(text))
    quoted = any(kind == "phrase" for kind, _raw, _b in pieces)
    operators = any(kind == "bare" and raw in OPERATORS and b for kind, raw, b in pieces)
    filtering = not quoted and not operators
    tokens: list[Token] = []
    spoken: list[str] = []
    pending: Operator | None = None
    for kind, raw, bounded in pieces:
        if kind == "bare" and raw in OPERATORS and bounded:
            pending = raw  # type: ignore[assignment]  # one of OPERATORS
            continue
        found = tuple(words(raw))
        if not found:
            continue  # punctuation alone, an empty phrase: dropped, the operator kept for the next
        operator = None if not tokens and pending == "NOT" else pending
        pending = None
        if operator != "NOT":
            spoken.append(raw if kind == "phrase" else raw.rstrip("*"))
        token = Token(
            "phrase" if kind == "phrase" else "prefix" if raw.endswith("*") else "term", found, operator
        )
        if filtering and (len(token.text) <= 2 or token.text in BARE_STOPWORDS):
            continue
        tokens.append(token)
        if len(tokens) == MAX_OPERANDS:
            break
    return Parsed(tuple(tokens), not filtering, " ".join(spoken))


def _node(token: Token) -> BoolQuery | None:
    """The tree of one operand; None when it holds nothing any index can require."""
    if token.kind == "prefix":
        return Prefix(token.text)
    parts = token.words
    whole = (
        None
        if all(word in STOPWORDS for word in parts)
        else Phrase(parts)
        if len(parts) > 1
        else Term(parts[0])
    )
    joined = (
        Term(token.text) if token.kind == "term" and len(parts) > 1 and token.text not in STOPWORDS else None
    )
    found = [node for node in (whole, joined) if node is not None]
    return None if not found else found[0] if len(found) == 1 else Or(tuple(found))


def _joined(kind: type[And | Or], items: list[BoolQuery]) -> BoolQuery:
    return items[0] if len(items) == 1 else kind(tuple(items))


def expression(text: str) -> Expression:
    """The meaning of a query (the module's docstring)."""
    groups: list[list[BoolQuery]] = []
    excluded: list[BoolQuery] = []
    parsed = parse(text)
    for token in parsed.tokens:
        node = _node(token)
        if node is None:
            continue
        if token.operator == "NOT":
            excluded.append(node)
        elif token.operator == "AND" and groups:
            groups[-1].append(node)
        else:
            groups.append([node])
    kept = _joined(Or, [_joined(And, group) for group in groups]) if groups else None
    gone = _joined(Or, excluded) if excluded else None
    if kept is not None and gone is not None:
        items = kept.items if isinstance(kept, And) else (kept,)
        kept = And((*items, Not(gone)))
    return Expression(kept, gone, parsed.spoken)
