"""Boolean full-text queries: a parser, the query tree, and how a query meets a text.

Grammar (PostgreSQL to_tsquery-like; precedence NOT > AND > OR, implicit AND between operands):

    query    := or_expr
    or_expr  := and_expr (("OR" | "|") and_expr)*
    and_expr := not_expr (["AND" | "&"] not_expr)*
    not_expr := ("NOT" | "!" | "-") not_expr | operand
    operand  := word | '"' words '"' | "(" or_expr ")"

The keywords are upper-case only (`and`, `or`, `not` are words, and stopwords). `-` negates only
when it starts a token and a word, quote or parenthesis follows it at once (`-draft`); inside a
word it is a separator (`e-mail` is the phrase "e mail"). A word is split and folded exactly as
the full-text legs do (domain/words.py): one word is a Term, a word that splits into several
(`e-mail`, `don't`, `title:zebra`) is a Phrase, as is quoted text. Stopwords, and operands with
no letters or digits (`*`, `^`), are dropped as to_tsquery drops them (a phrase keeps its
stopwords, for adjacency, and is dropped only when made of nothing else; a quote left open runs
to the end of the query); an operator left
without its operand then lets it go too (`cats AND the` is `cats`).

Every query must be rankable: something it matches must contain one of its positive terms. So
a query or group made only of negations is refused, and so is NOT as an operand of OR (`a OR NOT
b` would match nearly everything); NOT narrows what the other operands of its group match.
Every shape this accepts can be written as an FTS5 expression and as an OpenSearch bool query.
The tree also has a Prefix (a word's beginning: `kube*` finds kubernetes), which this parser
never makes: the Jeffs Brain query language makes it (domain/jeffs_query.py).

Positions in error messages count characters from 1.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.domain.errors import InvalidInput
from cairn.domain.words import STOPWORDS, WORD, words

MAX_CHARS = 500
MAX_WORDS = 50  # words of terms and phrases together
START, STOP = "<b>", "</b>"


@dataclass(frozen=True)
class Term:
    word: str  # one folded word (domain/words.py), never a stopword when parsed


@dataclass(frozen=True)
class Phrase:
    words: tuple[str, ...]  # folded words that must be adjacent, in order, within one field


@dataclass(frozen=True)
class Prefix:
    stem: str  # one folded word: matches every word that starts with it (the query language's `kube*`)


@dataclass(frozen=True)
class And:
    items: tuple[BoolQuery, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[BoolQuery, ...]


@dataclass(frozen=True)
class Not:
    item: BoolQuery


BoolQuery = Term | Phrase | Prefix | And | Or | Not


# -- lexing --------------------------------------------------------------------------------------

_SPECIAL = '()"&|'
_KEYWORDS = {"AND": "and", "OR": "or", "NOT": "not", "&": "and", "|": "or", "!": "not"}


@dataclass(frozen=True)
class _Token:
    kind: str  # word, phrase, and, or, not, open, close
    text: str
    pos: int  # 1-based


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            out.append(_Token("open" if ch == "(" else "close", ch, i + 1))
            i += 1
        elif ch == '"':
            end = text.find('"', i + 1)
            end = n if end < 0 else end  # an unclosed quote runs to the end, as to_tsquery's callers do
            out.append(_Token("phrase", text[i + 1 : end], i + 1))
            i = end + 1
        elif ch in "&|!" or (
            ch == "-" and i + 1 < n and not text[i + 1].isspace() and text[i + 1] not in ")&|-"
        ):
            out.append(_Token(_KEYWORDS.get(ch, "not"), ch, i + 1))
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            raw = text[start:i]
            out.append(_Token(_KEYWORDS.get(raw, "word") if raw.isupper() else "word", raw, start + 1))
    return out


def _check_parentheses(tokens: list[_Token]) -> None:
    opened: list[int] = []
    for token in tokens:
        if token.kind == "open":
            opened.append(token.pos)
        elif token.kind == "close":
            if not opened:
                raise InvalidInput(f"unbalanced parenthesis at position {token.pos}")
            opened.pop()
    if opened:
        raise InvalidInput(f"unbalanced parenthesis at position {opened[-1]}")


# -- parsing: raw nodes keep positions for the checks after normalising ----------------------------


@dataclass(frozen=True)
class _Raw:
    kind: str  # word, phrase, and, or, not
    pos: int
    text: str = ""
    items: tuple[_Raw, ...] = ()


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def starts_operand(self) -> bool:
        token = self.peek()
        return token is not None and token.kind in ("word", "phrase", "open", "not")

    def parse(self) -> _Raw:
        node = self.or_expr()
        token = self.peek()
        if token is not None:  # only a stray operator can be left (parentheses are balanced)
            raise InvalidInput(f"{token.text} needs a term before it at position {token.pos}")
        return node

    def or_expr(self) -> _Raw:
        items = [self.and_expr()]
        pos = items[0].pos
        while (token := self.peek()) is not None and token.kind == "or":
            self.at += 1
            if not self.starts_operand():
                raise InvalidInput(f"{token.text} needs a term after it at position {token.pos}")
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else _Raw("or", pos, items=tuple(items))

    def and_expr(self) -> _Raw:
        token = self.peek()
        if token is not None and token.kind in ("and", "or"):
            raise InvalidInput(f"{token.text} needs a term before it at position {token.pos}")
        items = [self.not_expr()]
        while (token := self.peek()) is not None:
            if token.kind == "and":
                self.at += 1
                if not self.starts_operand():
                    raise InvalidInput(f"{token.text} needs a term after it at position {token.pos}")
            elif not self.starts_operand():
                break
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else _Raw("and", items[0].pos, items=tuple(items))

    def not_expr(self) -> _Raw:
        token = self.peek()
        assert token is not None  # callers check starts_operand first
        if token.kind == "not":
            self.at += 1
            if not self.starts_operand():
                raise InvalidInput(f"{token.text} needs a term after it at position {token.pos}")
            return _Raw("not", token.pos, items=(self.not_expr(),))
        self.at += 1
        if token.kind == "open":
            if (inner := self.peek()) is not None and inner.kind == "close":
                raise InvalidInput(f"empty group at position {token.pos}")
            node = self.or_expr()
            self.at += 1  # the closing parenthesis: balance was checked
            return _Raw("and", token.pos, items=(node,))  # a group: a one-item AND, for its position
        if token.kind == "phrase" and not token.text.strip():
            raise InvalidInput(f"empty phrase at position {token.pos}")
        return _Raw(token.kind, token.pos, text=token.text)


class _Normaliser:
    """Raw nodes → the query tree: words folded, stopwords dropped, NOT placement checked."""

    def __init__(self) -> None:
        self.count = 0

    def node(self, raw: _Raw) -> BoolQuery | None:
        if raw.kind in ("word", "phrase"):
            return self.operand(raw)
        if raw.kind == "not":
            inner = self.node(raw.items[0])
            if inner is None:
                return None
            if isinstance(inner, Not):  # NOT NOT x is x
                return inner.item
            if isinstance(inner, And) and _negative(inner):  # NOT (NOT a NOT b) is a OR b
                return Or(tuple(item.item for item in inner.items if isinstance(item, Not)))
            return Not(inner)
        pairs = [(item, node) for item in raw.items if (node := self.node(item)) is not None]
        if raw.kind == "or":
            for item, node in pairs:
                if _negative(node):
                    raise InvalidInput(
                        f"NOT cannot be an operand of OR at position {_first_not(item)}: "
                        "NOT only narrows what the other terms of its group match"
                    )
            kind: type[And | Or] = Or
        else:
            kind = And
        flat = [part for _item, node in pairs for part in (node.items if isinstance(node, kind) else (node,))]
        return None if not flat else flat[0] if len(flat) == 1 else kind(tuple(flat))

    def operand(self, raw: _Raw) -> BoolQuery | None:
        found = words(raw.text)
        self.count += len(found)
        if self.count > MAX_WORDS:
            raise InvalidInput(f"the query has more than {MAX_WORDS} terms (at position {raw.pos})")
        if all(word in STOPWORDS for word in found):
            return None  # no words, or only stopwords: nothing to search for
        return Term(found[0]) if len(found) == 1 else Phrase(tuple(found))


def _negative(node: BoolQuery) -> bool:
    """Only excludes: a NOT, or an AND of nothing but NOTs."""
    return isinstance(node, Not) or (isinstance(node, And) and all(isinstance(i, Not) for i in node.items))


def _first_not(raw: _Raw) -> int:
    """The position of the first NOT in a raw node (for an error message)."""
    if raw.kind == "not":
        return raw.pos
    return next((_first_not(item) for item in raw.items if _has_not(item)), raw.pos)


def _has_not(raw: _Raw) -> bool:
    return raw.kind == "not" or any(_has_not(item) for item in raw.items)


def parse(text: str) -> BoolQuery:
    """The query tree of `text`; InvalidInput naming the problem and where it is otherwise."""
    if len(text) > MAX_CHARS:
        raise InvalidInput(f"the query is longer than {MAX_CHARS} characters")
    tokens = _tokens(text)
    if not tokens:
        raise InvalidInput("the query is empty")
    _check_parentheses(tokens)
    query = _Normaliser().node(_Parser(tokens).parse())
    if query is None:
        raise InvalidInput("the query has no words to search for (only stopwords or punctuation)")
    if _negative(query):
        raise InvalidInput(
            "the query only excludes (NOT): a pure negation cannot be ranked, add a term to match"
        )
    return query


def check(query: BoolQuery) -> None:
    """Refuse a tree `parse` would never make (one built by hand): the adapters call it first."""
    if isinstance(query, Not):
        raise InvalidInput("the query only excludes (NOT): a pure negation cannot be ranked")
    _check_node(query)


def _check_node(node: BoolQuery) -> None:
    if isinstance(node, Term):
        if words(node.word) != [node.word]:
            raise InvalidInput(f"a term must be one folded word, got {node.word[:40]!r}")
    elif isinstance(node, Phrase):
        if not node.words or any(words(word) != [word] for word in node.words):
            raise InvalidInput("a phrase must be one or more folded words")
    elif isinstance(node, Prefix):
        if words(node.stem) != [node.stem]:
            raise InvalidInput(f"a prefix must be one folded word, got {node.stem[:40]!r}")
    elif isinstance(node, Not):
        _check_node(node.item)
    elif isinstance(node, Or | And):
        if not node.items:
            raise InvalidInput("an AND or OR needs at least one operand")
        if isinstance(node, Or) and any(isinstance(item, Not) for item in node.items):
            raise InvalidInput("NOT cannot be an operand of OR")
        if isinstance(node, And) and all(isinstance(item, Not) for item in node.items):
            raise InvalidInput("a group needs a term that is not negated")
        for item in node.items:
            _check_node(item)
    else:
        raise InvalidInput(f"not a boolean query node: {type(node).__name__}")


# -- reading a query ---------------------------------------------------------------------------


def positive_terms(query: BoolQuery) -> list[str]:
    """The distinct non-stopword words of terms and phrases not under NOT, in query order."""
    seen: dict[str, None] = {}
    for found in _positives(query):
        for word in (found.word,) if isinstance(found, Term) else found.words:
            if word not in STOPWORDS:
                seen.setdefault(word)
    return list(seen)


def positive_prefixes(query: BoolQuery) -> list[str]:
    """The distinct stems of the prefixes not under NOT, in query order."""
    return list(dict.fromkeys(_prefixes(query)))


def _prefixes(node: BoolQuery) -> list[str]:
    if isinstance(node, Prefix):
        return [node.stem]
    if isinstance(node, Term | Phrase | Not):
        return []
    return [stem for item in node.items for stem in _prefixes(item)]


def _positives(node: BoolQuery) -> list[Term | Phrase]:
    if isinstance(node, Term | Phrase):
        return [node]
    if isinstance(node, Not | Prefix):
        return []
    return [found for item in node.items for found in _positives(item)]


def matches(query: BoolQuery, text: str, *more: str) -> bool:
    """Whether the text (and any more fields) satisfies the query: a term may be in any field,
    a phrase's words must be adjacent within one. Words are compared folded, without stemming."""
    fields = [words(field) for field in (text, *more)]
    return _holds(query, fields, set().union(*fields))


