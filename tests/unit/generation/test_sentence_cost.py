"""Sentence splitting (extractive_text.sentences) on input built to be slow: about a pass over it.

The fact rules fold a session message (up to 1,000,000 characters) onto one line before splitting
it, so a message of abbreviations is one line of sentence ends that end no sentence."""

from __future__ import annotations

from datetime import datetime

import pytest

from cairn.adapters.local.extractive_text import MAX_SENTENCE_CHARS, sentences
from cairn.adapters.local.rule_facts import RuleFactExtractor
from cairn.ports.facts import Utterance


@pytest.mark.timeout(10)
def test_a_line_of_abbreviations_costs_a_pass() -> None:
    """Each end an abbreviation did not end copied the line from the sentence's start: 1 MB of
    `Dr. ` took 35 s, and 2 MB (this test) about 140 s."""
    line = "Dr. " * 500_000
    found = sentences(line)
    assert len(found) == len(line) // MAX_SENTENCE_CHARS
    assert all(line[s.start : s.end] == s.text for s in found)


@pytest.mark.timeout(10)
def test_a_message_of_initials_costs_a_pass_to_the_fact_rules() -> None:
    message = "J. " * 333_000  # a session message's most, 1,000,000 characters
    said = [Utterance("1", "Alice", "user", message, datetime(2024, 5, 1))]
    assert RuleFactExtractor().extract(said) == []


def test_an_abbreviation_or_an_initial_ends_no_sentence() -> None:
    text = "Dr. Smith met J. K. Rowling.  She smiled.\u00a0Then e.g. tea. Fine"
    assert [s.text for s in sentences(text)] == [
        "Dr. Smith met J. K. Rowling.",
        "She smiled.",
        "Then e.g. tea.",
        "Fine",
    ]
