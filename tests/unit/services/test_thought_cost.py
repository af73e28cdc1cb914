"""ThoughtMCP's memories (services/thoughtmcp/) on input built to be slow: each costs about a pass
over its input, with what is made unchanged."""

from __future__ import annotations

import itertools
import string

import pytest

from cairn.services.thoughtmcp.checks import auto_keywords


@pytest.mark.timeout(10)
def test_keywords_of_many_distinct_words_cost_a_pass() -> None:
    """Each distinct word's first place was looked up in the list of all words: 100,000 characters
    (a memory's most) of distinct words took 1.5 s, and 400,000 (this test) about 25 s."""
    letters = (string.ascii_lowercase[:20],) * 4
    words = ["".join(w) for w in itertools.islice(itertools.product(*letters), 80_000)]
    assert auto_keywords(" ".join(words)) == words[:8]


def test_keywords_are_the_most_frequent_words_the_first_met_first_among_equals() -> None:
    text = "Zebra apple kettle. The kettle's zebra; apple Mango mango mango, zebra kettle and the end"
    assert auto_keywords(text) == ["zebra", "mango", "apple", "kettle", "kettle's", "end"]