def _holds(node: BoolQuery, fields: list[list[str]], present: set[str]) -> bool:
    if isinstance(node, Term):
        return node.word in present
    if isinstance(node, Phrase):
        return any(_phrase_at(field, node.words) for field in fields)
    if isinstance(node, Prefix):
        return any(word.startswith(node.stem) for word in present)
    if isinstance(node, Not):
        return not _holds(node.item, fields, present)
    if isinstance(node, And):
        return all(_holds(item, fields, present) for item in node.items)
    return any(_holds(item, fields, present) for item in node.items)


def _phrase_at(tokens: Sequence[str], phrase: Sequence[str]) -> list[int]:
    """Every index where `phrase` starts in `tokens`."""
    size = len(phrase)
    first = phrase[0]
    return [
        i
        for i in range(len(tokens) - size + 1)
        if tokens[i] == first and tuple(tokens[i : i + size]) == tuple(phrase)
    ]


def matched_terms(query: BoolQuery, text: str) -> list[str]:
    """The query's positive terms found in the text, in query order."""
    present = set(words(text))
    return [term for term in positive_terms(query) if term in present]


# -- highlight ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mark:
    first: int  # token indexes, inclusive
    last: int
    key: str  # the term or phrase it shows


def highlight(query: BoolQuery, text: str, *, max_words: int = 50, min_words: int = 25) -> str:
    """One fragment of the text around its best cluster of matches, matches wrapped in <b>…</b>.

    As ts_headline without MaxFragments: the fragment holds min_words..max_words words (all of a
    shorter text), chosen to show the most distinct positive terms and phrases, then the most
    matches; a phrase is marked as a whole. Without a match it is the text's first min_words
    words. The text is not escaped (it is marked, not rendered).
    """
    if not 0 < min_words <= max_words:
        raise InvalidInput("highlight needs 0 < min_words <= max_words")
    text = unicodedata.normalize("NFC", text)
    spans = [(m.start(), m.end(), word) for m in WORD.finditer(text) for word in words(m.group())]
    if not spans:
        return text.strip()
    marks = _marks(query, [word for _s, _e, word in spans])
    first, last = _fragment(marks, len(spans), max_words, min_words)
    # a fragment that reaches an end of the text keeps what is before or after its words
    start = 0 if first == 0 else spans[first][0]
    end = len(text) if last == len(spans) - 1 else spans[last][1]
    out: list[str] = []
    cursor = start
    for mark in marks:
        if mark.first < first or mark.last > last:
            continue
        left, right = spans[mark.first][0], spans[mark.last][1]
        out += [text[cursor:left], START, text[left:right], STOP]
        cursor = right
    out.append(text[cursor:end])
    return "".join(out).strip()


