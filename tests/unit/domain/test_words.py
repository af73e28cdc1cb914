"""Search words: folded as FTS5's unicode61 tokenizer folds them, ASCII or not."""

from __future__ import annotations

import unicodedata

import pytest

from cairn.domain.words import fold, query_terms, words


def slow_fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@pytest.mark.parametrize(
    "text",
    [
        "Plain ASCII, Mixed CASE 42",
        "Café CRÈME brûlée à São Paulo",
        "Ångström Øresund Łódź naïve",
        "\u212a is the Kelvin sign; ﬁ is a ligature",
        "İstanbul ΣΊΣΥΦΟΣ",
        "",
    ],
)
def test_fold_lowercases_and_strips_diacritics_the_same_on_every_path(text: str) -> None:
    assert fold(text) == slow_fold(text)


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
