"""Sentence splitting, terms and the [n]-marker citation tracker."""

from __future__ import annotations

import pytest

from cairn.adapters.local.extractive_markers import MarkerCitations
from cairn.adapters.local.extractive_text import best_sentence, sentences, stem, terms
from cairn.ports.generator import Passage


def test_sentences_are_verbatim_slices_with_their_offsets() -> None:
    text = "---\ntitle: x\n---\n# Notes\n\n- Dr. Smith met J. K. Rowling at 3.30 pm. It was fun!\n"
    text += "2. Next: buy milk"
    found = sentences(text)
    assert [s.text for s in found] == [
        "Dr. Smith met J. K. Rowling at 3.30 pm.",
        "It was fun!",
        "Next: buy milk",
    ]
    assert all(text[s.start : s.end] == s.text for s in found)


def test_overlong_sentences_are_cut_at_word_boundaries() -> None:
    text = "word " * 300
    found = sentences(text)
    assert len(found) > 1 and all(len(s.text) <= 400 for s in found)
    assert all(text[s.start : s.end] == s.text for s in found)


@pytest.mark.parametrize(
    "words",
    [("paint", "painted", "painting", "paints"), ("race", "racing", "raced"), ("family", "families")],
)
def test_stemming_meets_inflections(words: tuple[str, ...]) -> None:
    assert len({stem(w) for w in words}) == 1


def test_terms_drop_stopwords() -> None:
    assert terms("When did Caroline go to the LGBTQ support group?") == [
        "carolin",
        "lgbtq",
        "support",
        "group",
    ]


def test_best_sentence_falls_back_to_the_start_of_the_passage() -> None:
    text = "Alpha beta. Gamma delta about the boat."
    assert best_sentence("the boat", text) == "Gamma delta about the boat."
    assert best_sentence("nothing shared", "x" * 300) == "x" * 200


PASSAGES = [Passage("c1", "d1", "One. Two."), Passage("c2", "d2", "Three.")]


def spans(tracker: MarkerCitations, *pieces: str) -> list[tuple[str, str]]:
    out = [c for piece in pieces for c in tracker.feed(piece)] + tracker.finish()
    return [(c.chunk_id, tracker.answer[c.answer_start : c.answer_end]) for c in out]


def test_markers_after_the_full_stop_belong_to_the_sentence_before() -> None:
    tracker = MarkerCitations(PASSAGES)
    assert spans(tracker, "First.[1] Second. [2]\nThird [1, 2].") == [
        ("c1", "First.[1]"),
        ("c2", "Second. [2]"),
        ("c1", "Third [1, 2]."),
        ("c2", "Third [1, 2]."),
    ]


def test_decimal_points_and_half_markers_do_not_end_a_sentence_early() -> None:
    tracker = MarkerCitations(PASSAGES)
    assert tracker.feed("It cost 3.") == []
    assert tracker.feed("5 euros [") == []
    assert tracker.feed("2") == []
    [citation] = tracker.feed("]. Then")
    assert tracker.answer[citation.answer_start : citation.answer_end] == "It cost 3.5 euros [2]."


def test_out_of_range_and_unmarked_sentences_cite_nothing() -> None:
    tracker = MarkerCitations(PASSAGES)
    assert spans(tracker, "Nothing here. Bad [0] and [3]. Last words [passage 2]") == [
        ("c2", "Last words [passage 2]")
    ]