def _marks(query: BoolQuery, tokens: list[str]) -> list[_Mark]:
    """Non-overlapping marks, in text order: phrases first (marked whole), then single terms."""
    taken = [False] * len(tokens)
    marks: list[_Mark] = []
    found = _positives(query)
    for phrase in (p for p in found if isinstance(p, Phrase)):
        for i in _phrase_at(tokens, phrase.words):
            span = range(i, i + len(phrase.words))
            if not any(taken[j] for j in span):
                marks.append(_Mark(i, span[-1], " ".join(phrase.words)))
                for j in span:
                    taken[j] = True
    terms = {t.word for t in found if isinstance(t, Term)}
    marks += [_Mark(i, i, word) for i, word in enumerate(tokens) if word in terms and not taken[i]]
    return sorted(marks, key=lambda mark: mark.first)


def _fragment(marks: list[_Mark], size: int, max_words: int, min_words: int) -> tuple[int, int]:
    """The token range to show: the best cluster of marks within max_words, widened to min_words.
    Marks do not overlap and each holds a word, so those ending within max_words of one are among
    the max_words after it: reading every later mark for each, a memory of 100,000 characters of
    one matching word (50,000 marks) took minutes."""
    if size <= max_words:
        return 0, size - 1
    if not marks:
        return 0, min_words - 1
    best: tuple[int, int, int, int] | None = None
    chosen = (marks[0].first, marks[0].last)
    for i, opening in enumerate(marks):
        inside = [m for m in marks[i : i + max_words] if m.last < opening.first + max_words]
        last = inside[-1].last
        score = (len({m.key for m in inside}), len(inside), -(last - opening.first), -opening.first)
        if best is None or score > best:
            best, chosen = score, (opening.first, last)
    first, last = chosen
    missing = max(0, min_words - (last - first + 1))
    first = max(0, first - missing // 2)
    last = min(size - 1, max(last, first + min_words - 1))
    first = max(0, min(first, last - min_words + 1))
    return first, last
