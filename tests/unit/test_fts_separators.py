"""The brains' tokenizer splits at every character that is neither letter nor digit (symbols,
punctuation, marks, format characters), as domain/words.py does (fts_separators.py): SQLite's
unicode61 knows only the characters of its own, older, Unicode tables."""

from __future__ import annotations

import sqlite3
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.adapters.local.chunk_schema import TOKENIZER
from cairn.domain.words import words


def _non_words() -> list[str]:
    """Every code point Python's tables call neither letter nor digit, and the code points still
    unassigned in the emoji blocks; not private use, nor unassigned elsewhere (fts_separators.py)."""
    found = []
    for cp in range(0x110000):
        category = unicodedata.category(chr(cp))
        if (
            category[0] in "LN"
            or category in ("Cs", "Co")
            or (category == "Cn" and not 0x1F000 <= cp <= 0x1FBFF)
        ):
            continue
        found.append(chr(cp))
    return found


def tokens_of(texts: list[str], tokenizer: str = TOKENIZER) -> dict[int, list[str]]:
    """Row number (from 1) -> its tokens, in order, as an FTS5 table of `tokenizer` makes them."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, content='', tokenize='{tokenizer}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(texts, start=1)))
    found: dict[int, list[str]] = {}
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        found.setdefault(doc, []).append(term)
    return found


def test_every_character_but_a_letter_or_digit_parts_the_letters_around_it() -> None:
    others = _non_words()
    texts = [f"ab{ch}cd" for ch in others]
    found = tokens_of(texts, TOKENIZER.removeprefix("porter "))
    # the diacritics both fold away join the letters, as "abcd"; every other character parts them
    joined = [f"U+{ord(others[n]):04X}" for n, text in enumerate(texts) if found.get(n + 1) != words(text)]
    assert joined == []
    assert len(others) > 11_000  # the whole list was looked at
    assert {unicodedata.category(ch) for ch in others} >= {"Sc", "Po", "Pd", "Cf", "Mn", "So"}


def test_the_index_and_the_search_words_split_a_text_alike() -> None:
    texts = [
        "thanks🤗 a lot",
        "🤗thanks",
        "kudos🙌team",
        "done✅",
        "Zentrix™",
        "4 °C",
        "naïve café",
        "東京タワー🗼",
        "5000₽ or 0.1₿",
        "hello \u2068Dana\u2069 there",
    ]
    plain = tokens_of(texts, TOKENIZER.removeprefix("porter "))  # words are not stemmed
    assert [plain.get(i, []) for i in range(1, len(texts) + 1)] == [words(text) for text in texts]


_MIXED = st.sampled_from(
    [
        *"abcxyzAZ019",
        *"éüñçøß",  # Latin letters the indexes fold or keep
        *"ωдж東タ한",
        "e\u0301",  # a letter and its acute written apart
        *"🤗🧠🦀✅❤🏽🇫🇷",
        "\u200d",  # zero width joiner
        "\ufe0f",  # variation selector 16
        "\u20e3",  # combining enclosing keycap
        "\U000e0067",  # a tag character (subdivision flags)
        *"₽₿€$™°©±→",
        *"\u2066\u2068\u2069\u200b",  # bidi isolates, zero width space
        *" .,-_'\"*^:()[]{}⹝⹀",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_MIXED, max_size=40).map("".join))
def test_random_text_is_split_into_the_same_words_by_the_index_and_the_search_words(text: str) -> None:
    assert tokens_of([text], TOKENIZER.removeprefix("porter ")).get(1, []) == words(text)
