"""A long text's valence is read a window of sentences at a time (valence.py): VADER never gets more
than WINDOW_WORDS words at once, whatever the text's length (it is quadratic in what it gets), a text
of up to WINDOW_WORDS words scores exactly as VADER scores it, and a longer one as VADER would score
it whole, but for what VADER reads across a window's edge."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from cairn.services.thoughtmcp.metacognition import MetacognitionService, lexicons
from cairn.services.thoughtmcp.metacognition.valence import WINDOW_WORDS, compound, windows

SHORT = [
    "I'm thrilled and so grateful the release went well!",
    "I'm not sure this is a good idea, but we could try it. Honestly I'm worried about the deadline.",
    "The migration failed AGAIN. I'm furious and exhausted. Nobody told me the schema changed!!",
    "The report is on the shared drive.",
    "Great work :) 😀 Why did it break?? Why???",
    "",
]
DAY = (
    "Yesterday the team shipped the new billing service. It was a relief after weeks of delays, and "
    "everyone was glad to see it live. However, a customer reported a bug in invoices, which was "
    "frustrating. We fixed it quickly and the customer thanked us. I feel proud of how we handled it.\n"
)
OUTAGE = "I can't stand this anymore. The outage ruined the weekend and nobody helped us at all. "


@pytest.fixture
def vader_calls() -> Iterator[list[int]]:
    """How many words each of VADER's scorings was given."""
    analyser = lexicons.vader()
    given: list[int] = []
    scores = analyser.polarity_scores

    def counting(text: str) -> Any:
        given.append(len(text.split()))
        return scores(text)

    analyser.polarity_scores = counting
    yield given
    del analyser.polarity_scores


def test_a_text_of_up_to_a_window_scores_as_vader_scores_it() -> None:
    vader = SentimentIntensityAnalyzer()
    for text in [*SHORT, DAY * 4, " ".join(["good"] * WINDOW_WORDS)]:
        assert compound(text) == vader.polarity_scores(text)["compound"], text


def test_a_longer_text_scores_as_vader_scores_it_whole_in_a_window_at_a_time(vader_calls: list[int]) -> None:
    vader = SentimentIntensityAnalyzer()
    for text in (DAY * 8, DAY * 20, OUTAGE * 30, DAY * 5 + OUTAGE * 40):
        assert len(text.split()) > WINDOW_WORDS
        assert compound(text) == pytest.approx(vader.polarity_scores(text)["compound"], abs=0.01)
    assert vader_calls and max(vader_calls) <= WINDOW_WORDS


def test_the_windows_hold_every_word_in_order_and_cut_a_long_sentence() -> None:
    text = DAY * 12 + " ".join(f"w{i}" for i in range(450)) + ". The end!"
    cut = windows(text)
    assert [w for window in cut for w in window.split()] == text.split()
    assert all(len(window.split()) <= WINDOW_WORDS for window in cut)
    assert len(cut) >= 1 + (len(text.split()) - 1) // WINDOW_WORDS


def test_detect_emotion_gives_vader_a_window_at_a_time(
    offline_service: MetacognitionService, vader_calls: list[int]
) -> None:
    long_text = (DAY + OUTAGE) * 250  # 92,750 characters, about 16,750 words
    data, _ = offline_service.detect_emotion(long_text)
    evaluated, _ = offline_service.evaluate(DAY * 60, include_emotion=True)

    assert max(vader_calls) <= WINDOW_WORDS and len(vader_calls) >= len(long_text.split()) // WINDOW_WORDS
    assert -1 <= data["circumplex"]["valence"] <= 1 and data["discrete"]["primary"] is not None
    assert evaluated["emotion"]["valence"] > 0.9  # a glad and proud day, sixty times over
