"""The brains' tokenizer splits at every symbol, as domain/words.py does (fts_separators.py):
SQLite's unicode61 knows only the symbols of its own, older, Unicode tables."""

from __future__ import annotations

import sqlite3
import unicodedata

from cairn.adapters.local.chunk_schema import TOKENIZER
from cairn.domain.words import words


def _symbols() -> list[str]:
    """Python's symbols (So, Sk), and the code points still unassigned in the emoji blocks."""
    return [
        chr(cp)
        for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF
        and (
            unicodedata.category(chr(cp)) in ("So", "Sk")
            or (0x1F000 <= cp <= 0x1FBFF and unicodedata.category(chr(cp)) == "Cn")
        )
    ]


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


def test_every_symbol_parts_the_letters_around_it() -> None:
    symbols = _symbols()
    found = tokens_of([f"ab{ch}cd" for ch in symbols])
    joined = [f"U+{ord(symbols[doc - 1]):04X}" for doc, terms in found.items() if terms != ["ab", "cd"]]
    assert joined == []
    assert len(symbols) > 6_000  # the whole list was looked at


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
    ]
    plain = tokens_of(texts, TOKENIZER.removeprefix("porter "))  # words are not stemmed
    assert [plain.get(i, []) for i in range(1, len(texts) + 1)] == [words(text) for text in texts]
