"""A hit's highlights: the sentences of its chunk that hold the query's words."""

from __future__ import annotations

from cairn.services.search.highlights import MAX_CHARS, highlights

TEXT = (
    "Green tea is best steeped at 80 degrees. Black tea wants boiling water.\n"
    "Coffee is another story entirely. The kettle has a tea setting. Tea, green tea, is calming."
)


def test_the_sentences_holding_most_query_words_in_text_order() -> None:
    assert highlights("green tea", TEXT) == [
        "Green tea is best steeped at 80 degrees.",
        "Black tea wants boiling water.",
        "Tea, green tea, is calming.",
    ]
    assert highlights("KETTLE", TEXT) == ["The kettle has a tea setting."]  # folded, one word


def test_no_highlight_for_stopwords_or_a_match_by_meaning_alone() -> None:
    assert highlights("the a is", TEXT) == []
    assert highlights("espresso", TEXT) == []


def test_a_long_sentence_is_clipped() -> None:
    long = "tea " * 200
    (only,) = highlights("tea", long)
    assert len(only) == MAX_CHARS and only.endswith("…")
