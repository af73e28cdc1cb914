"""Search words: split and folded as FTS5's unicode61 tokenizer splits and folds them, in every script."""

from __future__ import annotations

import sqlite3

import pytest

from cairn.domain.words import fold, query_terms, words


def unicode61_words(text: str) -> list[str]:
    """The words the embedded index's tokenizer makes of `text` (without its porter stemmer)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.execute("INSERT INTO t(rowid, text) VALUES (1, ?)", (text,))
    return [term for (term,) in db.execute("SELECT term FROM v ORDER BY offset")]


@pytest.mark.parametrize(
    "text",
    [
        "Plain ASCII, Mixed CASE 42",
        "Café CRÈME brûlée à São Paulo",
        "Ångström Øresund Łódź naïve İstanbul",
        "e\u0301tude written apart, q\u0301x",  # accents after their letter
        "서울은 한국의 수도이다",  # Hangul syllables, not their jamo
        "Το σπίτι είναι μεγάλο",  # Greek keeps its accents
        "ёлка в лесу",  # ё is not е
        "がっこう に いく",  # が is not か
        "हिन्दी भाषा",  # unicode61 splits at Devanagari's vowel signs
        "ﬁle ＡＢＣ ²",  # no compatibility forms folded
        "",
    ],
)
def test_words_are_the_words_the_embedded_index_makes(text: str) -> None:
    """A query's words are the index's words, so an exact word of any script is found (folding
    every script's marks after a compatibility decomposition made 서울은 its jamo, が か, ё е)."""
    assert words(text) == unicode61_words(text)


def test_latin_letters_fold_as_the_index_folds_them() -> None:
    latin = [chr(cp) for cp in range(0xC0, 0x17F) if chr(cp).isalpha()]
    assert [fold(f"a{ch}b") for ch in latin] == ["".join(unicode61_words(f"a{ch}b")) for ch in latin]


def test_words_split_folded_runs_of_letters_and_digits() -> None:
    assert words("Crème-brûlée at 9:30, São Paulo_office") == [
        "creme",
        "brulee",
        "at",
        "9",
        "30",
        "sao",
        "paulo",
        "office",
    ]


def test_query_terms_drop_stopwords_and_repeats_in_first_seen_order() -> None:
    assert query_terms("Where is the Café? The café is in Lyon") == ["cafe", "lyon"]
